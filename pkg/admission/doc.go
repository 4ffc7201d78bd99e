// Package admission decides, as the kubelet's admit handlers do, whether a new pod may run on the node next to the pods already admitted: the predicate handler (OS, resources fit with pod-level resources, node affinity, node name, host ports, NoExecute taints), the sysctl allowlist and the pod features checks.
package admission

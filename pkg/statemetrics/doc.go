// Package statemetrics exposes the node's and its pods' state under kube-state-metrics' names (kube_node_status_condition, kube_pod_container_status_*), so cluster alerts work on a standalone node.
package statemetrics

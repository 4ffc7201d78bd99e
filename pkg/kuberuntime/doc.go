// Package kuberuntime turns a pod spec into CRI calls, as the kubelet's kuberuntime manager does: it computes the pod's actions against the runtime status and runs them (SyncPod), kills pods (KillPod), pulls images with back-off and collects dead containers.
package kuberuntime

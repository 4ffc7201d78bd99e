package kubelet

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
)

// onPodSandboxReady is the kuberuntime manager's callback once a pod's new sandbox is ready
// (v1.37's OnPodSandboxReady, kubelet.go; kubernetes#134460): the pod's stored status gets
// PodReadyToStartContainers True now, while its images may still be pulling, instead of at
// the sync after the containers started. Upstream sets it from a goroutine; here the sync's
// own task sets it, before the pull it would race with.
func (k *Kubelet) onPodSandboxReady(ctx context.Context, pod *v1.Pod) {
	if !k.gate.Enabled(features.PodReadyToStartContainersCondition) {
		return
	}
	klog.FromContext(ctx).V(3).Info("OnPodSandboxReady callback invoked", "pod", klog.KObj(pod), "podUID", pod.UID)
	status, ok := k.status.GetPodStatus(pod.UID)
	if !ok {
		status = *pod.Status.DeepCopy()
	}
	ready := v1.PodCondition{
		Type:               v1.PodReadyToStartContainers,
		Status:             v1.ConditionTrue,
		ObservedGeneration: podstatus.ConditionObservedGeneration(&status, pod.Generation, v1.PodReadyToStartContainers, k.gate.Enabled(features.PodObservedGenerationTracking)),
	}
	replaced := false
	for i := range status.Conditions {
		if status.Conditions[i].Type == ready.Type {
			status.Conditions[i], replaced = ready, true
			break
		}
	}
	if !replaced {
		status.Conditions = append(status.Conditions, ready)
	}
	k.status.SetPodStatus(pod, status)
}

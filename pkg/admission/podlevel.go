package admission

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// PodLevelResources rejection (upstream's pod features admit handler, on Linux).
const (
	ReasonPodLevelResources  = "PodLevelResourcesNotSupported"
	MessagePodLevelResources = "PodLevelResources feature gate is disabled"
)

// isSupportedPodLevelResource: pod-level resources may only name cpu, memory and hugepages
// (component-helpers IsSupportedPodLevelResource); other names there are ignored.
func isSupportedPodLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// isPodLevelRequestsSet: spec.resources.requests names a supported resource, so they
// replace the containers' sum for those resources (component-helpers IsPodLevelRequestsSet).
func isPodLevelRequestsSet(pod *v1.Pod) bool {
	if pod.Spec.Resources == nil {
		return false
	}
	for name := range pod.Spec.Resources.Requests {
		if isSupportedPodLevelResource(name) {
			return true
		}
	}
	return false
}

// isPodLevelResourcesSet: spec.resources sets a supported resource as a request or a limit
// (component-helpers IsPodLevelResourcesSet).
func isPodLevelResourcesSet(pod *v1.Pod) bool {
	if isPodLevelRequestsSet(pod) {
		return true
	}
	if pod.Spec.Resources == nil {
		return false
	}
	for name := range pod.Spec.Resources.Limits {
		if isSupportedPodLevelResource(name) {
			return true
		}
	}
	return false
}

// AdmitPodLevelResources rejects a pod that sets pod-level resources on a node whose
// PodLevelResources gate is off (upstream's pod features admit handler): such a node would
// size the pod's cgroup from its containers alone. The gate is beta and on in v1.37.
func AdmitPodLevelResources(pod *v1.Pod, gateEnabled bool) Result {
	if !gateEnabled && isPodLevelResourcesSet(pod) {
		return Result{Reason: ReasonPodLevelResources, Message: MessagePodLevelResources}
	}
	return Result{Admit: true}
}

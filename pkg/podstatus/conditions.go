package podstatus

import v1 "k8s.io/api/core/v1"

// ConditionObservedGeneration is the observedGeneration of a condition the kubelet writes
// outside the status generator (DisruptionTarget, from the shutdown and eviction managers),
// as upstream's podutil.CalculatePodConditionObservedGeneration: the pod's generation with
// PodObservedGenerationTracking on (tracking), or when status already has a condition of
// type t that carries one, since the API server keeps a value an update tries to clear and
// the kubelet would otherwise fight it after the gate is turned off; else 0.
func ConditionObservedGeneration(status *v1.PodStatus, generation int64, t v1.PodConditionType, tracking bool) int64 {
	if status == nil {
		return 0
	}
	if tracking {
		return generation
	}
	for _, c := range status.Conditions {
		if c.Type == t && c.ObservedGeneration != 0 {
			return generation
		}
	}
	return 0
}

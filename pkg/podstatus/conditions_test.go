package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestConditionObservedGeneration(t *testing.T) {
	tests := []struct {
		name     string
		status   *v1.PodStatus
		tracking bool
		want     int64
	}{
		{"no status", nil, true, 0},
		{"tracking on", &v1.PodStatus{}, true, 3},
		{"tracking off, no condition", &v1.PodStatus{}, false, 0},
		{"tracking off, condition without one", &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget}}}, false, 0},
		{"tracking off, condition with one keeps tracking", &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, ObservedGeneration: 1}}}, false, 3},
		{"tracking off, another type's does not count", &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, ObservedGeneration: 1}}}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ConditionObservedGeneration(tt.status, 3, v1.DisruptionTarget, tt.tracking); got != tt.want {
				t.Errorf("ConditionObservedGeneration = %d, want %d", got, tt.want)
			}
		})
	}
}

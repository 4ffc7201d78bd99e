package kuberuntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// TestResourceConfigForPod follows upstream's cm.ResourceConfigForPod: shares from the
// requests; quota and memory from the limits, only when every container (or the pod level)
// declares them or the pod is Guaranteed; BestEffort gets the minimum shares.
func TestResourceConfigForPod(t *testing.T) {
	tests := []struct {
		name              string
		containers        []v1.ResourceRequirements
		podLevel          *v1.ResourceRequirements
		wantShares        uint64
		wantQuota, wantMB int64 // -2: not set
	}{
		{"Guaranteed", []v1.ResourceRequirements{{Requests: list("cpu", "200m", "memory", "64Mi"), Limits: list("cpu", "200m", "memory", "64Mi")}},
			nil, 204, 20000, 64},
		{"Burstable, one container without limits", []v1.ResourceRequirements{
			{Requests: list("cpu", "100m"), Limits: list("cpu", "300m", "memory", "64Mi")}, {Requests: list("cpu", "100m")}},
			nil, 204, -2, -2},
		{"Burstable, every container limited", []v1.ResourceRequirements{
			{Requests: list("cpu", "100m"), Limits: list("cpu", "300m", "memory", "64Mi")}, {Limits: list("cpu", "100m", "memory", "32Mi")}},
			nil, 102, 40000, 96}, // b has no request (the API server would default it to the limit)
		{"BestEffort", []v1.ResourceRequirements{{}}, nil, 2, -2, -2},
		{"pod-level limits bound containers without theirs", []v1.ResourceRequirements{{}},
			&v1.ResourceRequirements{Requests: list("cpu", "500m", "memory", "128Mi"), Limits: list("cpu", "1", "memory", "256Mi")}, 512, 100000, 256},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{}
			for i, r := range tc.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: string(rune('a' + i)), Resources: r})
			}
			pod.Spec.Resources = tc.podLevel
			c := ResourceConfigForPod(pod)
			if c.CPUShares == nil || *c.CPUShares != tc.wantShares {
				t.Errorf("shares = %v, want %d", c.CPUShares, tc.wantShares)
			}
			gotQuota, gotMB := int64(-2), int64(-2)
			if c.CPUQuota != nil {
				gotQuota = *c.CPUQuota
			}
			if c.Memory != nil {
				gotMB = *c.Memory >> 20
			}
			if gotQuota != tc.wantQuota || gotMB != tc.wantMB {
				t.Errorf("quota, memory MiB = %d, %d; want %d, %d", gotQuota, gotMB, tc.wantQuota, tc.wantMB)
			}
		})
	}
}

// TestEffectiveLimits: a container's own limit wins; the pod's fills the ones it lacks.
func TestEffectiveLimits(t *testing.T) {
	podLevel := &v1.ResourceRequirements{Limits: list("cpu", "1", "memory", "1Gi")}
	tests := []struct {
		name string
		own  v1.ResourceList
		pod  *v1.ResourceRequirements
		want v1.ResourceList
	}{
		{"none of its own", nil, podLevel, list("cpu", "1", "memory", "1Gi")},
		{"its own CPU", list("cpu", "200m"), podLevel, list("cpu", "200m", "memory", "1Gi")},
		{"no pod level", list("cpu", "200m"), nil, list("cpu", "200m")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EffectiveLimits(tc.pod, &v1.ResourceRequirements{Limits: tc.own})
			if len(got) != len(tc.want) {
				t.Fatalf("limits = %v, want %v", got, tc.want)
			}
			for k, q := range tc.want {
				if g := got[k]; !g.Equal(q) {
					t.Errorf("%s = %v, want %v", k, g.String(), q.String())
				}
			}
		})
	}
}

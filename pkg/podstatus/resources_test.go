package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/pkg/container"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

// TestContainerStatusResources follows upstream's convertContainerStatusResources: a
// running container shows what its runtime reports applied, a stopped one its allocation;
// below the cgroup floors (2 shares, a 10m quota) the allocation stands; a report without a
// value keeps the last status's for the same running instance.
func TestContainerStatusResources(t *testing.T) {
	alloc := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("5m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	running := &container.ContainerStatus{State: container.ContainerStateRunning}
	old := &v1.ContainerStatus{ContainerID: "fake://a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		Resources: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}}}
	tests := []struct {
		name                  string
		cs                    *container.ContainerStatus
		old                   *v1.ContainerStatus
		wantCPUReq, wantCPULm string
		wantMem               string
	}{
		{"stopped: its allocation", &container.ContainerStatus{State: container.ContainerStateExited,
			Resources: &container.ContainerResources{MemoryLimit: q("1Gi")}}, nil, "1m", "5m", "64Mi"},
		{"applied values", &container.ContainerStatus{State: container.ContainerStateRunning,
			Resources: &container.ContainerResources{CPURequest: q("300m"), CPULimit: q("400m"), MemoryLimit: q("128Mi")}}, nil, "300m", "400m", "128Mi"},
		{"at the floors: the allocation", &container.ContainerStatus{State: container.ContainerStateRunning,
			Resources: &container.ContainerResources{CPURequest: q("2m"), CPULimit: q("10m"), MemoryLimit: q("64Mi")}}, nil, "1m", "5m", "64Mi"},
		{"nothing reported: the old status's", running, old, "1m", "5m", "32Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1.Container{Name: "c", Resources: alloc}
			got := containerStatusResources(spec, &v1.ContainerStatus{ContainerID: "fake://a"}, tc.cs, tc.old)
			for _, c := range []struct {
				name      string
				got, want resource.Quantity
			}{
				{"cpu request", got.Requests[v1.ResourceCPU], resource.MustParse(tc.wantCPUReq)},
				{"cpu limit", got.Limits[v1.ResourceCPU], resource.MustParse(tc.wantCPULm)},
				{"memory limit", got.Limits[v1.ResourceMemory], resource.MustParse(tc.wantMem)},
			} {
				if !c.got.Equal(c.want) {
					t.Errorf("%s = %s, want %s", c.name, c.got.String(), c.want.String())
				}
			}
			if !alloc.Limits.Memory().Equal(resource.MustParse("64Mi")) {
				t.Error("the allocation was changed")
			}
		})
	}
}

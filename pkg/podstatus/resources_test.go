package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

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
			Resources: &cri.ContainerResources{MemoryLimitInBytes: 1 << 30}}, nil, "1m", "5m", "64Mi"},
		{"applied values", &container.ContainerStatus{State: container.ContainerStateRunning,
			Resources: &cri.ContainerResources{CPUShares: 307, CPUQuota: 40000, CPUPeriod: 100000, MemoryLimitInBytes: 128 << 20}}, nil, "300m", "400m", "128Mi"},
		{"at the floors: the allocation", &container.ContainerStatus{State: container.ContainerStateRunning,
			Resources: &cri.ContainerResources{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000, MemoryLimitInBytes: 64 << 20}}, nil, "1m", "5m", "64Mi"},
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

// TestCopyStatus: the stored copy shares the resource lists (read-only) and copies the rest;
// the status given is left as it was.
func TestCopyStatus(t *testing.T) {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	s := v1.PodStatus{
		Phase:              v1.PodRunning,
		AllocatedResources: req,
		Resources:          &v1.ResourceRequirements{Requests: req},
		ContainerStatuses: []v1.ContainerStatus{{Name: "c", AllocatedResources: req, Resources: &v1.ResourceRequirements{Limits: req},
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
	}
	c := copyStatus(&s)
	if c.Resources != s.Resources || c.ContainerStatuses[0].Resources != s.ContainerStatuses[0].Resources {
		t.Error("the resources were copied, want them shared")
	}
	if s.Resources == nil || s.ContainerStatuses[0].AllocatedResources == nil || s.AllocatedResources == nil {
		t.Error("the given status lost its resources")
	}
	if &c.ContainerStatuses[0] == &s.ContainerStatuses[0] || c.ContainerStatuses[0].State.Running == s.ContainerStatuses[0].State.Running {
		t.Error("the container statuses are shared, want them copied")
	}
}

// TestListEdit: an edited list is its base while nothing differs, the last status's list
// when that holds the same values, and a new list otherwise.
func TestListEdit(t *testing.T) {
	q := resource.MustParse
	base := v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi")}
	tests := []struct {
		name   string
		set    v1.ResourceList
		old    v1.ResourceList
		want   v1.ResourceList
		isBase bool
		isOld  bool
	}{
		{name: "nothing set", old: v1.ResourceList{v1.ResourceCPU: q("1")}, want: base, isBase: true},
		{name: "set to what base holds", set: v1.ResourceList{v1.ResourceCPU: q("0.1")}, want: base, isBase: true},
		{name: "set, old holds it", set: v1.ResourceList{v1.ResourceCPU: q("200m")},
			old: v1.ResourceList{v1.ResourceCPU: q("0.2"), v1.ResourceMemory: q("64Mi")}, want: v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi")}, isOld: true},
		{name: "set, old has one more", set: v1.ResourceList{v1.ResourceCPU: q("200m")},
			old: v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi"), v1.ResourceEphemeralStorage: q("1Gi")}, want: v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi")}},
		{name: "set, old differs", set: v1.ResourceList{v1.ResourceMemory: q("128Mi")},
			old: base, want: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("128Mi")}},
		{name: "a new name", set: v1.ResourceList{v1.ResourceEphemeralStorage: q("1Gi")},
			want: v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("64Mi"), v1.ResourceEphemeralStorage: q("1Gi")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := listEdit{base: base}
			for name, v := range tt.set {
				e.set(name, v)
			}
			got := e.list(tt.old)
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("list = %v, want %v", got, tt.want)
			}
			if sameMap(got, base) != tt.isBase || (tt.old != nil && sameMap(got, tt.old) != tt.isOld) {
				t.Errorf("list is base: %v (want %v), is old: %v (want %v)", sameMap(got, base), tt.isBase, sameMap(got, tt.old), tt.isOld)
			}
		})
	}
}

package allocation

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func cpu(q string) v1.ResourceRequirements {
	return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}}
}

func pod(c1, init string, podLevel *v1.ResourceRequirements) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Generation: 1}}
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: cpu(init)}}
	p.Spec.Containers = []v1.Container{{Name: "c1", Resources: cpu(c1)}}
	p.Spec.Resources = podLevel
	return p
}

// TestPodFromAllocation: the pod runs with what was allocated, a copy only when that
// differs from its spec, init containers and pod-level resources included.
func TestPodFromAllocation(t *testing.T) {
	m := New(clocktesting.NewFakeClock(time.Unix(0, 0)))
	admitted := pod("100m", "50m", nil)
	m.Allocate(admitted)
	lvl := cpu("1")
	tests := []struct {
		name        string
		pod         *v1.Pod
		wantDiffers bool
	}{
		{"the admitted spec", pod("100m", "50m", nil), false},
		{"the same quantity written otherwise", pod("0.1", "50m", nil), false},
		{"an app container resized", pod("200m", "50m", nil), true},
		{"an init container resized", pod("100m", "60m", nil), true},
		{"pod-level resources added", pod("100m", "50m", &lvl), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, differs := m.PodFromAllocation(tc.pod)
			if differs != tc.wantDiffers {
				t.Fatalf("differs = %v, want %v", differs, tc.wantDiffers)
			}
			if !differs && got != tc.pod {
				t.Error("an unchanged pod was copied")
			}
			if differs {
				if got == tc.pod || got.Spec.Resources != nil || !got.Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("100m")) ||
					!got.Spec.InitContainers[0].Resources.Requests.Cpu().Equal(resource.MustParse("50m")) {
					t.Errorf("pod from allocation = %+v, want the admitted resources in a copy", got.Spec)
				}
				if tc.pod.Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("100m")) && tc.pod.Spec.Resources == nil &&
					tc.pod.Spec.InitContainers[0].Resources.Requests.Cpu().Equal(resource.MustParse("50m")) {
					t.Error("the spec itself was changed")
				}
			}
		})
	}
	if _, differs := New(clocktesting.NewFakeClock(time.Unix(0, 0))).PodFromAllocation(pod("1", "1", nil)); differs {
		t.Error("a pod without an allocation differs from it")
	}
}

// TestResizeConditions follows upstream's status manager: Pending is Deferred unless
// Infeasible and reports a change only on a new reason or generation; InProgress keeps
// its generation, turns Error with a message, and its clearing says which generation
// completed.
func TestResizeConditions(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(100, 0))
	m := New(clk)
	steps := []struct {
		name    string
		do      func() bool
		want    bool
		wantLen int
	}{
		{"pending, deferred", func() bool { return m.SetPending("u1", "Insufficient", "no room", 2) }, true, 1},
		{"the same again", func() bool { return m.SetPending("u1", "Insufficient", "no room", 2) }, false, 1},
		{"infeasible", func() bool { return m.SetPending("u1", v1.PodReasonInfeasible, "never", 2) }, true, 1},
		{"in progress", func() bool { _, ch := m.SetInProgress("u1", "", "", 3); return ch }, true, 2},
		{"in progress again", func() bool { _, ch := m.SetInProgress("u1", "", "", 4); return ch }, false, 2},
		{"an error", func() bool { _, ch := m.SetInProgress("u1", v1.PodReasonError, "boom", 5); return ch }, true, 2},
		{"pending cleared", func() bool { m.ClearPending("u1"); return true }, true, 1},
	}
	for _, s := range steps {
		clk.Step(time.Second)
		if got := s.do(); got != s.want {
			t.Errorf("%s: changed = %v, want %v", s.name, got, s.want)
		}
		if n := len(m.Conditions("u1")); n != s.wantLen {
			t.Errorf("%s: %d conditions, want %d", s.name, n, s.wantLen)
		}
	}
	c := m.Conditions("u1")[0]
	if c.Type != v1.PodResizeInProgress || c.Reason != v1.PodReasonError || c.Message != "boom" || c.ObservedGeneration != 3 {
		t.Errorf("in progress = %+v, want Error boom at generation 3 (the resize's)", c)
	}
	if gen, ok := m.ClearInProgress("u1"); !ok || gen != 3 {
		t.Errorf("ClearInProgress = %d, %v; want 3, true", gen, ok)
	}
	if _, ok := m.ClearInProgress("u1"); ok {
		t.Error("a second ClearInProgress found one")
	}
}

// TestActuated: what is set on the cgroups is kept per container and for the pod, and
// forgotten with the pod.
func TestActuated(t *testing.T) {
	m := New(clocktesting.NewFakeClock(time.Unix(0, 0)))
	p := pod("100m", "50m", nil)
	m.Allocate(p)
	if _, ok := m.Actuated("u1", "c1"); ok {
		t.Error("Actuated(c1) before any was set")
	}
	m.SetActuated("u1", "c1", p.Spec.Containers[0].Resources)
	m.SetActuated("u1", "init", p.Spec.InitContainers[0].Resources)
	if r, ok := m.Actuated("u1", "c1"); !ok || !r.Requests.Cpu().Equal(resource.MustParse("100m")) {
		t.Errorf("Actuated(c1) = %v, %v", r, ok)
	}
	m.SetActuated("u1", "c1", cpu("300m"))
	lvl := cpu("2")
	m.SetActuatedPod("u1", &lvl)
	if r, _ := m.Actuated("u1", "c1"); !r.Requests.Cpu().Equal(resource.MustParse("300m")) {
		t.Errorf("after a second SetActuated, c1 = %v, want 300m", r)
	}
	if r, _ := m.Actuated("u1", "init"); !r.Requests.Cpu().Equal(resource.MustParse("50m")) {
		t.Errorf("init = %v, want 50m kept", r)
	}
	if r, ok := m.Allocated("u1", "init"); !ok || !r.Requests.Cpu().Equal(resource.MustParse("50m")) {
		t.Errorf("Allocated(init) = %v, %v", r, ok)
	}
	if r := m.ActuatedPod("u1"); r == nil || !r.Requests.Cpu().Equal(resource.MustParse("2")) {
		t.Errorf("ActuatedPod = %v", r)
	}
	m.Remove("u1")
	if _, ok := m.Actuated("u1", "c1"); ok || m.Has("u1") || len(m.Pods()) != 0 {
		t.Error("Remove left the pod's records")
	}
}

// TestActuatedAsAllocated: containers actuated as their allocation asks are recorded as
// such, not copied, yet each reads back what was set on it through a resize: the new
// allocation's lists for the container actuated since, the old one's for the other, and a
// value of its own for one set to neither.
func TestActuatedAsAllocated(t *testing.T) {
	m := New(clocktesting.NewFakeClock(time.Unix(0, 0)))
	old := pod("100m", "50m", nil)
	m.Allocate(old)
	m.SetActuated("u1", "init", old.Spec.InitContainers[0].Resources)
	m.SetActuated("u1", "c1", old.Spec.Containers[0].Resources)
	if a, ok := m.actuated["u1"]; ok || m.allocated["u1"].same != 0b11 {
		t.Fatalf("actuated as allocated: a record of its own %v, bits %b; want none, both bits", a, m.allocated["u1"].same)
	}
	resized := pod("200m", "50m", nil)
	m.Allocate(resized)
	m.SetActuated("u1", "c1", resized.Spec.Containers[0].Resources)
	own := cpu("75m")
	tests := []struct {
		name string
		set  func()
		want map[string]string
	}{
		{"resized", func() {}, map[string]string{"c1": "200m", "init": "50m"}},
		{"one set to a value of its own", func() { m.SetActuated("u1", "init", own) }, map[string]string{"c1": "200m", "init": "75m"}},
		{"back to its allocation", func() { m.SetActuated("u1", "init", resized.Spec.InitContainers[0].Resources) }, map[string]string{"c1": "200m", "init": "50m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set()
			for name, want := range tt.want {
				if r, ok := m.Actuated("u1", name); !ok || !r.Requests.Cpu().Equal(resource.MustParse(want)) {
					t.Errorf("Actuated(%s) = %v, %t; want %s", name, r.Requests.Cpu(), ok, want)
				}
			}
		})
	}
}

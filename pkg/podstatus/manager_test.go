package podstatus

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
)

func newManager(t *testing.T) (*Manager, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(t0)
	m, err := NewManager(ManagerConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return m, clk
}

func withReady(s v1.ConditionStatus) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: s}, {Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}}
}

func TestManagerTransitionTimesMoveOnlyOnFlips(t *testing.T) {
	m, clk := newManager(t)
	p := pod()
	steps := []struct {
		ready    v1.ConditionStatus
		wantLTT  time.Duration // since t0; step i happens at t0 + i*10s
		schedLTT time.Duration
	}{
		{v1.ConditionFalse, 0, 0},
		{v1.ConditionFalse, 0, 0},               // unchanged: keeps its time
		{v1.ConditionTrue, 20 * time.Second, 0}, // flips at t0+20s
		{v1.ConditionTrue, 20 * time.Second, 0},
		{v1.ConditionFalse, 40 * time.Second, 0},
	}
	for i, s := range steps {
		m.SetPodStatus(p, withReady(s.ready))
		got, ok := m.GetPodStatus(p.UID)
		if !ok {
			t.Fatal("status not stored")
		}
		if ltt := cond(got, v1.PodReady).LastTransitionTime.Time; !ltt.Equal(t0.Add(s.wantLTT)) {
			t.Errorf("step %d: Ready lastTransitionTime = %v, want t0+%v", i, ltt.Sub(t0), s.wantLTT)
		}
		if ltt := cond(got, v1.PodScheduled).LastTransitionTime.Time; !ltt.Equal(t0.Add(s.schedLTT)) {
			t.Errorf("step %d: PodScheduled lastTransitionTime moved to %v", i, ltt.Sub(t0))
		}
		if got.StartTime == nil || !got.StartTime.Time.Equal(t0) {
			t.Errorf("step %d: startTime = %v, want set once at t0", i, got.StartTime)
		}
		clk.Step(10 * time.Second)
	}
}

func TestManagerTerminalPhaseIsSticky(t *testing.T) {
	tests := []struct {
		name  string
		first v1.PodPhase
		then  v1.PodPhase
		want  v1.PodPhase
	}{
		{"failed stays failed", v1.PodFailed, v1.PodRunning, v1.PodFailed},
		{"succeeded stays succeeded", v1.PodSucceeded, v1.PodPending, v1.PodSucceeded},
		{"running may fail", v1.PodRunning, v1.PodFailed, v1.PodFailed},
		{"pending may run", v1.PodPending, v1.PodRunning, v1.PodRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newManager(t)
			p := pod()
			m.SetPodStatus(p, v1.PodStatus{Phase: tc.first, Reason: "First"})
			m.SetPodStatus(p, v1.PodStatus{Phase: tc.then})
			got, _ := m.GetPodStatus(p.UID)
			if got.Phase != tc.want {
				t.Fatalf("phase = %s, want %s", got.Phase, tc.want)
			}
		})
	}
}

func TestManagerRefusesRevivingATerminatedContainer(t *testing.T) {
	m, _ := newManager(t)
	p := pod(policy(v1.RestartPolicyNever))
	done := v1.ContainerStatus{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}
	running := v1.ContainerStatus{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	m.SetPodStatus(p, v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{done}})
	m.SetPodStatus(p, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running}})
	got, _ := m.GetPodStatus(p.UID)
	if got.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("container came back to %+v under restartPolicy Never", got.ContainerStatuses[0].State)
	}
}

func TestManagerTerminatePod(t *testing.T) {
	tests := []struct {
		name      string
		pod       *v1.Pod
		wantPhase v1.PodPhase
	}{
		{"api pod becomes failed", pod(), v1.PodFailed},
		{"static pod keeps its phase (upstream #116484)", pod(static), v1.PodRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newManager(t)
			m.SetPodStatus(tc.pod, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{
				{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			}})
			m.TerminatePod(tc.pod)
			got, _ := m.GetPodStatus(tc.pod.UID)
			if got.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", got.Phase, tc.wantPhase)
			}
			term := got.ContainerStatuses[0].State.Terminated
			if term == nil || term.Reason != ContainerStatusUnknown || term.ExitCode != 137 {
				t.Errorf("container = %+v, want terminated %s 137", got.ContainerStatuses[0].State, ContainerStatusUnknown)
			}
		})
	}
}

func TestManagerPodsListsCopiesSorted(t *testing.T) {
	m, _ := newManager(t)
	for _, n := range []struct{ ns, name string }{{"kube-system", "b"}, {"default", "z"}, {"default", "a"}} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: n.ns, UID: types.UID(n.ns + n.name)}}
		m.SetPodStatus(p, v1.PodStatus{Phase: v1.PodRunning})
	}
	pods := m.Pods()
	var got []string
	for _, p := range pods {
		got = append(got, p.Namespace+"/"+p.Name)
	}
	if fmt.Sprint(got) != "[default/a default/z kube-system/b]" {
		t.Fatalf("Pods() = %v", got)
	}
	pods[0].Status.Phase = v1.PodFailed
	if again, _ := m.GetPodStatus(pods[0].UID); again.Phase != v1.PodRunning {
		t.Fatal("changing a returned pod changed the stored status")
	}
	m.RemoveOrphanedStatuses(map[types.UID]bool{"defaulta": true})
	if m.Len() != 1 {
		t.Fatalf("%d statuses after removing orphans, want 1", m.Len())
	}
}

func TestReasonCache(t *testing.T) {
	c := NewReasonCache()
	c.Add("u", "app", "CrashLoopBackOff", "back-off 10s")
	if r, ok := c.Get("u", "app"); !ok || r.Reason != "CrashLoopBackOff" {
		t.Fatalf("Get = %+v, %t", r, ok)
	}
	c.Remove("u", "app")
	if _, ok := c.Get("u", "app"); ok || c.Len() != 0 {
		t.Fatal("reason kept after the container started")
	}
	c.Add("u", "a", "ErrImagePull", "")
	c.ForgetPod("u")
	if c.Len() != 0 {
		t.Fatal("ForgetPod kept the pod")
	}
}

// A status equal to the stored one, as apimachinery's semantic equality has it, changes
// nothing (no new version for the API status sync to act on); any other difference does.
func TestManagerStoresOnlySemanticChanges(t *testing.T) {
	running := func(at time.Time) v1.PodStatus {
		s := withReady(v1.ConditionTrue)
		s.ContainerStatuses = []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}}
		return s
	}
	elsewhere := time.FixedZone("elsewhere", 3600)
	for _, c := range []struct {
		name    string
		next    func() v1.PodStatus
		changes bool
	}{
		{"identical", func() v1.PodStatus { return running(t0) }, false},
		{"the same instant in another location", func() v1.PodStatus { return running(t0.In(elsewhere)) }, false},
		{"empty instead of no volume mounts", func() v1.PodStatus {
			s := running(t0)
			s.ContainerStatuses[0].VolumeMounts = []v1.VolumeMountStatus{}
			return s
		}, false},
		{"another start", func() v1.PodStatus { return running(t0.Add(time.Second)) }, true},
		{"not ready", func() v1.PodStatus {
			s := running(t0)
			s.ContainerStatuses[0].Ready = false
			return s
		}, true},
		{"a message", func() v1.PodStatus {
			s := running(t0)
			s.Message = "m"
			return s
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, _ := newManager(t)
			p := pod()
			m.SetPodStatus(p, running(t0))
			before := m.Version()
			m.SetPodStatus(p, c.next())
			if changed := m.Version() != before; changed != c.changes {
				t.Errorf("stored as a change: %v, want %v", changed, c.changes)
			}
		})
	}
}

// TestSetPodStatusKeepsTheCallersStatus: the status given is neither changed (its
// conditions get no times, it gets no start time) nor shared with the stored one, whether
// it is stored or found equal to what is.
func TestSetPodStatusKeepsTheCallersStatus(t *testing.T) {
	m, clk := newManager(t)
	p := pod()
	for i := range 2 { // stored, then found unchanged
		given := withReady(v1.ConditionTrue)
		given.ContainerStatuses = []v1.ContainerStatus{{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
		m.SetPodStatus(p, given)
		if given.StartTime != nil || !given.Conditions[0].LastTransitionTime.IsZero() {
			t.Fatalf("set %d changed the caller's status: start %v, transition %v", i, given.StartTime, given.Conditions[0].LastTransitionTime)
		}
		given.Conditions[0].Status = v1.ConditionFalse
		given.ContainerStatuses[0].Ready = false
		given.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(t0.Add(time.Hour))
		got, _ := m.GetPodStatus(p.UID)
		if got.Conditions[0].Status != v1.ConditionTrue || !got.ContainerStatuses[0].Ready || !got.ContainerStatuses[0].State.Running.StartedAt.IsZero() {
			t.Fatalf("set %d: the stored status changed with the caller's: %+v", i, got)
		}
		clk.Step(10 * time.Second)
	}
}

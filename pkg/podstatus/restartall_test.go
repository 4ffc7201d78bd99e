package podstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/container"
)

// restartAllPod is a restartPolicy Never pod whose "app" container has a
// RestartAllContainers rule on 42, beside a "web" container and an init container.
func restartAllPod() *v1.Pod {
	return pod(policy(v1.RestartPolicyNever), inits("setup"), withPolicy("app", v1.ContainerRestartPolicyNever, restartAllOn(42)), func(p *v1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "web", Image: "nginx:1.25"})
		p.Generation = 3
	})
}

func restartAllGenerator(gate bool) *Generator {
	return NewGenerator(GeneratorConfig{Features: Features{SidecarContainers: true, ContainerRestartRules: true,
		RestartAllContainersOnContainerExits: gate, PodObservedGenerationTracking: true}})
}

func restartingCondition(s v1.ConditionStatus) v1.PodCondition {
	c := v1.PodCondition{Type: v1.AllContainersRestarting, Status: s}
	if s == v1.ConditionTrue {
		c.Reason, c.Message = RestartAllContainersStarted, "container exited with restart policy rule"
	}
	return c
}

// TestAllContainersRestartingCondition: the condition of a pod with a RestartAllContainers
// rule is True from the exit that triggers the restart until the runtime holds none of the
// pod's containers, False otherwise (with the terminal phase as reason once the pod is
// done), carries no observedGeneration, and is absent from pods without such a rule or
// with the gate off (where one the source set is kept).
func TestAllContainersRestartingCondition(t *testing.T) {
	settled := []*container.ContainerStatus{ctr("setup", container.ContainerStateExited, 0, 0, 1), ctr("web", container.ContainerStateRunning, 0, 0, 2)}
	exited42 := append(settled[:2:2], ctr("app", container.ContainerStateExited, 0, 42, 3))
	oldTrue := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{restartingCondition(v1.ConditionTrue)}}
	foreign := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue, Reason: "SetElsewhere"}
	tests := []struct {
		name     string
		pod      *v1.Pod
		gate     bool
		runtime  []*container.ContainerStatus
		old      v1.PodStatus
		terminal bool
		want     *v1.PodCondition
	}{
		{"running, no exit", restartAllPod(), true, append(settled[:2:2], ctr("app", container.ContainerStateRunning, 0, 0, 3)), v1.PodStatus{}, false, &v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}},
		{"exit 42 in the runtime", restartAllPod(), true, exited42, v1.PodStatus{}, false, ptr(restartingCondition(v1.ConditionTrue))},
		{"exit 1: the rule misses", restartAllPod(), true, append(settled[:2:2], ctr("app", container.ContainerStateExited, 0, 1, 3)), v1.PodStatus{}, false, ptr(restartingCondition(v1.ConditionFalse))},
		{"exit 42 in the old status only", restartAllPod(), true, append(settled[:2:2], ctr("app", container.ContainerStateExited, 0, 1, 3)),
			v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{terminated("app", 42)}}, false, ptr(restartingCondition(v1.ConditionTrue))},
		{"True while containers are left", restartAllPod(), true, settled, oldTrue, false, ptr(restartingCondition(v1.ConditionTrue))},
		{"False once all are removed", restartAllPod(), true, nil, oldTrue, false, ptr(restartingCondition(v1.ConditionFalse))},
		{"pod failed", restartAllPod(), true, append(settled[:2:2], ctr("app", container.ContainerStateExited, 0, 42, 3)), v1.PodStatus{Phase: v1.PodFailed}, true,
			&v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse, Reason: PodFailed}},
		{"pod succeeded", restartAllPod(), true, []*container.ContainerStatus{ctr("setup", container.ContainerStateExited, 0, 0, 1), ctr("web", container.ContainerStateExited, 0, 0, 2), ctr("app", container.ContainerStateExited, 0, 0, 3)}, v1.PodStatus{}, true,
			&v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse, Reason: PodCompleted}},
		{"no RestartAllContainers rule", pod(policy(v1.RestartPolicyNever)), true, []*container.ContainerStatus{ctr("app", container.ContainerStateExited, 0, 42, 1)}, v1.PodStatus{}, false, nil},
		{"gate off", restartAllPod(), false, exited42, v1.PodStatus{}, false, nil},
		{"gate off keeps the source's", func() *v1.Pod { p := restartAllPod(); p.Status.Conditions = []v1.PodCondition{foreign}; return p }(), false, exited42, v1.PodStatus{}, false, &foreign},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := restartAllGenerator(tc.gate).Generate(tc.pod, runtime(tc.runtime...), tc.old, tc.terminal)
			got := cond(s, v1.AllContainersRestarting)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AllContainersRestarting (-want +got):\n%s", diff)
			}
			if tc.gate && got != nil && s.Conditions[len(s.Conditions)-1].Type != v1.AllContainersRestarting {
				t.Errorf("AllContainersRestarting is not the last condition: %+v", s.Conditions)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestGenerateWhileRestartingAllContainers steps the statuses through a restart of all
// containers: once the runtime removed them, each container that was running or
// terminated waits with RestartingAllContainers, its lastState a RestartingAllContainers
// termination (137) and its restart count one up; the pod stays Running and Initialized.
// When the init container runs again its count and lastState carry over; the app
// containers still to start wait for initialization with theirs.
func TestGenerateWhileRestartingAllContainers(t *testing.T) {
	p := restartAllPod()
	g := restartAllGenerator(true)
	removed := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: RestartingAllContainers,
		Message: "The container is removed because RestartAllContainers in place", ExitCode: 137}}
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: RestartingAllContainers,
		Message: "The container is removed because RestartAllContainers in place"}}

	// The exit: AllContainersRestarting True, nothing removed yet.
	s1 := g.Generate(p, runtime(ctr("setup", container.ContainerStateExited, 0, 0, 1), ctr("web", container.ContainerStateRunning, 2, 0, 2),
		ctr("app", container.ContainerStateExited, 0, 42, 3)), v1.PodStatus{}, false)
	if s1.Phase != v1.PodRunning || cond(s1, v1.AllContainersRestarting).Status != v1.ConditionTrue || cond(s1, v1.PodInitialized).Status != v1.ConditionTrue {
		t.Fatalf("at the exit: phase %s, conditions %+v; want Running, restarting, initialized", s1.Phase, s1.Conditions)
	}

	// All removed.
	s2 := g.Generate(p, runtime(), s1, false)
	for _, name := range []string{"setup", "app", "web"} {
		list := s2.ContainerStatuses
		if name == "setup" {
			list = s2.InitContainerStatuses
		}
		old := find(append(s1.InitContainerStatuses, s1.ContainerStatuses...), name)
		got := find(list, name)
		if diff := cmp.Diff(waiting, got.State); diff != "" {
			t.Errorf("%s state (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(removed, got.LastTerminationState); diff != "" {
			t.Errorf("%s lastState (-want +got):\n%s", name, diff)
		}
		if got.RestartCount != old.RestartCount+1 {
			t.Errorf("%s restartCount %d, want %d", name, got.RestartCount, old.RestartCount+1)
		}
	}
	if s2.Phase != v1.PodRunning {
		t.Errorf("phase with every container removed = %s, want Running (they restart)", s2.Phase)
	}
	if c := cond(s2, v1.PodInitialized); c.Status != v1.ConditionTrue {
		t.Errorf("Initialized = %+v with the init container removed, want True kept", c)
	}
	if c := cond(s2, v1.AllContainersRestarting); c.Status != v1.ConditionFalse {
		t.Errorf("AllContainersRestarting = %+v with every container removed, want False", c)
	}

	// The init container runs again, attempt 1 (its kept log's count).
	s3 := g.Generate(p, runtime(ctr("setup", container.ContainerStateRunning, 1, 0, 10)), s2, false)
	setup := find(s3.InitContainerStatuses, "setup")
	if setup.State.Running == nil || setup.RestartCount != 1 || cmp.Diff(removed, setup.LastTerminationState) != "" {
		t.Errorf("setup = %+v, want running, restartCount 1, lastState RestartingAllContainers", setup)
	}
	web := find(s3.ContainerStatuses, "web")
	if waitingReason(web) != PodInitializing || web.RestartCount != 3 || cmp.Diff(removed, web.LastTerminationState) != "" {
		t.Errorf("web = %+v, want waiting PodInitializing, restartCount 3, lastState RestartingAllContainers", web)
	}

	// Without the gate the same removal is a lost container: no RestartingAllContainers.
	off := restartAllGenerator(false).Generate(p, runtime(), s1, false)
	if r := waitingReason(find(off.ContainerStatuses, "app")); r == RestartingAllContainers {
		t.Errorf("gate off: app waiting with %s", r)
	}
	// And an initialized pod whose init container waits again is no longer initialized.
	if c := cond(restartAllGenerator(false).Generate(p, runtime(), s2, false), v1.PodInitialized); c.Status != v1.ConditionFalse {
		t.Errorf("gate off: Initialized = %+v with the init container waiting, want False", c)
	}
}

// TestGetPhaseRestartingAllContainers: a container whose last termination is a restart of
// all containers is restarting, whatever its policy, so a restartPolicy Never pod stays
// Running (or Pending for an init container) rather than Failed.
func TestGetPhaseRestartingAllContainers(t *testing.T) {
	removed := func(name string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: RestartingAllContainers}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: RestartingAllContainers, ExitCode: 137}}}
	}
	tests := []struct {
		name    string
		pod     *v1.Pod
		info    []v1.ContainerStatus
		want    v1.PodPhase
		wantOff v1.PodPhase // RestartAllContainersOnContainerExits off
	}{
		{"app container removed", pod(policy(v1.RestartPolicyNever)), []v1.ContainerStatus{removed("app")}, v1.PodRunning, v1.PodFailed},
		{"init container removed", pod(policy(v1.RestartPolicyNever), inits("setup")),
			[]v1.ContainerStatus{removed("setup"), {Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: PodInitializing}}}}, v1.PodPending, v1.PodFailed},
		{"exited 42 with its rule", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever, restartAllOn(42))),
			[]v1.ContainerStatus{terminated("app", 42)}, v1.PodRunning, v1.PodFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := getPhase(tc.pod, tc.info, false, hasAnyRegularContainerStarted(&tc.pod.Spec, tc.info), true, container.RestartGates{ContainerRestartRules: true, RestartAllContainers: true}); got != tc.want {
				t.Errorf("phase = %s, want %s", got, tc.want)
			}
			if got := getPhase(tc.pod, tc.info, false, hasAnyRegularContainerStarted(&tc.pod.Spec, tc.info), true, container.RestartGates{ContainerRestartRules: true}); got != tc.wantOff {
				t.Errorf("gate off: phase = %s, want %s", got, tc.wantOff)
			}
		})
	}
}

package prober

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestWorkerStopsWhenTheContainerWillNotRestart: a probe worker of a terminated container
// keeps waiting for the next instance only if the container's own restartPolicy and rules
// (then the pod's) restart it.
func TestWorkerStopsWhenTheContainerWillNotRestart(t *testing.T) {
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever
	in42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	tests := []struct {
		pod        v1.RestartPolicy
		container  *v1.ContainerRestartPolicy
		rules      []v1.ContainerRestartRule
		exitCode   int32
		wantWorker bool
		gateOff    bool // ContainerRestartRules off: the pod's policy decides
	}{
		{v1.RestartPolicyAlways, nil, nil, 0, true, false},
		{v1.RestartPolicyOnFailure, nil, nil, 0, false, false},
		{v1.RestartPolicyOnFailure, nil, nil, 1, true, false},
		{v1.RestartPolicyNever, nil, nil, 1, false, false},
		{v1.RestartPolicyNever, &always, nil, 1, true, false},
		{v1.RestartPolicyNever, &never, in42, 42, true, false},
		{v1.RestartPolicyNever, &never, in42, 1, false, false},
		{v1.RestartPolicyAlways, &never, nil, 1, false, false},
		{v1.RestartPolicyNever, &always, nil, 1, false, true},
		{v1.RestartPolicyAlways, &never, nil, 1, true, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("pod=%s/container=%v/rules=%d/exit=%d/gateOff=%v", tc.pod, tc.container != nil, len(tc.rules), tc.exitCode, tc.gateOff), func(t *testing.T) {
			e := newEnvWith(t, false, func(c *Config) { c.ContainerRestartRules = !tc.gateOff })
			p := pod("", execProbe(10, 3), nil, nil)
			p.Spec.RestartPolicy = tc.pod
			p.Spec.Containers[0].RestartPolicy = tc.container
			p.Spec.Containers[0].RestartPolicyRules = tc.rules
			e.running(p, "c1", 0, true)
			e.m.AddPod(p)
			e.run(0)
			e.status[p.UID] = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{
				Name: "c", ContainerID: "fake://c1",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: tc.exitCode}},
			}}}
			e.run(10 * time.Second)
			if got := e.m.Workers() == 1; got != tc.wantWorker {
				t.Fatalf("worker kept = %t, want %t", got, tc.wantWorker)
			}
			// A kept worker reports the terminated container failed; a stopped one drops
			// its result.
			want := "none"
			if tc.wantWorker {
				want = "Failure"
			}
			if got := e.result(e.live, "c1"); got != want {
				t.Errorf("liveness of the terminated container = %s, want %s", got, want)
			}
		})
	}
}

// TestWorkerWaitsThroughARestartOfAllContainers: with RestartAllContainersOnContainerExits,
// the worker of a container terminated in a restartPolicy Never pod keeps waiting for the
// next instance while the pod restarts all its containers (its status says so, or another
// container exited with its RestartAllContainers rule's code), and of one whose own
// RestartAllContainers rule matched; it stops otherwise, and with the gate off.
func TestWorkerWaitsThroughARestartOfAllContainers(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	on42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	killed := v1.ContainerStatus{Name: "c", ContainerID: "fake://c1",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137}}}
	tests := []struct {
		name       string
		ownRules   []v1.ContainerRestartRule
		exitCode   int32
		status     v1.PodStatus
		gate       bool
		wantWorker bool
	}{
		{"condition True", nil, 137, v1.PodStatus{Phase: v1.PodRunning,
			Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}}}, true, true},
		{"another container exited 42", nil, 137, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "source",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 42}}}}}, true, true},
		{"its own rule matched", on42, 42, v1.PodStatus{Phase: v1.PodRunning}, true, true},
		{"no restart of all", nil, 137, v1.PodStatus{Phase: v1.PodRunning}, true, false},
		{"condition True, gate off", nil, 137, v1.PodStatus{Phase: v1.PodRunning,
			Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}}}, false, false},
		{"its own rule matched, gate off", on42, 42, v1.PodStatus{Phase: v1.PodRunning}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, false, func(c *Config) { c.ContainerRestartRules, c.RestartAllContainers = true, tc.gate })
			p := pod("", execProbe(10, 3), nil, nil)
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].RestartPolicy = &never
			p.Spec.Containers[0].RestartPolicyRules = tc.ownRules
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "source", RestartPolicy: &never, RestartPolicyRules: on42})
			e.running(p, "c1", 0, true)
			e.m.AddPod(p)
			e.run(0)
			st := tc.status
			c := killed
			c.State.Terminated = &v1.ContainerStateTerminated{ExitCode: tc.exitCode}
			st.ContainerStatuses = append([]v1.ContainerStatus{c}, st.ContainerStatuses...)
			e.status[p.UID] = st
			e.run(10 * time.Second)
			if got := e.m.Workers() == 1; got != tc.wantWorker {
				t.Fatalf("worker kept = %t, want %t", got, tc.wantWorker)
			}
		})
	}
}

package kuberuntime

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
)

// withContainerPolicy gives the named container (regular or init) a restartPolicy and
// restartPolicyRules.
func withContainerPolicy(name string, p v1.ContainerRestartPolicy, rules ...v1.ContainerRestartRule) podOpt {
	return func(pod *v1.Pod) {
		for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == name {
					list[i].RestartPolicy = &p
					list[i].RestartPolicyRules = rules
				}
			}
		}
	}
}

func restartOnExit(op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

// TestContainerRestartRules runs an app container that exits and checks whether the next
// sync restarts it: the pod's restartPolicy crossed with the container's, its rules and
// the exit code, under the ContainerRestartRules gate and without it.
func TestContainerRestartRules(t *testing.T) {
	in42 := []v1.ContainerRestartRule{restartOnExit(v1.ContainerRestartRuleOnExitCodesOpIn, 42)}
	tests := []struct {
		pod         v1.RestartPolicy
		container   v1.ContainerRestartPolicy // "": none
		rules       []v1.ContainerRestartRule
		exitCode    int
		wantRestart bool // gate on
		wantOff     bool // gate off
	}{
		{v1.RestartPolicyNever, v1.ContainerRestartPolicyAlways, nil, 1, true, false},
		{v1.RestartPolicyNever, v1.ContainerRestartPolicyAlways, nil, 0, true, false},
		{v1.RestartPolicyNever, v1.ContainerRestartPolicyOnFailure, nil, 1, true, false},
		{v1.RestartPolicyNever, v1.ContainerRestartPolicyOnFailure, nil, 0, false, false},
		{v1.RestartPolicyNever, v1.ContainerRestartPolicyNever, in42, 42, true, false},
		{v1.RestartPolicyNever, v1.ContainerRestartPolicyNever, in42, 1, false, false},
		{v1.RestartPolicyAlways, v1.ContainerRestartPolicyNever, nil, 1, false, true},
		{v1.RestartPolicyAlways, v1.ContainerRestartPolicyNever, in42, 42, true, true},
		{v1.RestartPolicyOnFailure, "", nil, 1, true, true},
		{v1.RestartPolicyNever, "", nil, 1, false, false},
	}
	for _, tc := range tests {
		for _, gate := range []bool{true, false} {
			t.Run(fmt.Sprintf("pod=%s/container=%s/rules=%d/exit=%d/gate=%t", tc.pod, tc.container, len(tc.rules), tc.exitCode, gate), func(t *testing.T) {
				h := newHarness(t, true)
				h.m.cfg.ContainerRestartRules = gate
				opts := []podOpt{withRestartPolicy(tc.pod), withBehavior("app", fmt.Sprintf("runFor=5s,exitCode=%d", tc.exitCode))}
				if tc.container != "" {
					opts = append(opts, withContainerPolicy("app", tc.container, tc.rules...))
				}
				pod := newPod("rules", opts...)
				h.sync(pod)
				h.step(5 * time.Second)
				h.sync(pod)
				want := tc.wantRestart
				if !gate {
					want = tc.wantOff
				}
				st, attempt := h.state(pod, "app")
				if restarted := attempt == 1 && st == container.ContainerStateRunning; restarted != want {
					t.Fatalf("app = %q attempt %d, want restarted=%t", st, attempt, want)
				}
				if !want {
					if sb := h.status(pod).SandboxStatuses[0]; sb.State != cri.SandboxNotReady {
						t.Fatalf("sandbox = %v, want stopped once the pod is done", sb.State)
					}
				}
			})
		}
	}
}

// TestContainerRestartRulesCrashLoopBackOff: a container restarted by its own policy in a
// restartPolicy Never pod goes through the usual crash-loop back-off (10s, then 20s).
func TestContainerRestartRulesCrashLoopBackOff(t *testing.T) {
	h := newHarness(t, true)
	h.m.cfg.ContainerRestartRules = true
	pod := newPod("backoff", withRestartPolicy(v1.RestartPolicyNever), withContainerPolicy("app", v1.ContainerRestartPolicyAlways),
		withBehavior("app", "runFor=1s,exitCode=1"))
	h.sync(pod)
	h.step(time.Second)
	h.sync(pod) // first restart: no back-off yet
	if _, attempt := h.state(pod, "app"); attempt != 1 {
		t.Fatalf("attempt = %d after the first exit, want 1", attempt)
	}
	h.step(time.Second)
	h.sync(pod) // exited again: back-off 10s
	if _, attempt := h.state(pod, "app"); attempt != 1 {
		t.Fatalf("attempt = %d within the back-off, want 1", attempt)
	}
	h.step(10 * time.Second)
	h.sync(pod)
	if st, attempt := h.state(pod, "app"); attempt != 2 || st != container.ContainerStateRunning {
		t.Fatalf("app = %q attempt %d after the back-off, want running attempt 2", st, attempt)
	}
}

// TestInitContainerRestartRules: a failed init container is restarted or fails the pod by
// its own policy and rules under the gate.
func TestInitContainerRestartRules(t *testing.T) {
	tests := []struct {
		name        string
		pod         v1.RestartPolicy
		policy      v1.ContainerRestartPolicy
		rules       []v1.ContainerRestartRule
		wantRestart bool
	}{
		{"pod Never, init OnFailure", v1.RestartPolicyNever, v1.ContainerRestartPolicyOnFailure, nil, true},
		{"pod Never, init Never, rule matches", v1.RestartPolicyNever, v1.ContainerRestartPolicyNever, []v1.ContainerRestartRule{restartOnExit(v1.ContainerRestartRuleOnExitCodesOpIn, 3)}, true},
		{"pod Never, init Never, rule misses", v1.RestartPolicyNever, v1.ContainerRestartPolicyNever, []v1.ContainerRestartRule{restartOnExit(v1.ContainerRestartRuleOnExitCodesOpIn, 4)}, false},
		{"pod Always, init Never", v1.RestartPolicyAlways, v1.ContainerRestartPolicyNever, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			h.m.cfg.ContainerRestartRules = true
			pod := newPod("initrules", withRestartPolicy(tc.pod), withInit("setup", false), withContainerPolicy("setup", tc.policy, tc.rules...),
				withBehavior("setup", "runFor=1s,exitCode=3"))
			h.sync(pod)
			h.step(time.Second)
			h.sync(pod)
			st, attempt := h.state(pod, "setup")
			if tc.wantRestart {
				if st != container.ContainerStateRunning || attempt != 1 {
					t.Fatalf("setup = %q attempt %d, want running attempt 1", st, attempt)
				}
				return
			}
			if st != container.ContainerStateExited {
				t.Fatalf("setup = %q, want exited", st)
			}
			if sb := h.status(pod).SandboxStatuses[0]; sb.State != cri.SandboxNotReady {
				t.Fatalf("sandbox = %v, want stopped: the pod failed", sb.State)
			}
		})
	}
}

// TestProbeFailureFollowsContainerPolicy: a container killed for its liveness probe is
// restarted by its own restartPolicy (never its rules: it has no exit code yet).
func TestProbeFailureFollowsContainerPolicy(t *testing.T) {
	tests := []struct {
		name        string
		pod         v1.RestartPolicy
		policy      v1.ContainerRestartPolicy
		rules       []v1.ContainerRestartRule
		wantMessage string
	}{
		{"pod Never, container Always", v1.RestartPolicyNever, v1.ContainerRestartPolicyAlways, nil, "Container app failed liveness probe, will be restarted"},
		{"pod Never, container OnFailure", v1.RestartPolicyNever, v1.ContainerRestartPolicyOnFailure, nil, "Container app failed liveness probe, will be restarted"},
		{"pod Always, container Never with rules", v1.RestartPolicyAlways, v1.ContainerRestartPolicyNever,
			[]v1.ContainerRestartRule{restartOnExit(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}, "Stopping container app"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			h.m.cfg.ContainerRestartRules = true
			live := results.NewManager(nil)
			h.m.cfg.Liveness = live
			pod := newPod("probed", withRestartPolicy(tc.pod), withContainerPolicy("app", tc.policy, tc.rules...))
			h.sync(pod)
			live.Set(h.status(pod).FindContainerStatusByName("app").ID.ID, results.Failure, pod.UID)
			h.sync(pod)
			if msgs := h.eventMessages("Killing"); len(msgs) != 1 || msgs[0] != tc.wantMessage {
				t.Fatalf("Killing events %q, want %q", msgs, tc.wantMessage)
			}
		})
	}
}

// TestNewSandboxSkipsSucceededOnFailureContainer: when the sandbox is recreated, a
// container whose own restartPolicy is OnFailure and that succeeded is not started again;
// one whose own policy is Never is (as upstream, only OnFailure marks a run-once container).
func TestNewSandboxSkipsSucceededOnFailureContainer(t *testing.T) {
	tests := []struct {
		policy v1.ContainerRestartPolicy
		want   []int
	}{
		{v1.ContainerRestartPolicyOnFailure, []int{1}},
		{v1.ContainerRestartPolicyNever, []int{0, 1}},
		{v1.ContainerRestartPolicyAlways, []int{0, 1}},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy), func(t *testing.T) {
			h := newHarness(t, true)
			h.m.cfg.ContainerRestartRules = true
			pod := newPod("sandbox", withContainers("done", "app"), withContainerPolicy("done", tc.policy))
			status := &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
				SandboxStatuses: []*cri.PodSandboxStatus{{ID: "sb", State: cri.SandboxNotReady}},
				ContainerStatuses: []*container.ContainerStatus{
					{Name: "done", State: container.ContainerStateExited, ExitCode: 0},
					{Name: "app", State: container.ContainerStateExited, ExitCode: 137},
				}}
			got := h.m.computePodActions(pod, status, false)
			if !got.CreateSandbox || fmt.Sprint(got.ContainersToStart) != fmt.Sprint(tc.want) {
				t.Fatalf("actions = %v, want a new sandbox and containers %v", got, tc.want)
			}
		})
	}
}

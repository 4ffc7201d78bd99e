package podstatus

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/container"
)

// withPolicy gives the named container (regular or init) a restartPolicy and rules.
func withPolicy(name string, p v1.ContainerRestartPolicy, rules ...v1.ContainerRestartRule) func(*v1.Pod) {
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

// restartAllOn is a RestartAllContainers rule on the exit codes.
func restartAllOn(codes ...int32) v1.ContainerRestartRule {
	r := restartOn(codes...)
	r.Action = v1.ContainerRestartRuleActionRestartAllContainers
	return r
}

func restartOn(codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{
		Action:    v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: codes},
	}
}

func terminated(name string, exitCode int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: exitCode}}}
}

// crashLooping is a container waiting to restart after exiting with exitCode.
func crashLooping(name string, exitCode int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name,
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: exitCode}}}
}

func running(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

// TestGetPhaseWithContainerRestartRules: with the gate a stopped container keeps the pod
// Running while its own policy or rules restart it, and a failed init container fails the
// pod only when they do not; off, the pod's restartPolicy alone decides.
func TestGetPhaseWithContainerRestartRules(t *testing.T) {
	always, onFailure, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure, v1.ContainerRestartPolicyNever
	tests := []struct {
		name     string
		pod      *v1.Pod
		info     []v1.ContainerStatus
		terminal bool
		want     v1.PodPhase
		wantOff  v1.PodPhase
	}{
		{
			name: "pod Never, container Always, exited 1",
			pod:  pod(policy(v1.RestartPolicyNever), withPolicy("app", always)),
			info: []v1.ContainerStatus{terminated("app", 1)},
			want: v1.PodRunning, wantOff: v1.PodFailed,
		},
		{
			name: "pod Never, container Always, exited 0",
			pod:  pod(policy(v1.RestartPolicyNever), withPolicy("app", always)),
			info: []v1.ContainerStatus{terminated("app", 0)},
			want: v1.PodRunning, wantOff: v1.PodSucceeded,
		},
		{
			name: "pod Never, container Always, waiting in back-off",
			pod:  pod(policy(v1.RestartPolicyNever), withPolicy("app", always)),
			info: []v1.ContainerStatus{crashLooping("app", 1)},
			want: v1.PodRunning, wantOff: v1.PodFailed,
		},
		{
			name: "pod Never, rule 42 matches",
			pod:  pod(policy(v1.RestartPolicyNever), withPolicy("app", never, restartOn(42))),
			info: []v1.ContainerStatus{terminated("app", 42)},
			want: v1.PodRunning, wantOff: v1.PodFailed,
		},
		{
			name: "pod Never, rule 42 does not match",
			pod:  pod(policy(v1.RestartPolicyNever), withPolicy("app", never, restartOn(42))),
			info: []v1.ContainerStatus{terminated("app", 1)},
			want: v1.PodFailed, wantOff: v1.PodFailed,
		},
		{
			name: "pod Always, container Never, exited 1",
			pod:  pod(withPolicy("app", never)),
			info: []v1.ContainerStatus{terminated("app", 1)},
			want: v1.PodFailed, wantOff: v1.PodRunning,
		},
		{
			name: "pod Always, container Never, exited 0",
			pod:  pod(withPolicy("app", never)),
			info: []v1.ContainerStatus{terminated("app", 0)},
			want: v1.PodSucceeded, wantOff: v1.PodRunning,
		},
		{
			name: "pod Never, container OnFailure, exited 1 then 0",
			pod:  pod(policy(v1.RestartPolicyNever), withPolicy("app", onFailure)),
			info: []v1.ContainerStatus{terminated("app", 0)},
			want: v1.PodSucceeded, wantOff: v1.PodSucceeded,
		},
		{
			name: "terminal pod: its containers will not restart",
			pod:  pod(policy(v1.RestartPolicyNever), withPolicy("app", always)),
			info: []v1.ContainerStatus{terminated("app", 1)}, terminal: true,
			want: v1.PodFailed, wantOff: v1.PodFailed,
		},
		{
			name: "pod Never, init container OnFailure, failed",
			pod:  pod(policy(v1.RestartPolicyNever), inits("setup"), withPolicy("setup", onFailure)),
			info: []v1.ContainerStatus{crashLooping("setup", 1), {Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: PodInitializing}}}},
			want: v1.PodPending, wantOff: v1.PodFailed,
		},
		{
			name: "pod Always, init container Never, failed",
			pod:  pod(inits("setup"), withPolicy("setup", never)),
			info: []v1.ContainerStatus{terminated("setup", 1), {Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: PodInitializing}}}},
			want: v1.PodFailed, wantOff: v1.PodPending,
		},
		{
			name: "two containers, one restarting by its policy",
			pod: pod(policy(v1.RestartPolicyNever), withPolicy("app", always), func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "job", Image: "busybox"})
			}),
			info: []v1.ContainerStatus{terminated("app", 1), terminated("job", 0)},
			want: v1.PodRunning, wantOff: v1.PodFailed,
		},
		{
			name: "running",
			pod:  pod(policy(v1.RestartPolicyNever), withPolicy("app", always)),
			info: []v1.ContainerStatus{running("app")},
			want: v1.PodRunning, wantOff: v1.PodRunning,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := getPhase(tc.pod, tc.info, tc.terminal, hasAnyRegularContainerStarted(&tc.pod.Spec, tc.info), true, container.RestartGates{ContainerRestartRules: true}); got != tc.want {
				t.Errorf("gate on: phase = %s, want %s", got, tc.want)
			}
			if got := getPhase(tc.pod, tc.info, tc.terminal, hasAnyRegularContainerStarted(&tc.pod.Spec, tc.info), true, container.RestartGates{}); got != tc.wantOff {
				t.Errorf("gate off: phase = %s, want %s", got, tc.wantOff)
			}
		})
	}
}

// TestGenerateWaitingReasonFollowsContainerPolicy: the back-off reason shows on a container
// its own policy restarts, even in a restartPolicy Never pod.
func TestGenerateWaitingReasonFollowsContainerPolicy(t *testing.T) {
	tests := []struct {
		name        string
		pod         *v1.Pod
		exitCode    int
		wantWaiting string
		wantPhase   v1.PodPhase
	}{
		{"container Always", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyAlways)), 1, "CrashLoopBackOff", v1.PodRunning},
		{"rule match", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever, restartOn(42))), 42, "CrashLoopBackOff", v1.PodRunning},
		{"rule miss", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever, restartOn(42))), 1, "<not waiting>", v1.PodFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGenerator(GeneratorConfig{
				Features: Features{SidecarContainers: true, ContainerRestartRules: true},
				Reasons:  reasons{"app": {Reason: "CrashLoopBackOff", Message: "back-off"}},
			})
			rt := runtime(ctr("app", container.ContainerStateExited, 0, tc.exitCode, 1))
			s := g.Generate(tc.pod, rt, tc.pod.Status, false)
			if s.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", s.Phase, tc.wantPhase)
			}
			if got := waitingReason(find(s.ContainerStatuses, "app")); got != tc.wantWaiting {
				t.Errorf("waiting reason = %q, want %q", got, tc.wantWaiting)
			}
		})
	}
}

// TestManagerAcceptsRestartByContainerPolicy: a terminated container its own policy or
// rules restart may run again in a restartPolicy Never pod; one they do not may not.
func TestManagerAcceptsRestartByContainerPolicy(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		exitCode int32
		wantSet  bool
	}{
		{"container Always", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyAlways)), 1, true},
		{"rule match", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever, restartOn(42))), 42, true},
		{"rule miss", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever, restartOn(42))), 1, false},
		{"no container policy", pod(policy(v1.RestartPolicyNever)), 1, false},
		{"init container OnFailure", pod(policy(v1.RestartPolicyNever), inits("setup"), withPolicy("setup", v1.ContainerRestartPolicyOnFailure)), 1, true},
		{"rule match, gate off", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever, restartOn(42))), 42, false},
		// A pod that may restart all its containers: any of them may come back, whatever
		// its own policy, exit code or rules.
		{"restart-all rule elsewhere", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever), func(p *v1.Pod) {
			never := v1.ContainerRestartPolicyNever
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "other", RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{restartAllOn(42)}})
		}), 1, true},
		{"restart-all rule, exit 0", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever, restartAllOn(42))), 0, true},
		{"restart-all rule, restart-all gate off", pod(policy(v1.RestartPolicyNever), withPolicy("app", v1.ContainerRestartPolicyNever, restartAllOn(42))), 42, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newManager(t)
			m.restartGates = container.RestartGates{
				ContainerRestartRules: !strings.HasSuffix(tc.name, ", gate off"),
				RestartAllContainers:  !strings.HasSuffix(tc.name, "gate off"),
			}
			name, init := "app", len(tc.pod.Spec.InitContainers) > 0
			if init {
				name = "setup"
			}
			set := func(cs v1.ContainerStatus) {
				s := v1.PodStatus{Phase: v1.PodRunning}
				if init {
					s.Phase = v1.PodPending
					s.InitContainerStatuses = []v1.ContainerStatus{cs}
				} else {
					s.ContainerStatuses = []v1.ContainerStatus{cs}
				}
				m.SetPodStatus(tc.pod, s)
			}
			set(terminated(name, tc.exitCode))
			set(running(name))
			got, _ := m.GetPodStatus(tc.pod.UID)
			statuses := got.ContainerStatuses
			if init {
				statuses = got.InitContainerStatuses
			}
			if restarted := statuses[0].State.Running != nil; restarted != tc.wantSet {
				t.Errorf("running status accepted = %t, want %t", restarted, tc.wantSet)
			}
		})
	}
}

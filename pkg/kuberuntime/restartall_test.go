package kuberuntime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

func restartAllOn(codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: codes}}
}

// TestComputePodActionsRestartAllContainers: a pod marked for restarting all containers
// resets every instance of its containers, in upstream's order (regular victims, init
// victims, then the regular and init containers whose exit triggered it), killing only
// those not exited, and does nothing else; unmarked, or with the gate off, it syncs as
// usual.
func TestComputePodActionsRestartAllContainers(t *testing.T) {
	pod := newPod("reset", withInit("setup", false), withInit("proxy", true), withContainers("source", "web"),
		withContainerPolicy("source", v1.ContainerRestartPolicyNever, restartAllOn(42)))
	inst := func(name string, state container.State, exitCode, attempt int) *container.ContainerStatus {
		return &container.ContainerStatus{ID: container.ContainerID{Type: "fake", ID: fmt.Sprintf("%s-%d", name, attempt)},
			Name: name, State: state, ExitCode: exitCode, RestartCount: attempt}
	}
	status := &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
		SandboxStatuses: []*cri.PodSandboxStatus{{ID: "sb", State: cri.SandboxReady, IP: "10.0.0.2"}},
		ContainerStatuses: []*container.ContainerStatus{ // newest first, as the runtime lists them
			inst("source", container.ContainerStateExited, 42, 1),
			inst("source", container.ContainerStateExited, 1, 0),
			inst("web", container.ContainerStateRunning, 0, 0),
			inst("proxy", container.ContainerStateRunning, 0, 0),
			inst("setup", container.ContainerStateExited, 0, 0),
		}}
	tests := []struct {
		name   string
		gate   bool
		marked bool
		want   string // id/kill of ContainersToReset, in order
		// unmarked: the source is restarted by its rule alone (gate on), or stays down
		wantStart []int
	}{
		{"marked", true, true, "source-0 web-0/kill setup-0 proxy-0/kill source-1", []int{}},
		{"not marked", true, false, "", []int{0}},
		{"gate off", false, true, "", []int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			h.m.cfg.ContainerRestartRules, h.m.cfg.RestartAllContainers = true, tc.gate
			got := h.m.computePodActions(pod, status, tc.marked)
			var reset []string
			for _, r := range got.ContainersToReset {
				s := r.id.ID
				if r.kill {
					s += "/kill"
				}
				reset = append(reset, s)
			}
			if s := strings.Join(reset, " "); s != tc.want {
				t.Fatalf("ContainersToReset = %q, want %q", s, tc.want)
			}
			if got.KillPod || got.CreateSandbox || len(got.InitContainersToStart) > 0 || len(got.ContainersToKill) > 0 ||
				fmt.Sprint(got.ContainersToStart) != fmt.Sprint(tc.wantStart) {
				t.Errorf("actions = %v, want containers %v started and nothing else", got, tc.wantStart)
			}
		})
	}
}

// TestSyncPodRestartAllContainers runs a pod whose app container exits 42 (its
// RestartAllContainers rule) through the reset: the running containers are stopped with
// no grace period (the 2s minimum, whatever the pod's), each with a Killing "killing"
// event, every instance is removed in order and the sandbox kept; nothing starts in that
// sync. The next sync starts the pod again from its first init container, each container
// counting its attempts on from the removed ones (their kept logs).
func TestSyncPodRestartAllContainers(t *testing.T) {
	h := newHarness(t, true)
	h.m.cfg.ContainerRestartRules, h.m.cfg.RestartAllContainers = true, true
	pod := newPod("reset", withRestartPolicy(v1.RestartPolicyNever), withGrace(30),
		withInit("setup", false), withInit("proxy", true), withContainers("source", "web"),
		withContainerPolicy("source", v1.ContainerRestartPolicyNever, restartAllOn(42)),
		withBehavior("setup", "runFor=1s"), withBehavior("source", "runFor=5s,exitCode=42"),
		withBehavior("web", "stopDelay=60s"), withBehavior("proxy", "stopDelay=60s"))
	h.sync(pod) // setup
	h.step(time.Second)
	h.sync(pod) // proxy
	h.sync(pod) // source, web
	h.step(5 * time.Second)
	if st, _ := h.state(pod, "source"); st != container.ContainerStateExited {
		t.Fatalf("source = %q, want exited", st)
	}
	sandbox := h.status(pod).SandboxStatuses[0].ID

	start := h.clk.Now()
	var result PodSyncResult
	if err := h.await(time.Minute, func(ctx context.Context) error {
		result = h.m.SyncPod(ctx, pod, h.status(pod), true)
		return result.Error()
	}); err != nil {
		t.Fatalf("reset: %v", err)
	}
	var actions []string
	for _, r := range result.SyncResults {
		actions = append(actions, string(r.Action)+" "+r.Target)
	}
	if got, want := strings.Join(actions, ", "), "RemoveContainer web, RemoveContainer setup, RemoveContainer proxy, RemoveContainer source"; got != want {
		t.Errorf("sync results %q, want %q", got, want)
	}
	// web and proxy ignore SIGTERM for a minute: each is killed at the 2s minimum.
	if got := h.clk.Since(start); got != 4*time.Second {
		t.Errorf("reset took %v, want 4s (two kills at the 2s minimum)", got)
	}
	// The event store folds the two (alike but for their container) into one, counted.
	killings := 0
	for _, e := range h.events.List() {
		if e.Reason == "Killing" {
			if e.Message != "killing" {
				t.Errorf("Killing event %q, want upstream's \"killing\"", e.Message)
			}
			killings += int(e.Count)
		}
	}
	if killings != 2 {
		t.Errorf("%d Killing events, want 2 (web and proxy)", killings)
	}
	after := h.status(pod)
	if len(after.ContainerStatuses) != 0 {
		t.Errorf("%d container instances left after the reset, want none", len(after.ContainerStatuses))
	}
	if sb := after.SandboxStatuses; len(sb) != 1 || sb[0].ID != sandbox || sb[0].State != cri.SandboxReady {
		t.Errorf("sandboxes after the reset %+v, want %s still ready", sb, sandbox)
	}

	// The pod starts again from its first init container, in the same sandbox.
	r := h.sync(pod)
	if s := startResult(r, "setup"); s == nil || s.Error != nil {
		t.Fatalf("setup not started after the reset: %+v", r.SyncResults)
	}
	if startResult(r, "source") != nil || startResult(r, "web") != nil {
		t.Errorf("app containers started before initialization: %+v", r.SyncResults)
	}
	if st, attempt := h.state(pod, "setup"); st != container.ContainerStateRunning || attempt != 1 {
		t.Errorf("setup = %q attempt %d, want running attempt 1 (counting on from the removed one)", st, attempt)
	}
	h.step(time.Second)
	h.sync(pod) // proxy
	h.sync(pod) // source, web
	for name, want := range map[string]int{"proxy": 1, "source": 1, "web": 1} {
		if st, attempt := h.state(pod, name); st != container.ContainerStateRunning || attempt != want {
			t.Errorf("%s = %q attempt %d, want running attempt %d", name, st, attempt, want)
		}
	}
	if sb := h.status(pod).SandboxStatuses; len(sb) != 1 || sb[0].ID != sandbox {
		t.Errorf("sandboxes %+v, want the pod's one sandbox %s", sb, sandbox)
	}

	// Once the pod's content is removed, so are its kept logs.
	if err := h.m.GarbageCollect(h.ctx, contentRemoved{"uid-reset": true}, true); err != nil {
		t.Fatal(err)
	}
	if n := h.m.logs.restartCount(pod.UID, "setup"); n != 0 {
		t.Errorf("kept restart count %d after the pod's GC, want none", n)
	}
}

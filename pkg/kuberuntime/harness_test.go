package kuberuntime

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
)

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// harness is a Manager over the simulator's fake runtime on a fake clock.
type harness struct {
	t      testing.TB
	ctx    context.Context
	clk    *testclock.FakeClock
	rt     *fake.Runtime
	m      *Manager
	events *events.Store
	reg    *metrics.Registry
}

func newHarness(t testing.TB, sidecars bool) *harness {
	t.Helper()
	clk := testclock.NewFakeClock(epoch)
	rt, err := fake.New(fake.Config{Clock: clk, Seed: 1})
	if err != nil {
		t.Fatalf("fake.New: %v", err)
	}
	store := events.NewStore(clk, "node-1", 0)
	reg := metrics.NewRegistry("kubelet_")
	m, err := NewManager(Config{Runtime: rt, Images: rt, View: rt, Clock: clk, Recorder: store, Registry: reg, SidecarContainers: sidecars})
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	return &harness{t: t, ctx: context.Background(), clk: clk, rt: rt, m: m, events: store, reg: reg}
}

func (h *harness) status(pod *v1.Pod) *container.PodStatus {
	h.t.Helper()
	s, err := h.rt.GetPodStatus(h.ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		h.t.Fatalf("GetPodStatus: %v", err)
	}
	return s
}

func (h *harness) sync(pod *v1.Pod) PodSyncResult {
	h.t.Helper()
	return h.m.SyncPod(h.ctx, pod, h.status(pod), false)
}

// step moves virtual time and lets the runtime apply what fell due.
func (h *harness) step(d time.Duration) {
	h.clk.Step(d)
	h.rt.Advance()
}

// state is the newest instance of a container: its state and attempt ("" when absent).
func (h *harness) state(pod *v1.Pod, name string) (container.State, int) {
	s := h.status(pod).FindContainerStatusByName(name)
	if s == nil {
		return "", -1
	}
	return s.State, s.RestartCount
}

// eventReasons lists the reasons of recorded events whose message contains substr.
func (h *harness) eventMessages(reason string) []string {
	var out []string
	for _, e := range h.events.List() {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// startResult returns the StartContainer result for a container, or nil.
func startResult(r PodSyncResult, name string) *SyncResult {
	for _, s := range r.SyncResults {
		if s.Action == StartContainer && s.Target == name {
			return s
		}
	}
	return nil
}

type podOpt func(*v1.Pod)

func newPod(name string, opts ...podOpt) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "app", Image: testImage}},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

func withContainers(names ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers = nil
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: testImage})
		}
	}
}

func withInit(name string, restartable bool) podOpt {
	return func(p *v1.Pod) {
		c := v1.Container{Name: name, Image: testImage}
		if restartable {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func withBehavior(container, script string) podOpt {
	return func(p *v1.Pod) { p.Annotations[behavior.AnnotationKey(container)] = script }
}

func withRestartPolicy(rp v1.RestartPolicy) podOpt {
	return func(p *v1.Pod) { p.Spec.RestartPolicy = rp }
}

func withGrace(s int64) podOpt {
	return func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}

// await runs fn (a call that waits for the runtime, such as a stop with grace) as a task
// beside the runtime's loop, moving the fake clock until fn returns.
func (h *harness) await(max time.Duration, fn func(ctx context.Context) error) error {
	h.t.Helper()
	rt := runner.Loop{Name: "runtime", Due: h.rt.Due, Step: h.rt.Step, Wake: h.rt.Wake()}
	return simtest.Await(h.t, h.clk, []runner.Loop{rt}, max, fn)
}

func contains(list []string, substr string) bool {
	for _, s := range list {
		if strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

// testImage is an image the runtime's catalogue does not know: its containers are not
// simulated programs, so they do what these tests of the kubelet's mechanics expect of an
// unscripted container (an app runs until stopped, an init container completes after the
// runtime's init duration) unless a behaviour annotation scripts them.
const testImage = "ghcr.io/minikubelet/test-app:1.0"

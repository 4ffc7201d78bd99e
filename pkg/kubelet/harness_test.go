package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// epoch is the fake clock's start: fixed so event and status times are reproducible.
var epoch = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// testNode is the node name of every test kubelet.
const testNode = "node"

// loadConfig builds a configuration exactly as the daemon does (config.Load), with a
// manifest directory, a free port and the extra flags.
func loadConfig(t testing.TB, dir string, flags ...string) (*config.Config, featuregate.MutableFeatureGate) {
	t.Helper()
	gate := features.NewFeatureGate()
	args := append([]string{"--pod-manifest-path=" + dir, "--hostname-override=" + testNode, "--read-only-port=0"}, flags...)
	cfg, err := config.Load(args, gate, nil)
	if err != nil {
		t.Fatalf("config.Load(%q): %v", args, err)
	}
	return cfg, gate
}

// harness drives the kubelet's loop table on a fake clock, single-threaded, exactly as
// simulate mode does: a round steps every loop that falls due while virtual time moves on.
type harness struct {
	t   *testing.T
	ctx context.Context
	clk *clocktesting.FakeClock
	k   *Kubelet
	sim *runner.Sim
	dir string
}

func newHarness(t *testing.T, flags ...string) *harness {
	t.Helper()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, flags...)
	return newHarnessWithConfig(t, dir, cfg, gate)
}

// newHarnessWithConfig builds the kubelet from cfg; mods set the Config's internal options.
func newHarnessWithConfig(t *testing.T, dir string, cfg *config.Config, gate featuregate.FeatureGate, mods ...func(*Config)) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	kc := Config{Config: cfg, Gate: gate, Clock: clk}
	for _, m := range mods {
		m(&kc)
	}
	k, err := New(kc)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(k.Stop)
	ctx := klog.NewContext(context.Background(), klog.Background())
	k.Start(ctx)
	return &harness{t: t, ctx: ctx, clk: clk, k: k, dir: dir, sim: runner.NewSim(clk, k.Loops())}
}

// write puts a manifest file into the watched directory and tells the file source, as
// its fsnotify watch does in the daemon.
func (h *harness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.k.FileSource().Trigger()
}

func (h *harness) remove(name string) {
	h.t.Helper()
	if err := os.Remove(filepath.Join(h.dir, name)); err != nil {
		h.t.Fatal(err)
	}
	h.k.FileSource().Trigger()
}

// round runs the loop table for d of virtual time.
func (h *harness) round(d time.Duration) {
	h.t.Helper()
	if err := h.sim.RunUntil(h.ctx, h.clk.Now().Add(d), nil); err != nil {
		h.t.Fatalf("run loops: %v", err)
	}
}

// drain steps every loop due now until none is, without moving the clock.
func (h *harness) drain() {
	h.t.Helper()
	h.round(0)
}

// until runs 1s rounds until cond holds, failing after max rounds with what describe says.
func (h *harness) until(max int, what string, cond func() bool, describe func() string) {
	h.t.Helper()
	for i := 0; i < max; i++ {
		if cond() {
			return
		}
		h.round(time.Second)
	}
	if cond() {
		return
	}
	h.t.Fatalf("after %d rounds: %s never happened; %s", max, what, describe())
}

// pod returns the /pods view of the pod with the full name.
func (h *harness) pod(name string) *v1.Pod {
	for _, p := range h.k.GetPods() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func (h *harness) phase(name string) v1.PodPhase {
	if p := h.pod(name); p != nil {
		return p.Status.Phase
	}
	return ""
}

func (h *harness) describe() string {
	var b strings.Builder
	for _, p := range h.k.GetPods() {
		b.WriteString(p.Name + "=" + string(p.Status.Phase) + " ")
		for _, cs := range p.Status.ContainerStatuses {
			b.WriteString(cs.Name + ":" + containerState(cs) + " ")
		}
	}
	b.WriteString("| runtime: " + h.runtimeSummary())
	return b.String()
}

func containerState(cs v1.ContainerStatus) string {
	switch {
	case cs.State.Running != nil:
		return "running"
	case cs.State.Terminated != nil:
		return "terminated(" + cs.State.Terminated.Reason + ")"
	case cs.State.Waiting != nil:
		return "waiting(" + cs.State.Waiting.Reason + ")"
	}
	return "none"
}

// runtimeContainers lists the runtime's containers (all states).
func (h *harness) runtimeContainers() []cri.Container {
	h.t.Helper()
	cs, err := h.k.Runtime().ListContainers(h.ctx, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return cs
}

func (h *harness) runtimeSandboxes() []cri.PodSandbox {
	h.t.Helper()
	sbs, err := h.k.Runtime().ListPodSandbox(h.ctx, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return sbs
}

func (h *harness) runningContainers() int {
	n := 0
	for _, c := range h.runtimeContainers() {
		if c.State == cri.ContainerRunning {
			n++
		}
	}
	return n
}

// runtimeSummary lists the runtime's sandboxes and containers, or why it cannot (a test
// may have injected a fault on the listing).
func (h *harness) runtimeSummary() string {
	var b strings.Builder
	sbs, err := h.k.Runtime().ListPodSandbox(h.ctx, nil)
	if err != nil {
		return "list sandboxes: " + err.Error()
	}
	for _, sb := range sbs {
		fmt.Fprintf(&b, "%s[%v] ", sb.Metadata.Name, sb.State)
	}
	cs, err := h.k.Runtime().ListContainers(h.ctx, nil)
	if err != nil {
		return b.String() + "list containers: " + err.Error()
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "%s(%v) ", c.Metadata.Name, c.State)
	}
	return b.String()
}

// podManifest is a one-container pod manifest.
func podManifest(name, image, extra string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  containers:
  - name: main
    image: ` + image + `
` + extra
}

// sleeper makes the "main" container of podManifest run until it is stopped, as a
// manifest says `command: [sleep, infinity]` (busybox's own command, sh, exits at once).
const sleeper = "    command: [sleep, infinity]\n"

// withRequests gives the "main" container requests (YAML indented for podManifest).
func withRequests(cpu, memory string) string {
	return "    resources:\n      requests:\n        cpu: " + cpu + "\n        memory: " + memory + "\n"
}

func condition(pod *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func findEvent(h *harness, reason, objectName string) *v1.Event {
	for _, e := range h.k.Events().List() {
		if e.Reason == reason && e.InvolvedObject.Name == objectName {
			e := e
			return &e
		}
	}
	return nil
}

func faultSpec(method, typ string) fault.Spec {
	return fault.Spec{Method: method, Type: fault.Type(typ)}
}

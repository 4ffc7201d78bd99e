package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
)

// daemon is a kubelet running with Run (goroutines, fsnotify) on a fake clock that a
// driver goroutine moves forward in small steps, so minutes of virtual time pass in a
// second or two of wall time whatever the machine's speed.
type daemon struct {
	t       *testing.T
	k       *Kubelet
	clk     *clocktesting.FakeClock
	dir     string
	cancel  context.CancelFunc
	runDone chan error
	drvStop chan struct{}
	drvDone chan struct{}
}

// virtualStep is how far the driver moves the clock per wall-clock millisecond.
const virtualStep = 20 * time.Millisecond

func startDaemon(t *testing.T, dir string, cfg *config.Config, gate featuregate.FeatureGate) *daemon {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	k, err := New(Config{Config: cfg, Gate: gate, Clock: clk, WatchManifests: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	d := &daemon{t: t, k: k, clk: clk, dir: dir, cancel: cancel,
		runDone: make(chan error, 1), drvStop: make(chan struct{}), drvDone: make(chan struct{})}
	go func() { d.runDone <- k.Run(ctx) }()
	go func() {
		defer close(d.drvDone)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-d.drvStop:
				return
			case <-tick.C:
				clk.Step(virtualStep)
			}
		}
	}()
	t.Cleanup(func() { d.stop() })
	return d
}

// stop cancels Run, waits for it with a bounded wait while the clock keeps moving (a
// graceful shutdown needs time to pass), then stops the driver. Safe to call twice.
func (d *daemon) stop() error {
	d.t.Helper()
	d.cancel()
	var err error
	select {
	case err = <-d.runDone:
		d.runDone <- err // let a second stop see it
	case <-time.After(30 * time.Second):
		d.t.Fatal("Run did not return within 30s of the context ending")
	}
	select {
	case <-d.drvDone:
	default:
		close(d.drvStop)
		<-d.drvDone
	}
	return err
}

// waitFor polls cond (wall clock) until it holds or the deadline passes.
func (d *daemon) waitFor(timeout time.Duration, what string, cond func() bool, describe func() string) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			d.t.Fatalf("%s did not happen within %v (virtual %v): %s", what, timeout, d.clk.Since(epoch).Round(time.Second), describe())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (d *daemon) write(name, content string) {
	d.t.Helper()
	if err := os.WriteFile(filepath.Join(d.dir, name), []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

func (d *daemon) countPhase(phase v1.PodPhase) int {
	n := 0
	for _, p := range d.k.GetPods() {
		if p.Status.Phase == phase {
			n++
		}
	}
	return n
}

func (d *daemon) runtimeCounts() (sandboxes, containers, running int) {
	ctx := context.Background()
	sbs, err := d.k.Runtime().ListPodSandbox(ctx, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	cs, err := d.k.Runtime().ListContainers(ctx, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, c := range cs {
		if c.State == cri.ContainerRunning {
			running++
		}
	}
	return len(sbs), len(cs), running
}

func (d *daemon) summary() string {
	sbs, cs, running := d.runtimeCounts()
	return fmt.Sprintf("pods=%d running=%d pending=%d; runtime sandboxes=%d containers=%d running=%d; workers=%d",
		len(d.k.GetPods()), d.countPhase(v1.PodRunning), d.countPhase(v1.PodPending), sbs, cs, running, d.k.PodWorkers().RunningWorkers())
}

// checkNoGoroutineLeak waits until the goroutine count is back to base, else fails with
// the stacks.
func checkNoGoroutineLeak(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines left, %d before the kubelet started:\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestManyManifests is issue 5's scale check: 200 manifests dropped into the watched
// directory all run; removing them empties the runtime, and nothing is left running
// after the shutdown.
func TestManyManifests(t *testing.T) {
	const n = 200
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, fmt.Sprintf("--max-pods=%d", n))
	d := startDaemon(t, dir, cfg, gate)

	start := time.Now()
	for i := 0; i < n; i++ {
		d.write(fmt.Sprintf("pod-%03d.yaml", i), podManifest(fmt.Sprintf("pod-%03d", i), "busybox", withRequests("10m", "16Mi")))
	}
	d.waitFor(20*time.Second, fmt.Sprintf("%d pods Running", n), func() bool { return d.countPhase(v1.PodRunning) == n }, d.summary)
	t.Logf("%d pods Running after %v wall, %v virtual", n, time.Since(start).Round(time.Millisecond), d.clk.Since(epoch).Round(time.Second))
	if _, _, running := d.runtimeCounts(); running != n {
		t.Errorf("runtime runs %d containers, want %d", running, n)
	}

	for i := 0; i < n; i++ {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("pod-%03d.yaml", i))); err != nil {
			t.Fatal(err)
		}
	}
	d.waitFor(20*time.Second, "every pod gone and the runtime empty", func() bool {
		sbs, cs, _ := d.runtimeCounts()
		return len(d.k.GetPods()) == 0 && sbs == 0 && cs == 0 && d.k.PodWorkers().RunningWorkers() == 0
	}, d.summary)
	t.Logf("runtime empty after %v wall, %v virtual", time.Since(start).Round(time.Millisecond), d.clk.Since(epoch).Round(time.Second))

	if err := d.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	checkNoGoroutineLeak(t, base)
}

// TestGracefulShutdown: with GracefulNodeShutdown and a shutdownGracePeriod, ending the
// context first terminates the pods (marking them with the shutdown reason), then stops
// every loop; no goroutine is left.
func TestGracefulShutdown(t *testing.T) {
	tests := []struct {
		name     string
		grace    time.Duration
		gate     string
		wantKill bool
	}{
		{"enabled", 20 * time.Second, "true", true},
		{"gate off", 20 * time.Second, "false", false},
		{"no grace period", 0, "true", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			dir := t.TempDir()
			cfg, gate := loadConfig(t, dir, "--feature-gates=GracefulNodeShutdown="+tt.gate)
			cfg.Kubelet.ShutdownGracePeriod.Duration = tt.grace
			d := startDaemon(t, dir, cfg, gate)
			d.write("web.yaml", podManifest("web", "nginx", ""))
			d.write("slow.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: slow
  annotations:
    minikubelet.io/behavior.main: "stopDelay=5s"
spec:
  containers:
  - name: main
    image: nginx
`)
			d.waitFor(10*time.Second, "pods Running", func() bool { return d.countPhase(v1.PodRunning) == 2 }, d.summary)
			if err := d.stop(); err != nil {
				t.Fatalf("Run = %v", err)
			}
			_, _, running := d.runtimeCounts()
			if tt.wantKill {
				if running != 0 {
					t.Errorf("%d containers still running after a graceful shutdown", running)
				}
				if !d.k.ShutdownManager().ShuttingDown() {
					t.Error("the shutdown manager did not run")
				}
				for _, p := range d.k.GetPods() {
					if p.Status.Reason != "Terminated" {
						t.Errorf("pod %s reason = %q, want Terminated", p.Name, p.Status.Reason)
					}
				}
				node := d.k.NodeStatus().GetNode()
				for _, c := range node.Status.Conditions {
					if c.Type == v1.NodeReady && (c.Status != v1.ConditionFalse || !strings.Contains(c.Message, "node is shutting down")) {
						t.Errorf("Ready = %+v, want False with node is shutting down", c)
					}
				}
			} else if running != 2 {
				t.Errorf("%d containers running after a shutdown without graceful termination, want 2 (pods are left as they are)", running)
			}
			checkNoGoroutineLeak(t, base)
		})
	}
}

// TestRunWithEventedPLEG: with the EventedPLEG gate the daemon runs pods through the
// event stream (the generic PLEG relists only every 300s) and exports which PLEG is active.
func TestRunWithEventedPLEG(t *testing.T) {
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, "--feature-gates=EventedPLEG=true")
	d := startDaemon(t, dir, cfg, gate)
	d.write("web.yaml", podManifest("web", "nginx", ""))
	d.waitFor(10*time.Second, "web Running", func() bool { return d.countPhase(v1.PodRunning) == 1 }, d.summary)
	if !d.k.EventedPLEG().InUse() {
		t.Error("the evented PLEG is not in use")
	}
	if err := d.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	checkNoGoroutineLeak(t, base)
}

// TestRunRefusesSynchronous: a kubelet built for stepping cannot also run as a daemon.
func TestRunRefusesSynchronous(t *testing.T) {
	h := newHarness(t)
	if err := h.k.Run(context.Background()); err != ErrSynchronous {
		t.Errorf("Run = %v, want ErrSynchronous", err)
	}
}

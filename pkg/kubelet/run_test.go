package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/record"
)

// daemon is a kubelet running with Run as the daemon does: its owner goroutine stepping the
// loop table on the real clock, fsnotify watching the manifest directory. The test reads it
// through the edges (GetPods, Inspect), as the HTTP handlers do.
type daemon struct {
	t       *testing.T
	k       *Kubelet
	dir     string
	start   time.Time
	cancel  context.CancelFunc
	runDone chan error
}

func startDaemon(t *testing.T, dir string, cfg *config.Config, gate featuregate.FeatureGate) *daemon {
	t.Helper()
	k, err := New(Config{Config: cfg, Gate: gate, Clock: clock.RealClock{}, WatchManifests: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	d := &daemon{t: t, k: k, dir: dir, start: time.Now(), cancel: cancel, runDone: make(chan error, 1)}
	go func() { d.runDone <- k.Run(ctx) }()
	t.Cleanup(func() { d.stop() })
	select { // the test reads the node through the edges: wait for the owner
	case <-k.Owned():
	case err := <-d.runDone:
		d.runDone <- err // for stop
		t.Fatalf("Run returned before the node had an owner: %v", err)
	}
	return d
}

// stop cancels Run and waits for it (a graceful shutdown takes its time). Safe to call twice.
func (d *daemon) stop() error {
	d.t.Helper()
	d.cancel()
	var err error
	select {
	case err = <-d.runDone:
		d.runDone <- err // let a second stop see it
	case <-time.After(eventually.Timeout):
		d.t.Fatalf("Run did not return within %v of the context ending", eventually.Timeout)
	}
	return err
}

// waitFor waits for what the daemon's goroutines do.
func (d *daemon) waitFor(timeout time.Duration, what string, cond func() bool, describe func() string) {
	d.t.Helper()
	eventually.Within(d.t, timeout, what, func() (bool, string) {
		if cond() {
			return true, ""
		}
		return false, describe()
	})
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

// runtimeCounts counts the runtime's sandboxes (and the ready ones) and containers (and the
// running ones).
func (d *daemon) runtimeCounts() (sandboxes, ready, containers, running int) {
	ctx := context.Background()
	sbs, err := d.k.Runtime().ListPodSandbox(ctx, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, sb := range sbs {
		if sb.State == cri.SandboxReady {
			ready++
		}
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
	return len(sbs), ready, len(cs), running
}

func (d *daemon) summary() string {
	sbs, ready, cs, running := d.runtimeCounts()
	var syncs, terminations int
	d.k.Inspect(func() {
		syncs, terminations = d.k.PodWorkers().SyncsInFlight(), d.k.PodWorkers().UnfinishedTerminations()
	})
	return fmt.Sprintf("pods=%d running=%d pending=%d; runtime sandboxes=%d (ready %d) containers=%d (running %d); syncs in flight=%d, terminations=%d",
		len(d.k.GetPods()), d.countPhase(v1.PodRunning), d.countPhase(v1.PodPending), sbs, ready, cs, running, syncs, terminations)
}

// checkNoGoroutineLeak waits until the goroutine count is back to base, else fails with
// the stacks.
func checkNoGoroutineLeak(t *testing.T, base int) {
	t.Helper()
	eventually.Within(t, 5*time.Second, "the goroutine count back to its value before the kubelet started", func() (bool, string) {
		if runtime.NumGoroutine() <= base {
			return true, ""
		}
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		return false, fmt.Sprintf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:n])
	})
}

// TestManyManifests is issue 5's scale check: 200 manifests dropped into the watched
// directory all run; removing them terminates every pod, and no goroutine is left after
// the shutdown.
func TestManyManifests(t *testing.T) {
	const n = 200
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, fmt.Sprintf("--max-pods=%d", n))
	d := startDaemon(t, dir, cfg, gate)

	start := time.Now()
	for i := 0; i < n; i++ {
		d.write(fmt.Sprintf("pod-%03d.yaml", i), podManifest(fmt.Sprintf("pod-%03d", i), "busybox", sleeper+withRequests("10m", "16Mi")))
	}
	d.waitFor(20*time.Second, fmt.Sprintf("%d pods Running", n), func() bool { return d.countPhase(v1.PodRunning) == n }, d.summary)
	t.Logf("%d pods Running after %v", n, time.Since(start).Round(time.Millisecond))
	if _, _, _, running := d.runtimeCounts(); running != n {
		t.Errorf("runtime runs %d containers, want %d", running, n)
	}

	for i := 0; i < n; i++ {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("pod-%03d.yaml", i))); err != nil {
			t.Fatal(err)
		}
	}
	// Terminated: nothing runs. (Container GC removes what is left a minute later.)
	d.waitFor(20*time.Second, "every pod gone and nothing running", func() bool {
		_, ready, _, running := d.runtimeCounts()
		unfinished := -1
		d.k.Inspect(func() { unfinished = d.k.PodWorkers().UnfinishedTerminations() })
		return len(d.k.GetPods()) == 0 && ready == 0 && running == 0 && unfinished == 0
	}, d.summary)
	t.Logf("every pod terminated after %v", time.Since(start).Round(time.Millisecond))

	if err := d.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	checkNoGoroutineLeak(t, base)
}

// TestReadEdgesWhileTheOwnerSteps reads the node as the HTTP handlers do (/pods, /node,
// the lease, a log's pod lookup) from several goroutines while the owner starts pods. The
// pod, status and node-status managers keep no locks: the reads go through the owner or
// the objects it published, which -race (make test) checks. Every answer is whole: a pod
// listed with a status has the status of that pod.
func TestReadEdgesWhileTheOwnerSteps(t *testing.T) {
	const n = 50
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, fmt.Sprintf("--max-pods=%d", n))
	d := startDaemon(t, dir, cfg, gate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var readers sync.WaitGroup
	bad := make(chan string, 4)
	for r := 0; r < 4; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for ctx.Err() == nil {
				for _, p := range d.k.GetPods() {
					if p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
						select {
						case bad <- fmt.Sprintf("%s Running with %d container statuses", p.Name, len(p.Status.ContainerStatuses)):
						default:
						}
					}
				}
				if items := d.k.PodListItems(); len(items) > n {
					select {
					case bad <- fmt.Sprintf("/pods lists %d pods of %d", len(items), n):
					default:
					}
				}
				d.k.NodeStatus().GetNode()
				d.k.NodeStatus().GetLease()
				d.k.podByName("default", "pod-00-"+d.k.NodeName())
			}
		}()
	}
	for i := 0; i < n; i++ {
		d.write(fmt.Sprintf("pod-%02d.yaml", i), podManifest(fmt.Sprintf("pod-%02d", i), "busybox", sleeper))
	}
	d.waitFor(20*time.Second, fmt.Sprintf("%d pods Running", n), func() bool { return d.countPhase(v1.PodRunning) == n }, d.summary)
	cancel()
	readers.Wait()
	close(bad)
	for msg := range bad {
		t.Error(msg)
	}
	// A static pod's name ends with the node's.
	if name := "pod-00-" + d.k.NodeName(); d.k.podByName("default", name) == nil {
		t.Errorf("podByName(default, %s) = nil, want the pod", name)
	}
}

// TestStatsSummaryOnTheOwner: the eviction manager reads the stats summary on the owner, which
// lists the pods as /stats/summary does from an edge; on the owner that reading must not wait
// for the owner (a daemon under memory pressure hung there).
func TestStatsSummaryOnTheOwner(t *testing.T) {
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir)
	d := startDaemon(t, dir, cfg, gate)
	d.write("web.yaml", podManifest("web", "busybox", sleeper+withRequests("10m", "16Mi")))
	d.waitFor(20*time.Second, "web Running", func() bool { return d.countPhase(v1.PodRunning) == 1 }, d.summary)
	done := make(chan error, 1)
	owner := d.k.owner.Load()
	owner.Post(func(ctx context.Context) {
		usage, err := d.k.podUsage(ctx)
		if err == nil && len(usage) != 1 {
			err = fmt.Errorf("usage of %d pods, want 1", len(usage))
		}
		done <- err
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(eventually.Timeout):
		t.Fatal("the stats summary on the owner never returned")
	}
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
    minikubelet.io/behavior.main: "stopDelay=1s"
spec:
  containers:
  - name: main
    image: nginx
`)
			d.waitFor(10*time.Second, "pods Running", func() bool { return d.countPhase(v1.PodRunning) == 2 }, d.summary)
			if err := d.stop(); err != nil {
				t.Fatalf("Run = %v", err)
			}
			_, _, _, running := d.runtimeCounts()
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

// TestRunWithEventedPLEG: with the EventedPLEG gate the daemon runs pods with the CRI event
// watcher on (v1.37) and stops it with the rest; its goroutines do not outlive the daemon.
func TestRunWithEventedPLEG(t *testing.T) {
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, "--feature-gates=EventedPLEG=true")
	d := startDaemon(t, dir, cfg, gate)
	d.write("web.yaml", podManifest("web", "nginx", ""))
	d.waitFor(10*time.Second, "web Running", func() bool { return d.countPhase(v1.PodRunning) == 1 }, d.summary)
	if !d.k.EventedPLEG().Watching() {
		t.Error("the evented PLEG is not watching")
	}
	if err := d.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	checkNoGoroutineLeak(t, base)
}

// TestShutdownIsRecorded: the shutdown signal reaches the flight recorder through
// Kubelet.Shutdown, whoever sends it (the daemon's owner or a simulate step), once.
func TestShutdownIsRecorded(t *testing.T) {
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir)
	path := filepath.Join(t.TempDir(), "rec.yaml")
	var rec *record.Recorder
	h := newHarnessWithConfig(t, dir, cfg, gate, func(kc *Config) {
		r, err := record.Open(record.Options{Path: path, MaxBytes: 1 << 20, Clock: kc.Clock, Node: "node"})
		if err != nil {
			t.Fatal(err)
		}
		rec, kc.Recorder = r, r
	})
	h.k.Shutdown(h.ctx, h.clk.Now())
	h.k.Shutdown(h.ctx, h.clk.Now()) // a second signal changes nothing
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "shutdown: true"); n != 1 {
		t.Errorf("the recording holds %d shutdown steps, want 1:\n%s", n, data)
	}
}

package podworkers

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/syncbuf"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// captureKlog sends the global klog output (with headers) to the returned buffer until t
// ends. Tests using it must not run in parallel.
func captureKlog(t *testing.T) *syncbuf.Buffer {
	t.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	saved := map[string]string{}
	for name, val := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "one_output": "true"} {
		saved[name] = fs.Lookup(name).Value.String()
		if err := fs.Set(name, val); err != nil {
			t.Fatalf("set klog flag %s: %v", name, err)
		}
	}
	buf := &syncbuf.Buffer{}
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.Flush()
		for name, val := range saved {
			_ = fs.Set(name, val)
		}
		klog.SetOutput(os.Stderr)
	})
	return buf
}

// TestStopInterruptsSyncsQuietly: the daemon's shutdown stops the workers while syncs are
// in flight (waiting for fresh cache data, or waiting for containers to stop); their
// interruption is expected, not an "Error syncing pod" error.
func TestStopInterruptsSyncsQuietly(t *testing.T) {
	tests := []struct {
		name string
		// park leaves the pod's kill in flight.
		park func(t *testing.T, e *env)
		// inFlight is how many syncs wait for the runtime when Stop is called.
		inFlight int
	}{
		{"waiting for the status cache", func(t *testing.T, e *env) {
			pod := testPod("web")
			e.relist()
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			e.step()
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{}})
			if calls := e.step(); len(calls) != 0 || e.cache.NumWaiters() != 1 {
				t.Fatalf("calls %+v, %d cache waiters; want the kill waiting for the cache", calls, e.cache.NumWaiters())
			}
		}, 0},
		{"stopping the containers", func(t *testing.T, e *env) {
			e.h.hold("terminating") // never completed: the stop is still under way at Stop
			pod := testPod("web")
			e.relist()
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			e.step()
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{}})
			e.relist()
			if calls := e.step(); len(calls) != 1 || calls[0].kind != "terminating" {
				t.Fatalf("calls %+v, want terminating", calls)
			}
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			log := captureKlog(t)
			tt.park(t, e)
			if n := e.p.UnfinishedTerminations(); n != 1 {
				t.Errorf("UnfinishedTerminations = %d while the kill is in flight, want 1", n)
			}
			if n := e.p.SyncsInFlight(); n != tt.inFlight {
				t.Errorf("SyncsInFlight = %d, want %d", n, tt.inFlight)
			}
			e.p.Stop()
			klog.Flush()
			for _, line := range strings.Split(log.String(), "\n") {
				if strings.HasPrefix(line, "E") {
					t.Errorf("error logged by a sync interrupted by Stop: %s", line)
				}
			}
			for _, c := range e.h.list() {
				if !c.returned {
					t.Errorf("%s call still in flight after Stop returned", c.kind)
				}
			}
		})
	}
}

// TestStopAbandonsSyncsInFlight: Stop ends every sync waiting for the runtime before it
// returns (their tasks, and the goroutines behind them, are gone), leaves the workers idle for
// good and makes later updates no-ops.
func TestStopAbandonsSyncsInFlight(t *testing.T) {
	before := runtime.NumGoroutine()
	e := newEnv(t)
	e.cache.UpdateTime(e.clk.Now())
	const n = 5
	var ops []*task.Op
	for i := 0; i < n; i++ {
		ops = append(ops, e.h.hold("sync"))
		e.p.UpdatePod(UpdatePodOptions{Pod: testPod(fmt.Sprint("p", i)), UpdateType: kubetypes.SyncPodCreate})
	}
	e.step()
	if got := e.p.SyncsInFlight(); got != n {
		t.Fatalf("SyncsInFlight = %d, want %d", got, n)
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: testPod("p0"), UpdateType: kubetypes.SyncPodUpdate}) // pending at Stop
	e.p.Stop()
	e.p.Stop() // idempotent
	if got := e.p.SyncsInFlight(); got != 0 {
		t.Fatalf("SyncsInFlight = %d after Stop, want 0", got)
	}
	for _, c := range e.h.list() {
		if !c.returned || !errors.Is(c.err, task.ErrStopped) {
			t.Errorf("call %+v, want returned with task.ErrStopped", c)
		}
	}
	if !e.p.Due(e.clk.Now()).IsZero() {
		t.Fatal("stopped pod workers are due")
	}
	calls := len(e.h.list())
	e.p.Step(e.ctx) // the caller should not, but a late step must do nothing
	for _, op := range ops {
		op.Complete(nil) // a late completion must not resume anything
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: testPod("late"), UpdateType: kubetypes.SyncPodCreate})
	e.p.Step(e.ctx)
	if _, known := e.p.State("uid-late"); known || len(e.h.list()) != calls {
		t.Fatal("an update after Stop was accepted or a step after Stop synced")
	}
	// Each task runs on a coroutine goroutine; Stop must have ended them all.
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("%d goroutines after Stop, %d before the syncs started", got, before)
	}
}

// TestUnfinishedTerminations counts the pods being terminated until their worker is done.
func TestUnfinishedTerminations(t *testing.T) {
	e := newEnv(t)
	pod, other := testPod("web"), testPod("db")
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.p.UpdatePod(UpdatePodOptions{Pod: other, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step()
	if n := e.p.UnfinishedTerminations(); n != 0 {
		t.Fatalf("UnfinishedTerminations = %d with no termination requested", n)
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{}})
	for i := 0; i < 5 && e.p.UnfinishedTerminations() > 0; i++ {
		if n := e.p.UnfinishedTerminations(); n != 1 {
			t.Fatalf("UnfinishedTerminations = %d while web terminates, want 1", n)
		}
		e.relist()
		e.step()
	}
	if n := e.p.UnfinishedTerminations(); n != 0 || !e.p.ShouldPodBeFinished(pod.UID) {
		t.Errorf("UnfinishedTerminations = %d (finished=%t) after terminating and terminated ran, want 0", n, e.p.ShouldPodBeFinished(pod.UID))
	}
}

package podworkers

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

// syncBuffer is a bytes.Buffer safe for klog's writers and the test's reads at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureKlog sends the global klog output (with headers) to the returned buffer until t
// ends. Tests using it must not run in parallel.
func captureKlog(t *testing.T) *syncBuffer {
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
	buf := &syncBuffer{}
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
// in flight (waiting for fresh cache data, or stopping containers); their context errors
// are expected, not "Error syncing pod" errors. A real sync error still is one.
func TestStopInterruptsSyncsQuietly(t *testing.T) {
	tests := []struct {
		name string
		// park leaves the pod's worker inside a sync.
		park func(t *testing.T, e *env)
	}{
		{"waiting for the status cache", func(t *testing.T, e *env) {
			pod := testPod("web")
			e.relist()
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			waitFor(t, "the first sync", func() bool { return e.p.idle(pod.UID) })
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{}})
			waitFor(t, "the worker to wait for the cache", func() bool { return e.cache.NumWaiters() == 1 })
		}},
		{"stopping the containers", func(t *testing.T, e *env) {
			e.h.mu.Lock()
			e.h.blockKind, e.h.block, e.h.entered = "terminating", make(chan struct{}), make(chan call, 10)
			e.h.mu.Unlock()
			pod := testPod("web")
			e.relist()
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			<-e.h.entered
			waitFor(t, "the first sync", func() bool { return e.p.idle(pod.UID) })
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{}})
			e.relist()
			if c := <-e.h.entered; c.kind != "terminating" {
				t.Fatalf("entered %s, want terminating", c.kind)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			log := captureKlog(t)
			tt.park(t, e)
			if n := e.p.UnfinishedTerminations(); n != 1 {
				t.Errorf("UnfinishedTerminations = %d while the kill is in flight, want 1", n)
			}
			e.p.Stop()
			klog.Flush()
			for _, line := range strings.Split(log.String(), "\n") {
				if strings.HasPrefix(line, "E") {
					t.Errorf("error logged by a sync interrupted by Stop: %s", line)
				}
			}
		})
	}
}

// TestUnfinishedTerminations counts the pods being terminated until their worker is done.
func TestUnfinishedTerminations(t *testing.T) {
	e := newEnv(t, true)
	pod, other := testPod("web"), testPod("db")
	for _, p := range []*PodWorkers{e.p} {
		p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
		p.UpdatePod(UpdatePodOptions{Pod: other, UpdateType: kubetypes.SyncPodCreate})
	}
	e.relist()
	e.step(pod.UID)
	e.step(other.UID)
	if n := e.p.UnfinishedTerminations(); n != 0 {
		t.Fatalf("UnfinishedTerminations = %d with no termination requested", n)
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{}})
	for i := 0; i < 5 && e.p.UnfinishedTerminations() > 0; i++ {
		if n := e.p.UnfinishedTerminations(); n != 1 {
			t.Fatalf("UnfinishedTerminations = %d while web terminates, want 1", n)
		}
		e.relist()
		e.step(pod.UID)
	}
	if n := e.p.UnfinishedTerminations(); n != 0 || !e.p.ShouldPodBeFinished(pod.UID) {
		t.Errorf("UnfinishedTerminations = %d (finished=%t) after terminating and terminated ran, want 0", n, e.p.ShouldPodBeFinished(pod.UID))
	}
}

package syncloop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/pleg"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// recorder is a Handler that records every call as "Method[pod,pod]".
type recorder struct {
	mu         sync.Mutex
	calls      []string
	cleanupErr error
	onCleanup  func()
}

var _ Handler = (*recorder)(nil)

func (r *recorder) add(method string, pods []*v1.Pod) {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, method+"["+strings.Join(names, ",")+"]")
}
func (r *recorder) HandlePodAdditions(p []*v1.Pod) { r.add("Additions", p) }
func (r *recorder) HandlePodUpdates(p []*v1.Pod)   { r.add("Updates", p) }
func (r *recorder) HandlePodRemoves(p []*v1.Pod)   { r.add("Removes", p) }
func (r *recorder) HandlePodReconcile(p []*v1.Pod) { r.add("Reconcile", p) }
func (r *recorder) HandlePodSyncs(p []*v1.Pod)     { r.add("Syncs", p) }
func (r *recorder) HandlePodCleanups(context.Context) error {
	if r.onCleanup != nil {
		r.onCleanup()
	}
	r.add("Cleanups", nil)
	return r.cleanupErr
}

// take returns and clears the recorded calls.
func (r *recorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.Join(r.calls, " ")
	r.calls = nil
	return s
}

type harness struct {
	clk      *testingclock.FakeClock
	configCh chan kubetypes.PodUpdate
	plegCh   chan *pleg.PodLifecycleEvent
	h        *recorder
	loop     *SyncLoop
	reg      *metrics.Registry
	toSync   []*v1.Pod
	cleanups []string
	ready    bool
	seenArg  sets.Set[string]
	mu       sync.Mutex
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	hs := &harness{
		clk:      testingclock.NewFakeClock(t0),
		configCh: make(chan kubetypes.PodUpdate, 10),
		plegCh:   make(chan *pleg.PodLifecycleEvent, 10),
		h:        &recorder{},
		reg:      metrics.NewRegistry("kubelet_"),
		ready:    true,
	}
	known := map[types.UID]*v1.Pod{"uid-web": mkPod("web")}
	cfg := Config{
		Clock:    hs.clk,
		ConfigCh: hs.configCh,
		PLEGCh:   hs.plegCh,
		Handler:  hs.h,
		Registry: hs.reg,
		GetPodsToSync: func() []*v1.Pod {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			return hs.toSync
		},
		GetPodByUID: func(uid types.UID) (*v1.Pod, bool) { p, ok := known[uid]; return p, ok },
		CleanUpContainersInPod: func(uid types.UID, id string) {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			hs.cleanups = append(hs.cleanups, string(uid)+"/"+id)
		},
		SourcesReady: func(seen sets.Set[string]) bool {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			hs.seenArg = seen
			return hs.ready
		},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs.loop = l
	t.Cleanup(l.Stop)
	return hs
}

func mkPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
}

func update(op kubetypes.PodOperation, names ...string) kubetypes.PodUpdate {
	u := kubetypes.PodUpdate{Op: op, Source: kubetypes.FileSource}
	for _, n := range names {
		u.Pods = append(u.Pods, mkPod(n))
	}
	return u
}

func TestConfigDispatch(t *testing.T) {
	tests := []struct {
		name   string
		update kubetypes.PodUpdate
		want   string
	}{
		{"ADD", update(kubetypes.ADD, "a", "b"), "Additions[a,b]"},
		{"UPDATE", update(kubetypes.UPDATE, "a"), "Updates[a]"},
		{"DELETE is an update", update(kubetypes.DELETE, "a"), "Updates[a]"},
		{"REMOVE", update(kubetypes.REMOVE, "a"), "Removes[a]"},
		{"RECONCILE", update(kubetypes.RECONCILE, "a"), "Reconcile[a]"},
		{"SET is not supported", update(kubetypes.SET, "a"), ""},
		{"unknown op", update(kubetypes.PodOperation(42), "a"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			hs.configCh <- tt.update
			if !hs.loop.Iterate(context.Background()) {
				t.Fatal("Iterate ended the loop")
			}
			if got := hs.h.take(); got != tt.want {
				t.Errorf("handler calls = %q, want %q", got, tt.want)
			}
			if !hs.loop.SourcesSeen().Has(kubetypes.FileSource) {
				t.Errorf("the update's source is not marked seen")
			}
		})
	}
}

func TestClosedConfigChannelEndsTheLoop(t *testing.T) {
	hs := newHarness(t, nil)
	close(hs.configCh)
	if hs.loop.Iterate(context.Background()) {
		t.Errorf("Iterate on a closed config channel returned true")
	}
	if _, ok := hs.loop.TryIterate(context.Background()); ok {
		t.Errorf("TryIterate on a closed config channel returned ok")
	}
}

func TestPLEGDispatch(t *testing.T) {
	tests := []struct {
		name         string
		event        *pleg.PodLifecycleEvent
		wantCalls    string
		wantCleanups string
	}{
		{"started", &pleg.PodLifecycleEvent{ID: "uid-web", Type: pleg.ContainerStarted, Data: "c1"}, "Syncs[web]", ""},
		{"pod sync", &pleg.PodLifecycleEvent{ID: "uid-web", Type: pleg.PodSync}, "Syncs[web]", ""},
		{"died cleans up", &pleg.PodLifecycleEvent{ID: "uid-web", Type: pleg.ContainerDied, Data: "c1"}, "Syncs[web]", "uid-web/c1"},
		{"removed is not sync-worthy", &pleg.PodLifecycleEvent{ID: "uid-web", Type: pleg.ContainerRemoved, Data: "c1"}, "", ""},
		{"unknown pod is ignored, but its dead containers are cleaned", &pleg.PodLifecycleEvent{ID: "uid-gone", Type: pleg.ContainerDied, Data: "c9"}, "", "uid-gone/c9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			hs.plegCh <- tt.event
			if !hs.loop.Iterate(context.Background()) {
				t.Fatal("Iterate ended the loop")
			}
			if got := hs.h.take(); got != tt.wantCalls {
				t.Errorf("handler calls = %q, want %q", got, tt.wantCalls)
			}
			if got := strings.Join(hs.cleanups, " "); got != tt.wantCleanups {
				t.Errorf("cleanups = %q, want %q", got, tt.wantCleanups)
			}
		})
	}
}

func TestTickers(t *testing.T) {
	hs := newHarness(t, nil)
	ctx := context.Background()
	if progressed, ok := hs.loop.TryIterate(ctx); progressed || !ok {
		t.Fatalf("TryIterate with nothing ready = %v, %v; want false, true", progressed, ok)
	}

	// Sync tick with no due pods: no handler call.
	hs.clk.Step(time.Second)
	mustProgress(t, hs.loop)
	if got := hs.h.take(); got != "" {
		t.Errorf("sync tick without due pods called %q", got)
	}
	// Sync tick with due pods.
	hs.mu.Lock()
	hs.toSync = []*v1.Pod{mkPod("a"), mkPod("b")}
	hs.mu.Unlock()
	hs.clk.Step(time.Second) // t=2s: both tickers fire; TryIterate takes sync before housekeeping
	mustProgress(t, hs.loop)
	if got := hs.h.take(); got != "Syncs[a,b]" {
		t.Errorf("sync tick: %q, want Syncs[a,b]", got)
	}
	mustProgress(t, hs.loop)
	if got := hs.h.take(); got != "Cleanups[]" {
		t.Errorf("housekeeping tick: %q, want Cleanups[]", got)
	}
	if progressed, _ := hs.loop.TryIterate(ctx); progressed {
		t.Errorf("nothing should be left after both ticks were handled")
	}

	// Housekeeping waits for the sources.
	hs.configCh <- update(kubetypes.ADD)
	mustProgress(t, hs.loop)
	hs.mu.Lock()
	hs.ready, hs.toSync = false, nil
	hs.mu.Unlock()
	hs.clk.Step(2 * time.Second)
	mustProgress(t, hs.loop) // sync
	mustProgress(t, hs.loop) // housekeeping, skipped
	if got := hs.h.take(); got != "Additions[]" {
		t.Errorf("calls = %q, want only the empty ADD (housekeeping skipped while sources are not ready)", got)
	}
	if !hs.seenArg.Has(kubetypes.FileSource) {
		t.Errorf("SourcesReady got %v, want the sources seen so far", hs.seenArg)
	}
	if got := testutil.ToFloat64(hs.loop.iterations.WithLabelValues("housekeeping")); got != 2 {
		t.Errorf("sync_loop_iterations_total{kind=housekeeping} = %v, want 2", got)
	}
}

func TestTryIterateOrder(t *testing.T) {
	hs := newHarness(t, nil)
	hs.plegCh <- &pleg.PodLifecycleEvent{ID: "uid-web", Type: pleg.ContainerStarted}
	hs.configCh <- update(kubetypes.ADD, "a")
	hs.clk.Step(2 * time.Second)
	hs.loop.tickers() // start them, then fire them
	hs.clk.Step(2 * time.Second)
	hs.mu.Lock()
	hs.toSync = []*v1.Pod{mkPod("s")}
	hs.mu.Unlock()
	for i := 0; i < 4; i++ {
		mustProgress(t, hs.loop)
	}
	if got, want := hs.h.take(), "Additions[a] Syncs[web] Syncs[s] Cleanups[]"; got != want {
		t.Errorf("order = %q, want %q (config, PLEG, sync, housekeeping)", got, want)
	}
}

func mustProgress(t *testing.T, l *SyncLoop) {
	t.Helper()
	progressed, ok := l.TryIterate(context.Background())
	if !progressed || !ok {
		t.Fatalf("TryIterate = %v, %v; want progress", progressed, ok)
	}
}

func TestCheckRuntimeBackoff(t *testing.T) {
	var down atomic.Bool
	hs := newHarness(t, func(c *Config) {
		c.RuntimeErrors = func() error {
			if down.Load() {
				return errors.New("container runtime is down")
			}
			return nil
		}
	})
	ctx := context.Background()
	seq := func(n int) string {
		var out []string
		for i := 0; i < n; i++ {
			wait, ok := hs.loop.CheckRuntime(ctx)
			if ok {
				out = append(out, "ok")
			} else {
				out = append(out, wait.String())
			}
		}
		return strings.Join(out, " ")
	}
	down.Store(true)
	if got, want := seq(9), "100ms 200ms 400ms 800ms 1.6s 3.2s 5s 5s 5s"; got != want {
		t.Errorf("back-off = %s, want %s", got, want)
	}
	down.Store(false)
	if got := seq(1); got != "ok" {
		t.Errorf("healthy runtime: %s", got)
	}
	down.Store(true)
	if got := seq(2); got != "100ms 200ms" {
		t.Errorf("after a success the back-off restarts: %s, want 100ms 200ms", got)
	}
}

// TestRunBacksOffOnTheClock runs the runner: while the runtime is down it checks again only
// when the fake clock has advanced by the back-off, and handles work once it is up.
func TestRunBacksOffOnTheClock(t *testing.T) {
	var checks atomic.Int32
	var down atomic.Bool
	down.Store(true)
	hs := newHarness(t, func(c *Config) {
		c.RuntimeErrors = func() error {
			checks.Add(1)
			if down.Load() {
				return errors.New("container runtime is down")
			}
			return nil
		}
	})
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hs.loop.Run(ctx) }()

	for i, wait := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		waitForWaiters(t, hs.clk)
		if got := checks.Load(); got != int32(i+1) {
			t.Fatalf("checks = %d before stepping %v, want %d", got, wait, i+1)
		}
		hs.clk.Step(wait - time.Millisecond)
		if got := checks.Load(); got != int32(i+1) {
			t.Fatalf("checked again before the %v back-off elapsed", wait)
		}
		hs.clk.Step(time.Millisecond)
	}
	waitForWaiters(t, hs.clk)
	down.Store(false)
	hs.configCh <- update(kubetypes.ADD, "a") // not handled while the runtime is down
	hs.clk.Step(800 * time.Millisecond)
	waitFor(t, func() bool { return hs.h.take() == "Additions[a]" })

	cancel()
	<-done
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("goroutines after Run: %d, before: %d", n, before)
	}
	if _, ok := hs.loop.TryIterate(context.Background()); ok {
		t.Errorf("the loop still iterates after Run returned (tickers must be stopped)")
	}
	hs.loop.Stop() // idempotent
}

func TestMonitorAndHealth(t *testing.T) {
	tests := []struct {
		resync time.Duration
		window time.Duration
	}{
		{time.Minute, 5 * time.Minute},       // 2 x 1m < 5m floor
		{10 * time.Minute, 20 * time.Minute}, // 2 x resync
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("resync=%v", tt.resync), func(t *testing.T) {
			hs := newHarness(t, func(c *Config) { c.ResyncInterval = tt.resync })
			if err := hs.loop.SyncLoopHealthy(); err != nil || !hs.loop.LatestLoopEntryTime().IsZero() {
				t.Fatalf("before the first iteration: %v, entry %v; want healthy, zero", err, hs.loop.LatestLoopEntryTime())
			}
			hs.loop.TryIterate(context.Background())
			if !hs.loop.LatestLoopEntryTime().Equal(t0) {
				t.Errorf("LatestLoopEntryTime = %v, want %v", hs.loop.LatestLoopEntryTime(), t0)
			}
			hs.clk.Step(tt.window)
			if err := hs.loop.SyncLoopHealthy(); err != nil {
				t.Errorf("at exactly the window: %v, want healthy", err)
			}
			hs.clk.Step(time.Millisecond)
			if err := hs.loop.SyncLoopHealthy(); !errors.Is(err, ErrSyncLoopStalled) || err.Error() != "sync Loop took longer than expected" {
				t.Errorf("past the window: %v, want %q", err, ErrSyncLoopStalled)
			}
			hs.loop.TryIterate(context.Background())
			if err := hs.loop.SyncLoopHealthy(); err != nil {
				t.Errorf("after another iteration: %v, want healthy", err)
			}
		})
	}
}

func TestHousekeepingDurationAndErrors(t *testing.T) {
	hs := newHarness(t, nil)
	hs.h.onCleanup = func() { hs.clk.Step(1500 * time.Millisecond) } // a slow cleanup
	hs.h.cleanupErr = errors.New("boom")
	hs.loop.tickers()
	hs.clk.Step(2 * time.Second)
	mustProgress(t, hs.loop) // sync
	mustProgress(t, hs.loop) // housekeeping
	if got := hs.h.take(); got != "Cleanups[]" {
		t.Fatalf("calls = %q", got)
	}
	const want = `
# HELP kubelet_housekeeping_duration_seconds Duration in seconds of the sync loop's housekeeping (HandlePodCleanups).
# TYPE kubelet_housekeeping_duration_seconds histogram
kubelet_housekeeping_duration_seconds_bucket{le="0.005"} 0
kubelet_housekeeping_duration_seconds_bucket{le="0.01"} 0
kubelet_housekeeping_duration_seconds_bucket{le="0.025"} 0
kubelet_housekeeping_duration_seconds_bucket{le="0.05"} 0
kubelet_housekeeping_duration_seconds_bucket{le="0.1"} 0
kubelet_housekeeping_duration_seconds_bucket{le="0.25"} 0
kubelet_housekeeping_duration_seconds_bucket{le="0.5"} 0
kubelet_housekeeping_duration_seconds_bucket{le="1"} 0
kubelet_housekeeping_duration_seconds_bucket{le="2.5"} 1
kubelet_housekeeping_duration_seconds_bucket{le="5"} 1
kubelet_housekeeping_duration_seconds_bucket{le="10"} 1
kubelet_housekeeping_duration_seconds_bucket{le="+Inf"} 1
kubelet_housekeeping_duration_seconds_sum 1.5
kubelet_housekeeping_duration_seconds_count 1
`
	if err := testutil.GatherAndCompare(hs.reg, strings.NewReader(want), "kubelet_housekeeping_duration_seconds"); err != nil {
		t.Error(err)
	}
}

func TestClosedPLEGChannelDoesNotSpin(t *testing.T) {
	hs := newHarness(t, nil)
	close(hs.plegCh)
	mustProgress(t, hs.loop) // notices the close
	if progressed, ok := hs.loop.TryIterate(context.Background()); progressed || !ok {
		t.Errorf("after the PLEG channel closed: progressed %v ok %v; want idle, running", progressed, ok)
	}
}

func TestNewValidates(t *testing.T) {
	ch := make(chan kubetypes.PodUpdate)
	tests := map[string]Config{
		"no config channel":        {Handler: &recorder{}},
		"no handler":               {ConfigCh: ch},
		"PLEG without pod lookup":  {ConfigCh: ch, Handler: &recorder{}, PLEGCh: make(chan *pleg.PodLifecycleEvent)},
		"negative housekeeping":    {ConfigCh: ch, Handler: &recorder{}, HousekeepingPeriod: -1},
		"negative resync interval": {ConfigCh: ch, Handler: &recorder{}, ResyncInterval: -1},
		"negative sync period":     {ConfigCh: ch, Handler: &recorder{}, SyncPeriod: -time.Second},
		"empty config":             {},
	}
	for name, cfg := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg); err == nil {
				t.Errorf("New(%s) accepted it", name)
			}
		})
	}
}

func waitForWaiters(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	waitFor(t, clk.HasWaiters)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 5000 {
			t.Fatal("condition never became true")
		}
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkTryIterateIdle(b *testing.B) {
	l, err := New(Config{Clock: testingclock.NewFakeClock(t0), ConfigCh: make(chan kubetypes.PodUpdate), Handler: &recorder{}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Stop()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		l.TryIterate(ctx)
	}
}

// TestHousekeepingCutShortByShutdownIsQuiet: a cleanup that fails because the daemon is
// stopping (its context ended meanwhile) is not logged as "Failed cleaning pods"; a cleanup
// that fails otherwise is.
func TestHousekeepingCutShortByShutdownIsQuiet(t *testing.T) {
	for _, stopping := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopping=%t", stopping), func(t *testing.T) {
			hs := newHarness(t, nil)
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()
			hs.h.cleanupErr = errors.New("list runtime pods: context canceled")
			if stopping {
				hs.h.onCleanup = cancel
			}
			hs.loop.tickers()
			hs.clk.Step(2 * time.Second)
			mustProgress(t, hs.loop) // sync
			if p, ok := hs.loop.TryIterate(ctx); !p || !ok {
				t.Fatalf("housekeeping did not run: %v, %v", p, ok)
			}
			if got := strings.Contains(buf.String(), "Failed cleaning pods"); got == stopping {
				t.Errorf("error logged = %t with stopping=%t; log:\n%s", got, stopping, buf.String())
			}
		})
	}
}

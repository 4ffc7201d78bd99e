package syncloop

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
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
	// ctx is what the loop table gives a step: it forbids blocking.
	ctx context.Context
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
	_, ctx := ktesting.NewTestContext(t) // the loop's logs go to the test's log
	hs.ctx = task.WithoutBlocking(ctx)
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

// step runs one iteration at the current virtual time, as the loop table would.
func (hs *harness) step() { hs.loop.Step(hs.ctx) }

// due is the loop's Due at the current virtual time, as an offset from t0; idle is true for
// the zero time.
func (hs *harness) due() (offset time.Duration, idle bool) {
	d := hs.loop.Due(hs.clk.Now())
	if d.IsZero() {
		return 0, true
	}
	return d.Sub(t0), false
}

// entry is the loop's table entry.
func (hs *harness) entry() runner.Loop {
	return runner.Loop{Name: "sync-loop", Due: hs.loop.Due, Step: hs.loop.Step, Wake: hs.loop.Wake()}
}

func (hs *harness) setToSync(pods ...*v1.Pod) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.toSync = pods
}

func (hs *harness) iterations(kind string) float64 {
	return testutil.ToFloat64(hs.loop.iterations.WithLabelValues(kind))
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
			hs.step() // the first iteration starts the ticks and handles the update at once
			if got := hs.h.take(); got != tt.want {
				t.Errorf("handler calls = %q, want %q", got, tt.want)
			}
			if !hs.loop.SourcesSeen().Has(kubetypes.FileSource) {
				t.Errorf("the update's source is not marked seen")
			}
			if got := hs.iterations("config"); got != 1 {
				t.Errorf("sync_loop_iterations_total{kind=config} = %v, want 1", got)
			}
			if d, idle := hs.due(); idle || d != time.Second {
				t.Errorf("Due after the update = %v (idle %t), want the first sync tick at 1s", d, idle)
			}
		})
	}
}

// TestClosedConfigChannelEndsTheLoop: the closing of the config channel ends the loop at the
// next iteration: Due turns zero for good and steps do nothing.
func TestClosedConfigChannelEndsTheLoop(t *testing.T) {
	tests := []struct {
		name string
		// closeIt closes the channel and moves the clock to the iteration that sees it.
		closeIt func(hs *harness)
	}{
		{"before the first iteration", func(hs *harness) { close(hs.configCh) }},
		{"while idle, seen at the next tick", func(hs *harness) {
			hs.step()
			close(hs.configCh)
			// a closed channel holds nothing, so Due does not see it: the next tick does
			if d, idle := hs.due(); idle || d != time.Second {
				t.Fatalf("Due with the channel closed = %v (idle %t), want the next tick", d, idle)
			}
			hs.clk.Step(time.Second)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			tt.closeIt(hs)
			hs.step()
			if _, idle := hs.due(); !idle {
				t.Fatal("the loop is still due after its config channel closed")
			}
			entered := hs.loop.LatestLoopEntryTime()
			hs.plegCh <- &pleg.PodLifecycleEvent{ID: "uid-web", Type: pleg.ContainerStarted}
			hs.clk.Step(10 * time.Second)
			hs.step()
			if got := hs.h.take(); got != "" {
				t.Errorf("an ended loop dispatched %q", got)
			}
			if !hs.loop.LatestLoopEntryTime().Equal(entered) {
				t.Error("an ended loop still stamps its monitor")
			}
		})
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
		{"a nil event is skipped", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			hs.step() // start the loop: the event arrives while it is idle
			hs.plegCh <- tt.event
			if d, idle := hs.due(); idle || d != 0 {
				t.Fatalf("Due with an event waiting = %v (idle %t), want now", d, idle)
			}
			hs.step()
			if got := hs.h.take(); got != tt.wantCalls {
				t.Errorf("handler calls = %q, want %q", got, tt.wantCalls)
			}
			if got := strings.Join(hs.cleanups, " "); got != tt.wantCleanups {
				t.Errorf("cleanups = %q, want %q", got, tt.wantCleanups)
			}
		})
	}
}

func TestTicks(t *testing.T) {
	hs := newHarness(t, nil)
	hs.step() // starts the ticks; nothing to do yet
	if got := hs.h.take(); got != "" {
		t.Fatalf("first iteration with nothing ready called %q", got)
	}
	if d, _ := hs.due(); d != time.Second {
		t.Fatalf("Due = %v, want the sync tick at 1s", d)
	}

	// Sync tick with no due pods: no handler call.
	hs.clk.Step(time.Second)
	hs.step()
	if got := hs.h.take(); got != "" {
		t.Errorf("sync tick without due pods called %q", got)
	}
	// Sync tick with due pods.
	hs.setToSync(mkPod("a"), mkPod("b"))
	hs.clk.Step(time.Second) // t=2s: both ticks are due; the sync tick goes first
	hs.step()
	if got := hs.h.take(); got != "Syncs[a,b]" {
		t.Errorf("sync tick: %q, want Syncs[a,b]", got)
	}
	if d, _ := hs.due(); d != 2*time.Second {
		t.Errorf("Due after the sync tick = %v, want now (the housekeeping tick)", d)
	}
	hs.step()
	if got := hs.h.take(); got != "Cleanups[]" {
		t.Errorf("housekeeping tick: %q, want Cleanups[]", got)
	}
	if d, _ := hs.due(); d != 3*time.Second {
		t.Errorf("Due after both ticks = %v, want the next sync tick at 3s", d)
	}
	hs.step() // a spurious step (a wake with nothing to do) handles nothing
	if got := hs.h.take(); got != "" {
		t.Errorf("nothing should be left after both ticks were handled, got %q", got)
	}

	// Housekeeping waits for the sources.
	hs.configCh <- update(kubetypes.ADD)
	hs.step()
	hs.mu.Lock()
	hs.ready, hs.toSync = false, nil
	hs.mu.Unlock()
	hs.clk.Step(2 * time.Second)
	hs.step() // sync
	hs.step() // housekeeping, skipped
	if got := hs.h.take(); got != "Additions[]" {
		t.Errorf("calls = %q, want only the empty ADD (housekeeping skipped while sources are not ready)", got)
	}
	if !hs.seenArg.Has(kubetypes.FileSource) {
		t.Errorf("SourcesReady got %v, want the sources seen so far", hs.seenArg)
	}
	if got := hs.iterations("housekeeping"); got != 2 {
		t.Errorf("sync_loop_iterations_total{kind=housekeeping} = %v, want 2", got)
	}
}

// TestTicksStayOnTheGrid: a late iteration (the loop's goroutine was busy) handles one tick
// of each kind, drops the ticks missed meanwhile and keeps the next ones on the period's grid,
// as a time.Ticker does.
func TestTicksStayOnTheGrid(t *testing.T) {
	hs := newHarness(t, nil)
	hs.step()
	hs.clk.Step(3500 * time.Millisecond)
	hs.step()
	hs.step()
	hs.step() // nothing left: the missed ticks are dropped
	if s, h := hs.iterations("sync"), hs.iterations("housekeeping"); s != 1 || h != 1 {
		t.Fatalf("iterations sync=%v housekeeping=%v, want one of each", s, h)
	}
	if d, _ := hs.due(); d != 4*time.Second {
		t.Fatalf("Due = %v, want 4s (the grids of 1s and 2s)", d)
	}
}

func TestStepOrder(t *testing.T) {
	hs := newHarness(t, nil)
	hs.step() // start the ticks
	hs.plegCh <- &pleg.PodLifecycleEvent{ID: "uid-web", Type: pleg.ContainerStarted}
	hs.configCh <- update(kubetypes.ADD, "a")
	hs.clk.Step(2 * time.Second)
	hs.setToSync(mkPod("s"))
	for i := 0; i < 4; i++ {
		if d, idle := hs.due(); idle || d > 2*time.Second {
			t.Fatalf("Due before iteration %d = %v (idle %t), want now", i, d, idle)
		}
		hs.step()
	}
	if got, want := hs.h.take(), "Additions[a] Syncs[web] Syncs[s] Cleanups[]"; got != want {
		t.Errorf("order = %q, want %q (config, PLEG, sync, housekeeping)", got, want)
	}
	if d, _ := hs.due(); d != 3*time.Second {
		t.Errorf("Due after everything was handled = %v, want 3s", d)
	}
}

func TestDue(t *testing.T) {
	runtimeDown := func(c *Config) { c.RuntimeErrors = func() error { return errors.New("container runtime is down") } }
	tests := []struct {
		name   string
		mutate func(*Config)
		setup  func(hs *harness)
		want   time.Duration // offset from t0 (the clock stays at t0)
		idle   bool
	}{
		{"before the first iteration: now", nil, func(*harness) {}, 0, false},
		{"idle: the sync tick", nil, func(hs *harness) { hs.step() }, time.Second, false},
		{"idle: the housekeeping tick when it comes first", func(c *Config) { c.SyncPeriod, c.HousekeepingPeriod = 5*time.Second, 2*time.Second },
			func(hs *harness) { hs.step() }, 2 * time.Second, false},
		{"a config update waits: now", nil, func(hs *harness) { hs.step(); hs.configCh <- update(kubetypes.ADD, "a") }, 0, false},
		{"a PLEG event waits: now", nil, func(hs *harness) {
			hs.step()
			hs.plegCh <- &pleg.PodLifecycleEvent{ID: "uid-web", Type: pleg.PodSync}
		}, 0, false},
		{"runtime back-off: its end, even with work waiting", runtimeDown, func(hs *harness) {
			hs.step()
			hs.configCh <- update(kubetypes.ADD, "a")
		}, BackoffBase, false},
		{"stopped: idle, even with work waiting", nil, func(hs *harness) {
			hs.configCh <- update(kubetypes.ADD, "a")
			hs.loop.Stop()
		}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := newHarness(t, tt.mutate)
			tt.setup(hs)
			d, idle := hs.due()
			if idle != tt.idle || (!idle && d != tt.want) {
				t.Fatalf("Due = %v (idle %t), want %v (idle %t)", d, idle, tt.want, tt.idle)
			}
		})
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

// TestRuntimeBackoffOnTheClock runs the loop on a virtual clock with a config update
// waiting from the start: while the runtime is down the loop checks again only when its
// back-off ends (Due reports that instant), handles nothing meanwhile, and handles the update
// at the first check that finds the runtime up.
func TestRuntimeBackoffOnTheClock(t *testing.T) {
	var checks []time.Duration
	down := true
	var hs *harness // the check reads the harness's clock once it exists
	hs = newHarness(t, func(c *Config) {
		c.RuntimeErrors = func() error {
			checks = append(checks, hs.clk.Now().Sub(t0))
			if down {
				return errors.New("container runtime is down")
			}
			return nil
		}
	})
	hs.configCh <- update(kubetypes.ADD, "a")
	sim := runner.NewSim(hs.clk, []runner.Loop{hs.entry()})
	ctx := hs.ctx
	if err := sim.RunUntil(ctx, t0.Add(700*time.Millisecond), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(checks), "[0s 100ms 300ms 700ms]"; got != want {
		t.Fatalf("runtime checked at %s, want %s (back-off 100ms, 200ms, 400ms)", got, want)
	}
	if d, _ := hs.due(); d != 1500*time.Millisecond {
		t.Fatalf("Due = %v, want the end of the 800ms back-off (1.5s)", d)
	}
	down = false
	hs.step() // a spurious wake during the back-off neither checks nor handles anything
	if err := sim.RunUntil(ctx, t0.Add(1499*time.Millisecond), nil); err != nil {
		t.Fatal(err)
	}
	if got := hs.h.take(); got != "" || len(checks) != 4 {
		t.Fatalf("during the back-off: calls %q, %d checks; want nothing", got, len(checks))
	}
	if err := sim.RunUntil(ctx, t0.Add(1500*time.Millisecond), nil); err != nil {
		t.Fatal(err)
	}
	if got := hs.h.take(); got != "Additions[a]" || checks[len(checks)-1] != 1500*time.Millisecond {
		t.Fatalf("calls %q, checks %v; want the update handled at 1.5s", got, checks)
	}
	// The ticks missed while the runtime was down (sync at 1s) are still due: the next
	// iteration handles one at once, then the grid goes on (housekeeping at 2s).
	hs.step()
	if s := hs.iterations("sync"); s != 1 {
		t.Fatalf("sync iterations = %v, want the missed tick handled", s)
	}
	if d, _ := hs.due(); d != 2*time.Second {
		t.Fatalf("Due after recovery = %v, want 2s", d)
	}
}

// TestIdleRuntimeBackoffKeepsChecking: with nothing to do, a loop whose runtime check fails
// still checks again at the end of each back-off (upstream's loop sleeps and checks, logging
// "Skipping pod synchronization" each time), not only at the next tick.
func TestIdleRuntimeBackoffKeepsChecking(t *testing.T) {
	var checks []time.Duration
	var hs *harness
	hs = newHarness(t, func(c *Config) {
		c.RuntimeErrors = func() error {
			checks = append(checks, hs.clk.Now().Sub(t0))
			return errors.New("container runtime is down")
		}
	})
	sim := runner.NewSim(hs.clk, []runner.Loop{hs.entry()})
	if err := sim.RunUntil(hs.ctx, t0.Add(1500*time.Millisecond), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(checks), "[0s 100ms 300ms 700ms 1.5s]"; got != want {
		t.Fatalf("runtime checked at %s, want %s (back-off 100ms doubling)", got, want)
	}
}

// TestSimRunsTheLoop runs the loop's table entry for 10 virtual seconds beside a producer that
// sends a config update at 2.5s: the sync tick every second, housekeeping every two, the
// update at the instant it arrives.
func TestSimRunsTheLoop(t *testing.T) {
	hs := newHarness(t, nil)
	hs.setToSync(mkPod("a"))
	sent := false
	producer := runner.Loop{Name: "config", Due: func(time.Time) time.Time {
		if sent {
			return time.Time{}
		}
		return t0.Add(2500 * time.Millisecond)
	}, Step: func(context.Context) {
		hs.configCh <- update(kubetypes.ADD, "late")
		hs.loop.Wake().Notify() // what a producer does for the daemon's loop goroutine
		sent = true
	}}
	if hs.loop.Wake() == nil || hs.loop.Wake() != hs.loop.Wake() {
		t.Fatal("Wake must be one signal for the loop's life")
	}
	var want []string
	for s := 1; s <= 10; s++ {
		want = append(want, "Syncs[a]")
		if s%2 == 0 {
			want = append(want, "Cleanups[]")
		}
		if s == 2 {
			want = append(want, "Additions[late]")
		}
	}
	if err := runner.NewSim(hs.clk, []runner.Loop{hs.entry(), producer}).RunUntil(hs.ctx, t0.Add(10*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if got := hs.h.take(); got != strings.Join(want, " ") {
		t.Fatalf("calls\n%s\nwant\n%s", got, strings.Join(want, " "))
	}
	if c, s, h := hs.iterations("config"), hs.iterations("sync"), hs.iterations("housekeeping"); c != 1 || s != 10 || h != 5 {
		t.Fatalf("iterations config=%v sync=%v housekeeping=%v, want 1, 10, 5", c, s, h)
	}
}

func TestStop(t *testing.T) {
	hs := newHarness(t, nil)
	hs.step()
	hs.configCh <- update(kubetypes.ADD, "a")
	hs.loop.Stop()
	hs.loop.Stop() // idempotent
	if _, idle := hs.due(); !idle {
		t.Fatal("a stopped loop is due")
	}
	hs.clk.Step(5 * time.Second)
	hs.step()
	if got := hs.h.take(); got != "" || len(hs.configCh) != 1 {
		t.Fatalf("a stopped loop handled %q (config left %d)", got, len(hs.configCh))
	}
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
			hs.step()
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
			hs.step()
			if err := hs.loop.SyncLoopHealthy(); err != nil {
				t.Errorf("after another iteration: %v, want healthy", err)
			}
		})
	}
}

// TestMonitorNotStampedDuringBackoff: while the runtime is down the loop skips its
// iterations, so the health check ends up failing, as upstream's.
func TestMonitorNotStampedDuringBackoff(t *testing.T) {
	hs := newHarness(t, func(c *Config) { c.RuntimeErrors = func() error { return errors.New("down") } })
	if err := runner.NewSim(hs.clk, []runner.Loop{hs.entry()}).RunUntil(hs.ctx, t0.Add(6*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if !hs.loop.LatestLoopEntryTime().IsZero() || hs.h.take() != "" {
		t.Fatalf("entry %v: an iteration ran while the runtime was down", hs.loop.LatestLoopEntryTime())
	}
}

func TestHousekeepingDurationAndErrors(t *testing.T) {
	hs := newHarness(t, nil)
	hs.h.onCleanup = func() { hs.clk.Step(1500 * time.Millisecond) } // a slow cleanup
	hs.h.cleanupErr = errors.New("boom")
	hs.step() // start the ticks
	hs.clk.Step(2 * time.Second)
	hs.step() // sync
	hs.step() // housekeeping
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
	hs.step() // notices the close
	if d, idle := hs.due(); idle || d != time.Second {
		t.Fatalf("Due after the PLEG channel closed = %v (idle %t), want the next tick", d, idle)
	}
	hs.step()
	hs.configCh <- update(kubetypes.ADD, "a")
	hs.step()
	if got := hs.h.take(); got != "Additions[a]" {
		t.Errorf("calls = %q: the loop must go on without its PLEG", got)
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

func BenchmarkStepIdle(b *testing.B) {
	clk := testingclock.NewFakeClock(t0)
	l, err := New(Config{Clock: clk, ConfigCh: make(chan kubetypes.PodUpdate), Handler: &recorder{}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Stop()
	ctx := task.WithoutBlocking(context.Background())
	l.Step(ctx) // start the ticks: later steps find nothing due
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		l.Due(clk.Now())
		l.Step(ctx)
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
			hs.step() // start the ticks
			hs.clk.Step(2 * time.Second)
			hs.step() // sync
			hs.loop.Step(ctx)
			if got := hs.h.take(); got != "Cleanups[]" {
				t.Fatalf("housekeeping did not run: calls %q", got)
			}
			if got := strings.Contains(buf.String(), "Failed cleaning pods"); got == stopping {
				t.Errorf("error logged = %t with stopping=%t; log:\n%s", got, stopping, buf.String())
			}
		})
	}
}

// TestProbeResults: probe result changes are inputs of the loop after the sync tick and
// before housekeeping (liveness, readiness, startup); a liveness failure and any readiness or
// startup change sync the pod, a liveness success does not, and a pod gone is skipped.
func TestProbeResults(t *testing.T) {
	live, ready, startup := results.NewManager(nil), results.NewManager(nil), results.NewManager(nil)
	hs := newHarness(t, func(c *Config) { c.Liveness, c.Readiness, c.Startup = live, ready, startup })
	hs.step() // start the ticks
	hs.clk.Step(2 * time.Second)
	hs.setToSync(mkPod("s"))
	startup.Set("c1", results.Success, "uid-web")
	ready.Set("c1", results.Success, "uid-web")
	live.Set("c1", results.Success, "uid-web")   // a success: nothing to do
	live.Set("c2", results.Failure, "uid-web")   // a failure: kill it
	ready.Set("c3", results.Failure, "uid-gone") // the pod is gone
	for i := 0; i < 7; i++ {
		if d, idle := hs.due(); idle || d > 2*time.Second {
			t.Fatalf("Due before iteration %d = %v (idle %t), want now", i, d, idle)
		}
		hs.step()
	}
	if got, want := hs.h.take(), "Syncs[s] Syncs[web] Syncs[web] Syncs[web] Cleanups[]"; got != want {
		t.Errorf("handled %q, want %q (sync tick, liveness failure, readiness, startup, housekeeping)", got, want)
	}
	if n := hs.iterations("probe"); n != 5 {
		t.Errorf("probe iterations = %v, want 5", n)
	}
}

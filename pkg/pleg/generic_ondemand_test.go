package pleg

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// stepDue steps the PLEG's loop while it is due at the fake clock's time, at most 10 times,
// and reports how many steps ran.
func stepDue(ctx context.Context, g *GenericPLEG, now time.Time) int {
	n := 0
	for ; n < 10; n++ {
		due := g.Due(now)
		if due.IsZero() || due.After(now) {
			break
		}
		g.Step(ctx)
	}
	return n
}

// TestRequestRelist covers v1.37's on-demand relist of one pod (PLEGOnDemandRelist): what
// reaches the runtime, the events and the cache, and when a request is dropped or skipped.
func TestRequestRelist(t *testing.T) {
	const uid = types.UID("a")
	tests := []struct {
		name     string
		onDemand bool
		capacity int
		// act runs after the first global relist (the pod running) and 100ms of virtual time;
		// then the loop is stepped while due.
		act          func(f *fixture, ctx context.Context)
		wantEvents   []string // events of pod a after the steps
		wantGetPod   int
		wantLists    int // global relists in all, the first included
		wantObserved int // pleg_pod_relist_duration_seconds observations
		wantLog      string
		wantLogs     int
	}{
		{
			name: "an exit is found by the pod relist, without a global relist", onDemand: true,
			act: func(f *fixture, ctx context.Context) {
				f.rt.set(pod("a", []*container.Container{ctr("c1", exited)}, ctr("s1", running)))
				f.g.RequestRelist(ctx, uid)
			},
			wantEvents: []string{"ContainerDied c1"}, wantGetPod: 1, wantLists: 1, wantObserved: 1,
		},
		{
			name: "gate off: the request is ignored until the next global relist",
			act: func(f *fixture, ctx context.Context) {
				f.rt.set(pod("a", []*container.Container{ctr("c1", exited)}, ctr("s1", running)))
				f.g.RequestRelist(ctx, uid)
			},
			wantLists: 1,
		},
		{
			name: "an unchanged pod sends nothing", onDemand: true,
			act:        func(f *fixture, ctx context.Context) { f.g.RequestRelist(ctx, uid) },
			wantGetPod: 1, wantLists: 1, wantObserved: 1,
		},
		{
			name: "a request older than a due global relist is served by it and skipped", onDemand: true,
			act: func(f *fixture, ctx context.Context) {
				f.rt.set(pod("a", []*container.Container{ctr("c1", exited)}, ctr("s1", running)))
				f.g.RequestRelist(ctx, uid)
				f.clk.Step(time.Second) // the global relist falls due: it goes first
			},
			wantEvents: []string{"ContainerDied c1"}, wantLists: 2,
		},
		{
			name: "a full queue drops the request with upstream's error", onDemand: true, capacity: 1,
			act: func(f *fixture, ctx context.Context) {
				f.g.RequestRelist(ctx, uid)
				f.g.RequestRelist(ctx, "b")
			},
			wantGetPod: 1, wantLists: 1, wantObserved: 1,
			wantLog: "Relist request channel full; dropping relist request", wantLogs: 1,
		},
		{
			name: "a pod the runtime no longer has is left to the global relist", onDemand: true,
			act: func(f *fixture, ctx context.Context) {
				f.rt.set()
				f.g.RequestRelist(ctx, uid)
			},
			wantGetPod: 1, wantLists: 1, wantObserved: 1,
			wantLog: "GenericPLEG: Unable to retrieve pod", wantLogs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.OnDemandRelist = tt.onDemand; c.RelistRequestCapacity = tt.capacity })
			logs := &logRecorder{}
			ctx := logs.ctx()
			f.rt.set(pod("a", []*container.Container{ctr("c1", running)}, ctr("s1", running)))
			if n := stepDue(ctx, f.g, f.clk.Now()); n != 1 {
				t.Fatalf("first global relist: %d steps, want 1", n)
			}
			drain(f.g.Watch())
			f.clk.Step(100 * time.Millisecond)
			tt.act(f, ctx)
			stepDue(ctx, f.g, f.clk.Now())

			if diff := cmp.Diff(tt.wantEvents, byPod(drain(f.g.Watch()))[uid]); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			f.rt.mu.Lock()
			getPod := f.rt.getPodCalls
			f.rt.mu.Unlock()
			if getPod != tt.wantGetPod || f.rt.lists() != tt.wantLists {
				t.Errorf("GetPod calls = %d, global listings = %d; want %d and %d", getPod, f.rt.lists(), tt.wantGetPod, tt.wantLists)
			}
			if got := testutil.CollectAndCount(f.g.metrics.podRelist); got != 1 {
				t.Fatalf("pod relist histogram series = %d", got)
			}
			if got := histogramCount(t, f.g.metrics.podRelist); got != tt.wantObserved {
				t.Errorf("pleg_pod_relist_duration_seconds count = %d, want %d", got, tt.wantObserved)
			}
			if tt.wantLog != "" && logs.count(tt.wantLog) != tt.wantLogs {
				t.Errorf("%q logged %d times, want %d", tt.wantLog, logs.count(tt.wantLog), tt.wantLogs)
			}
			if f.g.QueuedRelists() != 0 {
				t.Errorf("%d requests left in the queue", f.g.QueuedRelists())
			}
		})
	}
}

// TestPodRelistWakesWaiter: a pod worker waiting for data newer than its last sync is woken
// by the pod relist even when nothing changed (SetObservedTime), not at the next global
// relist: the point of the post-sync relist.
func TestPodRelistWakesWaiter(t *testing.T) {
	tests := []struct {
		name  string
		state container.State // c1's state at the pod relist
	}{
		{"unchanged pod", running},
		{"changed pod", exited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.OnDemandRelist = true })
			ctx := context.Background()
			f.rt.set(pod("a", []*container.Container{ctr("c1", running)}, ctr("s1", running)))
			stepDue(ctx, f.g, f.clk.Now())
			f.clk.Step(100 * time.Millisecond)
			syncEnd := f.clk.Now() // the worker's last sync ended now
			woken := 0
			if f.cache.NotifyWhenNewer("a", syncEnd, func() { woken++ }) {
				t.Fatal("cache already newer than the sync's end")
			}
			f.rt.set(pod("a", []*container.Container{ctr("c1", tt.state)}, ctr("s1", running)))
			f.g.RequestRelist(ctx, "a")
			stepDue(ctx, f.g, f.clk.Now())
			if woken != 1 {
				t.Fatalf("waiter woken %d times, want 1", woken)
			}
			if _, ok, _ := f.cache.GetIfNewerThan("a", syncEnd.Add(-time.Nanosecond)); !ok {
				t.Fatal("the cache does not read as fresh after the pod relist")
			}
		})
	}
}

// TestPodRelistWaitsBehindHungRuntime: a pod relist held up by the runtime is a task like a
// global relist: the loop is not due meanwhile, and goes on when the runtime answers.
func TestPodRelistWaitsBehindHungRuntime(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.OnDemandRelist = true })
	ctx := context.Background()
	f.rt.set(pod("a", []*container.Container{ctr("c1", running)}, ctr("s1", running)))
	stepDue(ctx, f.g, f.clk.Now())
	hold := task.NewOp()
	f.rt.setHold(hold)
	f.rt.set(pod("a", []*container.Container{ctr("c1", exited)}, ctr("s1", running)))
	f.g.RequestRelist(ctx, "a")
	f.g.Step(ctx)
	if due := f.g.Due(f.clk.Now()); !due.IsZero() {
		t.Fatalf("Due = %v while the pod relist waits, want zero", due)
	}
	f.rt.setHold(nil)
	hold.Complete(nil)
	if n := stepDue(ctx, f.g, f.clk.Now()); n != 1 {
		t.Fatalf("%d steps after the runtime answered, want 1", n)
	}
	if got := byPod(drain(f.g.Watch()))["a"]; !cmp.Equal(got, []string{"ContainerStarted c1", "ContainerStarted s1", "ContainerDied c1"}) {
		t.Fatalf("events = %v", got)
	}
}

// histogramCount is a histogram's observation count.
func histogramCount(t *testing.T, h prometheus.Histogram) int {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return int(m.GetHistogram().GetSampleCount())
}

package pleg

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
)

// fakeNode wires the PLEGs to the simulator's fake runtime, as the daemon does.
type fakeNode struct {
	t     *testing.T
	rt    *fake.Runtime
	clk   *testingclock.FakeClock
	cache *statuscache.Cache
	reg   *metrics.Registry
	g     *GenericPLEG
	// lister is the generic PLEG's view of rt, counting listings.
	lister *listing
}

func newFakeNode(t *testing.T, evented bool, mods ...func(*fake.Config)) *fakeNode {
	t.Helper()
	clk := simtest.NewClock()
	cfg := fake.Config{Clock: clk}
	for _, m := range mods {
		m(&cfg)
	}
	rt, err := fake.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PullImage(context.Background(), cri.ImageSpec{Image: benchImage}, nil); err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{t: t, rt: rt, clk: clk, cache: statuscache.New(statuscache.Config{EventedPLEG: evented, UnknownPodFresh: evented}), reg: metrics.NewRegistry("")}
	n.lister = &listing{Runtime: rt}
	// PLEGOnDemandRelist is GA in v1.37; v1.30, whose EventedPLEG the legacy mode is, had none.
	n.g, err = NewGenericPLEG(Config{Runtime: n.lister, Cache: n.cache, Clock: clk, Registry: n.reg, LegacyEvented: evented, OnDemandRelist: !evented, PodRelistMetric: true})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// listing counts GetPods calls, so tests can see relists.
type listing struct {
	*fake.Runtime
	mu    sync.Mutex
	calls int
}

func (l *listing) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	l.mu.Lock()
	l.calls++
	l.mu.Unlock()
	return l.Runtime.GetPods(ctx, all)
}

func (n *fakeNode) listings() int {
	n.lister.mu.Lock()
	defer n.lister.mu.Unlock()
	return n.lister.calls
}

// runtimeLoop is the fake runtime's entry in the loop table: it applies scripted transitions
// and completes delayed calls when their virtual time comes.
func (n *fakeNode) runtimeLoop() runner.Loop {
	return runner.Loop{Name: "runtime", Due: n.rt.Due, Step: n.rt.Step, Wake: n.rt.Wake()}
}

// loops is the runtime's and the generic PLEG's loops, as the daemon's table has them.
func (n *fakeNode) loops() []runner.Loop {
	return []runner.Loop{n.runtimeLoop(), genericLoop(n.g)}
}

func (n *fakeNode) evented() *LegacyEventedPLEG {
	n.t.Helper()
	e, err := NewLegacyEventedPLEG(LegacyEventedConfig{Generic: n.g, Runtime: n.rt})
	if err != nil {
		n.t.Fatal(err)
	}
	return e
}

func (n *fakeNode) runPod(uid string) (string, *cri.PodSandboxConfig) {
	n.t.Helper()
	cfg := &cri.PodSandboxConfig{Metadata: cri.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "default", UID: uid}}
	id, err := n.rt.RunPodSandbox(context.Background(), cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	return id, cfg
}

func (n *fakeNode) startContainer(sb string, cfg *cri.PodSandboxConfig, name string) string {
	n.t.Helper()
	ctx := context.Background()
	id, err := n.rt.CreateContainer(ctx, sb, &cri.ContainerConfig{Metadata: cri.ContainerMetadata{Name: name}, Image: cri.ImageSpec{Image: benchImage}}, cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := n.rt.StartContainer(ctx, id); err != nil {
		n.t.Fatal(err)
	}
	return id
}

func (n *fakeNode) must(err error) {
	n.t.Helper()
	if err != nil {
		n.t.Fatal(err)
	}
}

// relist relists one second later and returns the events, per pod.
func (n *fakeNode) relist() map[types.UID][]string {
	n.clk.Step(time.Second)
	n.g.Relist(context.Background())
	return byPod(drain(n.g.Watch()))
}

func TestGenericPLEGOverFakeRuntime(t *testing.T) {
	n := newFakeNode(t, false)
	ctx := context.Background()
	sb, cfg := n.runPod("p1")
	app := n.startContainer(sb, cfg, "app")
	side := n.startContainer(sb, cfg, "side")

	steps := []struct {
		name string
		act  func()
		want []string
	}{
		{"pod started", func() {}, []string{"ContainerStarted " + app, "ContainerStarted " + side, "ContainerStarted " + sb}},
		{"nothing changed", func() {}, nil},
		{"app killed", func() { n.must(n.rt.StopContainer(ctx, app, 0)) }, []string{"ContainerDied " + app}},
		{"app removed", func() { n.must(n.rt.RemoveContainer(ctx, app)) }, []string{"ContainerRemoved " + app}},
		{"side killed", func() { n.must(n.rt.StopContainer(ctx, side, 0)) }, []string{"ContainerDied " + side}},
		{"sandbox stopped", func() { n.must(n.rt.StopPodSandbox(ctx, sb)) }, []string{"ContainerDied " + sb}},
		{"side removed", func() { n.must(n.rt.RemoveContainer(ctx, side)) }, []string{"ContainerRemoved " + side}},
		{"sandbox removed", func() { n.must(n.rt.RemovePodSandbox(ctx, sb)) }, []string{"ContainerRemoved " + sb}},
	}
	for _, s := range steps {
		s.act()
		got := n.relist()["p1"]
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Fatalf("%s: events (-want +got):\n%s", s.name, diff)
		}
		st, err := n.cache.Get("p1")
		if err != nil {
			t.Fatalf("%s: cached error %v", s.name, err)
		}
		switch s.name {
		case "pod started":
			if len(st.ContainerStatuses) != 2 || len(st.SandboxStatuses) != 1 || len(st.IPs) != 1 {
				t.Fatalf("%s: cached status %+v", s.name, st)
			}
		case "app killed":
			if cs := st.FindContainerStatusByName("app"); cs == nil || cs.State != container.ContainerStateExited || cs.ExitCode != int(fake.ExitCodeKilled) {
				t.Fatalf("%s: app status %+v", s.name, cs)
			}
		case "sandbox removed":
			if st.Name != "" || len(st.ContainerStatuses) != 0 {
				t.Fatalf("%s: cache still holds %+v", s.name, st)
			}
		}
	}
}

func TestGenericPLEGOverFakeRuntimeListingFault(t *testing.T) {
	n := newFakeNode(t, false)
	n.relist()
	last, _ := n.g.LastRelistTime()
	if _, err := n.rt.AddFault(fault.Spec{Method: "ListPodSandbox", Type: fault.Error, Message: "runtime is down"}); err != nil {
		t.Fatal(err)
	}
	n.clk.SetTime(last.Add(3*time.Minute + time.Second))
	n.g.Relist(context.Background())
	ok, err := n.g.Healthy()
	if ok || err == nil || err.Error() != "pleg was last seen active 3m1s ago; threshold is 3m0s" {
		t.Fatalf("Healthy = %v, %v", ok, err)
	}
	n.rt.ClearFaults()
	n.g.Relist(context.Background())
	if ok, err := n.g.Healthy(); !ok {
		t.Fatalf("Healthy after the fault cleared: %v", err)
	}
}

// The fake runtime refuses the stream 5 times: the evented PLEG gives up and the generic
// PLEG takes over at 1s.
func TestLegacyEventedPLEGOverFakeRuntimeFallsBack(t *testing.T) {
	n := newFakeNode(t, true)
	if _, err := n.rt.AddFault(fault.Spec{Method: "GetContainerEvents", Type: fault.StreamError, Count: 5}); err != nil {
		t.Fatal(err)
	}
	e := n.evented()
	e.Activate(context.Background())
	loops := append(n.loops(), eventedLoop(e))
	simtest.Run(t, n.clk, loops, time.Minute, func() bool { return !e.InUse() })
	if e.ActiveType() != TypeGeneric {
		t.Fatalf("ActiveType = %q", e.ActiveType())
	}
	if got := testutil.ToFloat64(n.g.metrics.connErr); got != 5 {
		t.Fatalf("evented_pleg_connection_error_count = %v, want 5", got)
	}
	if got := n.g.RelistDuration(); got != (RelistDuration{time.Second, 3 * time.Minute}) {
		t.Fatalf("generic cadence = %+v", got)
	}
	if got := activeGauge(t, n.reg); got != TypeGeneric {
		t.Fatalf("pleg_active = %q", got)
	}
	// The generic PLEG now finds a new pod within a second.
	sb, _ := n.runPod("p1")
	at := n.clk.Now()
	simtest.Run(t, n.clk, loops, 10*time.Second, func() bool { return len(n.g.Watch()) > 0 })
	if d := n.clk.Now().Sub(at); d > time.Second {
		t.Fatalf("the new pod was found %v later, want within the 1s relist period", d)
	}
	if diff := cmp.Diff(map[types.UID][]string{"p1": {"ContainerStarted " + sb}}, byPod(drain(n.g.Watch()))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

// Every event comes from the fake runtime's stream (the generic loop is not in the table),
// delivered at the virtual instant it happens.
func TestLegacyEventedPLEGOverFakeRuntimeStream(t *testing.T) {
	n := newFakeNode(t, true)
	e := n.evented()
	e.Activate(context.Background())
	loops := []runner.Loop{n.runtimeLoop(), eventedLoop(e)}
	settle := func() map[types.UID][]string {
		t.Helper()
		runFor(t, n.clk, 0, loops...)
		return byPod(drain(e.Watch()))
	}
	settle()
	if got := testutil.ToFloat64(n.g.metrics.conn); got != 1 {
		t.Fatalf("evented_pleg_connection_success_count = %v, want 1", got)
	}
	sb, cfg := n.runPod("p1")
	if diff := cmp.Diff(map[types.UID][]string{"p1": {"ContainerStarted " + sb}}, settle()); diff != "" {
		t.Fatalf("sandbox events (-want +got):\n%s", diff)
	}
	n.clk.Step(time.Second)
	app := n.startContainer(sb, cfg, "app")
	// Created sends nothing; started sends ContainerStarted.
	if diff := cmp.Diff(map[types.UID][]string{"p1": {"ContainerStarted " + app}}, settle()); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	st, _ := n.cache.Get("p1")
	if cs := st.FindContainerStatusByName("app"); cs == nil || cs.State != container.ContainerStateRunning {
		t.Fatalf("cached status after the started event: %+v", st)
	}
	if !st.TimeStamp.Equal(n.clk.Now()) {
		t.Fatalf("cached status stamped %v, want the event's time %v", st.TimeStamp, n.clk.Now())
	}
	n.clk.Step(time.Second)
	n.must(n.rt.StopContainer(context.Background(), app, 0))
	if diff := cmp.Diff(map[types.UID][]string{"p1": {"ContainerDied " + app}}, settle()); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	n.must(n.rt.RemoveContainer(context.Background(), app))
	if diff := cmp.Diff(map[types.UID][]string{"p1": {"ContainerDied " + app, "ContainerRemoved " + app}}, settle()); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(n.g.metrics.conn); got != 1 {
		t.Fatalf("evented_pleg_connection_success_count = %v, want 1", got)
	}
	if got := activeGauge(t, n.reg); got != TypeEvented {
		t.Fatalf("pleg_active = %q", got)
	}
}

// A reader too slow for the runtime's event buffer loses its stream and the events in it:
// the evented PLEG reconnects and the relist it forces finds the changes the lost events
// carried, though the generic cadence is 300s.
func TestLegacyEventedPLEGOverFakeRuntimeSlowReaderCatchesUp(t *testing.T) {
	n := newFakeNode(t, true, func(c *fake.Config) { c.EventBufferSize = 2 })
	e := n.evented()
	e.Activate(context.Background())
	loops := append(n.loops(), eventedLoop(e))
	runFor(t, n.clk, 0, loops...) // the first relist and the connection
	n.clk.Step(time.Second)
	// Five events (the sandbox's created and started, the container's created and started
	// ...) arrive before the loop runs: the third breaks the stream.
	sb, cfg := n.runPod("p1")
	app := n.startContainer(sb, cfg, "app")
	lists := n.listings()
	runFor(t, n.clk, 0, loops...)
	if got := testutil.ToFloat64(n.g.metrics.connErr); got != 1 {
		t.Fatalf("evented_pleg_connection_error_count = %v, want 1 (the broken stream)", got)
	}
	if got := testutil.ToFloat64(n.g.metrics.conn); got != 2 {
		t.Fatalf("evented_pleg_connection_success_count = %v, want 2 (reconnected)", got)
	}
	if got := n.listings(); got != lists+1 {
		t.Fatalf("%d relists after the break, want one forced relist", got-lists)
	}
	if diff := cmp.Diff(map[types.UID][]string{"p1": {"ContainerStarted " + app, "ContainerStarted " + sb}}, byPod(drain(e.Watch()))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if !e.InUse() {
		t.Fatal("one broken stream made the evented PLEG fall back")
	}
}

// A streamError fault breaks the connected stream: the evented PLEG counts it, relists and
// reconnects at once; events flow again.
func TestLegacyEventedPLEGOverFakeRuntimeStreamFault(t *testing.T) {
	n := newFakeNode(t, true)
	e := n.evented()
	e.Activate(context.Background())
	loops := append(n.loops(), eventedLoop(e))
	runFor(t, n.clk, 0, loops...)
	if _, err := n.rt.AddFault(fault.Spec{Method: "GetContainerEvents", Type: fault.StreamError}); err != nil {
		t.Fatal(err)
	}
	runFor(t, n.clk, 0, loops...)
	if errs, conns := testutil.ToFloat64(n.g.metrics.connErr), testutil.ToFloat64(n.g.metrics.conn); errs != 1 || conns != 2 {
		t.Fatalf("connection errors %v, successes %v; want 1 and 2", errs, conns)
	}
	n.clk.Step(time.Second)
	sb, _ := n.runPod("p1")
	runFor(t, n.clk, 0, loops...)
	if diff := cmp.Diff(map[types.UID][]string{"p1": {"ContainerStarted " + sb}}, byPod(drain(e.Watch()))); diff != "" {
		t.Fatalf("events after reconnecting (-want +got):\n%s", diff)
	}
}

// A relist held up by a slow runtime (a listing that takes 4m) waits as a task beside the
// runtime's loop: the PLEG is unhealthy once its last success is 3m old, the relist counts
// from its start when it ends (so it is still too old), the relist's duration is observed,
// and health returns with the next relist a period later.
func TestGenericPLEGOverFakeRuntimeSlowListing(t *testing.T) {
	n := newFakeNode(t, false)
	loops := n.loops()
	runFor(t, n.clk, 0, loops...) // the first relist, at start
	if _, err := n.rt.AddFault(fault.Spec{Method: "ListPodSandbox", Type: fault.Latency, Delay: metav1.Duration{Duration: 4 * time.Minute}}); err != nil {
		t.Fatal(err)
	}
	runFor(t, n.clk, time.Second, loops...) // the second relist starts and waits
	// The latency being served is not shortened by clearing the fault; later calls are fast.
	n.rt.ClearFaults()
	steps := []struct {
		at      time.Duration // after start
		wantErr string
	}{
		{3 * time.Minute, ""},
		{3*time.Minute + time.Second, "pleg was last seen active 3m1s ago; threshold is 3m0s"},
		{4*time.Minute + time.Second, "pleg was last seen active 4m0s ago; threshold is 3m0s"}, // the slow relist just ended
		{4*time.Minute + 2*time.Second, ""},                                                    // the next one
	}
	for _, s := range steps {
		runFor(t, n.clk, start.Add(s.at).Sub(n.clk.Now()), loops...)
		ok, err := n.g.Healthy()
		if got := fmt.Sprint(err); ok != (s.wantErr == "") || (s.wantErr != "" && got != s.wantErr) {
			t.Fatalf("at start+%v: Healthy = %v, %v; want error %q", s.at, ok, err, s.wantErr)
		}
		if s.at == 3*time.Minute+time.Second {
			if due := n.g.Due(n.clk.Now()); !due.IsZero() {
				t.Fatalf("generic loop due at %v while its relist waits, want idle", due)
			}
		}
	}
	if got := n.listings(); got != 3 {
		t.Fatalf("relists = %d, want 3", got)
	}
	// Durations: the slow relist took 240s of virtual time, the others none. Intervals
	// are start to start: 1s, then 4m1s.
	if err := testutil.GatherAndCompare(n.reg, strings.NewReader(`
# HELP pleg_relist_duration_seconds [ALPHA] Duration in seconds for relisting pods in PLEG.
# TYPE pleg_relist_duration_seconds histogram
pleg_relist_duration_seconds_bucket{le="0.005"} 2
pleg_relist_duration_seconds_bucket{le="0.01"} 2
pleg_relist_duration_seconds_bucket{le="0.025"} 2
pleg_relist_duration_seconds_bucket{le="0.05"} 2
pleg_relist_duration_seconds_bucket{le="0.1"} 2
pleg_relist_duration_seconds_bucket{le="0.25"} 2
pleg_relist_duration_seconds_bucket{le="0.5"} 2
pleg_relist_duration_seconds_bucket{le="1"} 2
pleg_relist_duration_seconds_bucket{le="2.5"} 2
pleg_relist_duration_seconds_bucket{le="5"} 2
pleg_relist_duration_seconds_bucket{le="10"} 2
pleg_relist_duration_seconds_bucket{le="+Inf"} 3
pleg_relist_duration_seconds_sum 240
pleg_relist_duration_seconds_count 3
# HELP pleg_relist_interval_seconds [ALPHA] Interval in seconds between relisting in PLEG.
# TYPE pleg_relist_interval_seconds histogram
pleg_relist_interval_seconds_bucket{le="0.005"} 0
pleg_relist_interval_seconds_bucket{le="0.01"} 0
pleg_relist_interval_seconds_bucket{le="0.025"} 0
pleg_relist_interval_seconds_bucket{le="0.05"} 0
pleg_relist_interval_seconds_bucket{le="0.1"} 0
pleg_relist_interval_seconds_bucket{le="0.25"} 0
pleg_relist_interval_seconds_bucket{le="0.5"} 0
pleg_relist_interval_seconds_bucket{le="1"} 1
pleg_relist_interval_seconds_bucket{le="2.5"} 1
pleg_relist_interval_seconds_bucket{le="5"} 1
pleg_relist_interval_seconds_bucket{le="10"} 1
pleg_relist_interval_seconds_bucket{le="+Inf"} 2
pleg_relist_interval_seconds_sum 242
pleg_relist_interval_seconds_count 2
`), "pleg_relist_duration_seconds", "pleg_relist_interval_seconds"); err != nil {
		t.Fatal(err)
	}
}

// Clearing a hang fault releases the relist it holds at once.
func TestGenericPLEGOverFakeRuntimeHangCleared(t *testing.T) {
	n := newFakeNode(t, false)
	sb, _ := n.runPod("p1")
	if _, err := n.rt.AddFault(fault.Spec{Method: "ListPodSandbox", Type: fault.Hang}); err != nil {
		t.Fatal(err)
	}
	loops := n.loops()
	runFor(t, n.clk, time.Hour, loops...)
	if _, ok := n.g.LastRelistTime(); ok || len(n.g.Watch()) != 0 {
		t.Fatal("a relist got through the hang")
	}
	n.rt.ClearFaults()
	runFor(t, n.clk, 0, loops...)
	if last, ok := n.g.LastRelistTime(); !ok || !last.Equal(start) {
		t.Fatalf("LastRelistTime = %v, %v; want the held relist's start", last, ok)
	}
	if diff := cmp.Diff(map[types.UID][]string{"p1": {"ContainerStarted " + sb}}, byPod(drain(n.g.Watch()))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

// TestRelistInterruptedByShutdownIsQuiet: a relist whose context ends, or whose task Stop
// abandons while it waits for the runtime (the daemon stopping), fails, which is not a
// runtime problem worth an error nor a status error for pod workers to see; a listing that
// fails for a real reason still is an error.
func TestRelistInterruptedByShutdownIsQuiet(t *testing.T) {
	tests := []struct {
		name      string
		cancel    bool   // the context ends before the relist
		hang      string // Stop abandons the relist while this call hangs
		fault     bool
		wantError bool
	}{
		{name: "context ended", cancel: true},
		{name: "stopped while listing", hang: "ListPodSandbox"},
		{name: "stopped while reading a status", hang: "PodSandboxStatus"},
		{name: "runtime error", fault: true, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFakeNode(t, false)
			sb, cfg := n.runPod("p1")
			n.startContainer(sb, cfg, "app")
			if tt.fault {
				if _, err := n.rt.AddFault(fault.Spec{Method: "ListPodSandbox", Type: fault.Error, Message: "runtime is down"}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.hang != "" {
				if _, err := n.rt.AddFault(fault.Spec{Method: tt.hang, Type: fault.Hang}); err != nil {
					t.Fatal(err)
				}
			}
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2), ktesting.BufferLogs(true)))
			buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			if tt.cancel {
				cancel()
			}
			defer cancel()
			if tt.hang != "" {
				n.g.Step(ctx)
				if due := n.g.Due(n.clk.Now()); !due.IsZero() {
					t.Fatalf("Due = %v, want the relist waiting for the hung runtime", due)
				}
				n.g.Stop()
			} else {
				n.g.Relist(ctx)
			}
			var problems []string
			if tt.hang != "PodSandboxStatus" {
				if _, ok := n.g.LastRelistTime(); ok {
					t.Fatal("the relist succeeded; the test needs a failing listing")
				}
			}
			logged := strings.Contains(buf.String(), "Unable to retrieve pods") || strings.Contains(buf.String(), "PLEG: Write status")
			if logged != tt.wantError {
				problems = append(problems, fmt.Sprintf("error logged = %t, want %t; log:\n%s", logged, tt.wantError, buf.String()))
			}
			if _, err := n.cache.Get("p1"); err != nil {
				problems = append(problems, fmt.Sprintf("cached status error %q", err))
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

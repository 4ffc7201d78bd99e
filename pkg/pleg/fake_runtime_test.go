package pleg

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
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
}

func newFakeNode(t *testing.T, evented bool) *fakeNode {
	t.Helper()
	clk := testingclock.NewFakeClock(start)
	rt, err := fake.New(fake.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PullImage(context.Background(), cri.ImageSpec{Image: benchImage}, nil); err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{t: t, rt: rt, clk: clk, cache: statuscache.New(statuscache.Config{EventedPLEG: evented}), reg: metrics.NewRegistry("")}
	n.g, err = NewGenericPLEG(Config{Runtime: rt, Cache: n.cache, Clock: clk, Registry: n.reg, EventedPLEG: evented})
	if err != nil {
		t.Fatal(err)
	}
	return n
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

func TestEventedPLEGOverFakeRuntimeFallsBack(t *testing.T) {
	n := newFakeNode(t, true)
	// The stream is refused 5 times: evented gives up and the generic PLEG takes over at 1s.
	if _, err := n.rt.AddFault(fault.Spec{Method: "GetContainerEvents", Type: fault.StreamError, Count: 5}); err != nil {
		t.Fatal(err)
	}
	e, err := NewEventedPLEG(EventedConfig{Generic: n.g, Runtime: n.rt})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n.g.Start(ctx)
	defer n.g.Stop()
	e.Start(ctx)
	defer e.Stop()
	waitFor(t, "fallback", func() bool { return e.ActiveType() == TypeGeneric && !e.InUse() })
	if got := testutil.ToFloat64(n.g.metrics.connErr); got != 5 {
		t.Fatalf("evented_pleg_connection_error_count = %v, want 5", got)
	}
	if got := n.g.RelistDuration(); got != (RelistDuration{time.Second, 3 * time.Minute}) {
		t.Fatalf("generic cadence = %+v", got)
	}
	if got := activeGauge(t, n.reg); got != TypeGeneric {
		t.Fatalf("pleg_active = %q", got)
	}
}

func TestEventedPLEGOverFakeRuntimeStream(t *testing.T) {
	n := newFakeNode(t, true)
	e, err := NewEventedPLEG(EventedConfig{Generic: n.g, Runtime: n.rt})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(context.Background()) // the generic loop is not started: every event comes from the stream
	defer e.Stop()

	// Events of things that happen before the stream is subscribed are not replayed: start
	// pods until one shows up.
	var uid types.UID
	var sb string
	var cfg *cri.PodSandboxConfig
	for i := 0; uid == ""; i++ {
		if i == 1000 {
			t.Fatal("no event from the fake runtime's stream")
		}
		sb, cfg = n.runPod(fmt.Sprintf("p%d", i))
		select {
		case ev := <-e.Watch():
			if ev.Type != ContainerStarted || !strings.HasPrefix(string(ev.ID), "p") {
				t.Fatalf("first event %+v", ev)
			}
			uid = ev.ID
		case <-time.After(20 * time.Millisecond):
		}
	}
	drain(e.Watch())
	if string(uid) != cfg.Metadata.UID {
		// An earlier pod's event arrived late; use the newest pod from here on.
		uid = types.UID(cfg.Metadata.UID)
	}
	app := n.startContainer(sb, cfg, "app")
	expect := func(typ PodLifecycleEventType, id string) {
		t.Helper()
		for {
			select {
			case ev := <-e.Watch():
				if ev.Data != id {
					continue // a late sandbox event of a pod started while probing the stream
				}
				if ev.ID != uid || ev.Type != typ {
					t.Fatalf("event = %+v, want %s %s of %s", ev, typ, id, uid)
				}
				return
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s event", typ)
			}
		}
	}
	expect(ContainerStarted, app)
	st, _ := n.cache.Get(uid)
	if cs := st.FindContainerStatusByName("app"); cs == nil || cs.State != container.ContainerStateRunning {
		t.Fatalf("cached status after the started event: %+v", st)
	}
	n.must(n.rt.StopContainer(context.Background(), app, 0))
	expect(ContainerDied, app)
	n.must(n.rt.RemoveContainer(context.Background(), app))
	expect(ContainerDied, app)
	expect(ContainerRemoved, app)
	if got := testutil.ToFloat64(n.g.metrics.conn); got != 1 {
		t.Fatalf("evented_pleg_connection_success_count = %v, want 1", got)
	}
	if got := activeGauge(t, n.reg); got != TypeEvented {
		t.Fatalf("pleg_active = %q", got)
	}
}

// TestRelistInterruptedByShutdownIsQuiet: a relist whose context ends (the daemon stopping)
// fails its listing, which is not a runtime problem worth an error; a listing that fails
// for a real reason still is one.
func TestRelistInterruptedByShutdownIsQuiet(t *testing.T) {
	tests := []struct {
		name      string
		cancel    bool
		fault     bool
		wantError bool
	}{
		{name: "context ended", cancel: true},
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
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2), ktesting.BufferLogs(true)))
			buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			if tt.cancel {
				cancel()
			}
			defer cancel()
			n.g.Relist(ctx)
			if _, ok := n.g.LastRelistTime(); ok {
				t.Fatal("the relist succeeded; the test needs a failing listing")
			}
			if got := strings.Contains(buf.String(), "Unable to retrieve pods"); got != tt.wantError {
				t.Errorf("error logged = %t, want %t; log:\n%s", got, tt.wantError, buf.String())
			}
		})
	}
}

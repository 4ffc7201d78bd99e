package pleg

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// watcher is a v1.37 EventedPLEG over the node's runtime, asking its generic PLEG.
func (n *fakeNode) watcher(maxRetries int) *EventedPLEG {
	n.t.Helper()
	e, err := NewEventedPLEG(EventedConfig{Generic: n.g, Runtime: n.rt, MaxRetries: maxRetries})
	if err != nil {
		n.t.Fatal(err)
	}
	return e
}

func watcherLoop(e *EventedPLEG) runner.Loop {
	return runner.Loop{Name: "evented-pleg", Due: e.Due, Step: e.Step, Wake: e.Wake()}
}

// TestEventedPLEGFastPath: v1.37's EventedPLEG turns a container exit into a relist of its
// pod at the exit's instant (the generic PLEG sends ContainerDied without waiting for its
// global relist), and turns nothing else into anything: starts wait for the relist.
func TestEventedPLEGFastPath(t *testing.T) {
	tests := []struct {
		name string
		// act changes container app of pod p1 (sandbox sb) 100ms after a global relist.
		act        func(n *fakeNode, sb string, cfg *cri.PodSandboxConfig, app string) string
		wantEvents []string // p1's events at that instant, before any global relist
		wantPodRel int      // pod relists (pleg_pod_relist_duration_seconds observations)
	}{
		{
			name: "exit: ContainerDied at once",
			act: func(n *fakeNode, sb string, cfg *cri.PodSandboxConfig, app string) string {
				n.must(n.rt.StopContainer(context.Background(), app, 0))
				return "ContainerDied " + app
			},
			wantPodRel: 1,
		},
		{
			name: "start: nothing until the global relist",
			act: func(n *fakeNode, sb string, cfg *cri.PodSandboxConfig, app string) string {
				n.startContainer(sb, cfg, "late")
				return ""
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFakeNode(t, false)
			e := n.watcher(0)
			ctx := context.Background()
			e.Activate(ctx)
			loops := append(n.loops(), watcherLoop(e))
			sb, cfg := n.runPod("p1")
			app := n.startContainer(sb, cfg, "app")
			runFor(t, n.clk, 0, loops...) // the first relist finds p1; the stream connects
			drain(n.g.Watch())
			n.clk.Step(100 * time.Millisecond)
			lists := n.listings()
			want := tt.act(n, sb, cfg, app)
			runFor(t, n.clk, 0, loops...)
			var wantEvents []string
			if want != "" {
				wantEvents = []string{want}
			}
			if diff := cmp.Diff(wantEvents, byPod(drain(n.g.Watch()))["p1"]); diff != "" {
				t.Errorf("events at the change's instant (-want +got):\n%s", diff)
			}
			if got := n.listings(); got != lists {
				t.Errorf("%d global relists at the change's instant, want none", got-lists)
			}
			if got := histogramCount(t, n.g.metrics.podRelist); got != tt.wantPodRel {
				t.Errorf("pod relists = %d, want %d", got, tt.wantPodRel)
			}
			if got := testutil.ToFloat64(n.g.metrics.conn); got != 1 {
				t.Errorf("evented_pleg_connection_success_count = %v, want 1", got)
			}
			if got := histogramCount(t, n.g.metrics.connLatency); got == 0 {
				t.Error("evented_pleg_connection_latency_seconds observed no event")
			}
		})
	}
}

// TestEventedPLEGStreamErrors: each failed stream is counted and retried; after maxRetries
// the fast path is disabled with upstream's error, pleg_active turns generic, and the
// generic PLEG still finds exits within its 1s period. Fewer failures change nothing.
func TestEventedPLEGStreamErrors(t *testing.T) {
	const disabled = "Evented PLEG: disabling container-termination fast path after exhausting event stream retries"
	tests := []struct {
		name       string
		failures   int
		wantActive string
		wantFast   bool // the exit is seen at its instant
	}{
		{"one broken stream: reconnected", 1, TypeEvented, true},
		{"four of five: still watching", 4, TypeEvented, true},
		{"five of five: disabled", 5, TypeGeneric, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFakeNode(t, false)
			logs := &logRecorder{}
			ctx := logs.ctx()
			e := n.watcher(5)
			e.Activate(ctx)
			loops := append(n.loops(), watcherLoop(e))
			sb, cfg := n.runPod("p1")
			app := n.startContainer(sb, cfg, "app")
			if _, err := n.rt.AddFault(fault.Spec{Method: "GetContainerEvents", Type: fault.StreamError, Count: tt.failures}); err != nil {
				t.Fatal(err)
			}
			if err := runner.NewSim(n.clk, loops).RunUntil(ctx, n.clk.Now().Add(10*time.Second), nil); err != nil {
				t.Fatal(err)
			}
			drain(n.g.Watch())
			if got := testutil.ToFloat64(n.g.metrics.connErr); got != float64(tt.failures) {
				t.Fatalf("evented_pleg_connection_error_count = %v, want %d", got, tt.failures)
			}
			if got := logs.count(disabled); got != map[bool]int{true: 1, false: 0}[tt.failures == 5] {
				t.Fatalf("%q logged %d times", disabled, got)
			}
			if e.ActiveType() != tt.wantActive || activeGauge(t, n.reg) != tt.wantActive {
				t.Fatalf("ActiveType = %q, pleg_active = %q; want %q", e.ActiveType(), activeGauge(t, n.reg), tt.wantActive)
			}
			if e.Watching() != tt.wantFast {
				t.Fatalf("Watching = %v, want %v", e.Watching(), tt.wantFast)
			}
			n.clk.Step(100 * time.Millisecond)
			n.must(n.rt.StopContainer(context.Background(), app, 0))
			runFor(t, n.clk, 0, loops...)
			got := byPod(drain(n.g.Watch()))["p1"]
			if fast := len(got) == 1; fast != tt.wantFast {
				t.Fatalf("events at the exit's instant = %v; want the fast path %v", got, tt.wantFast)
			}
			if !tt.wantFast {
				simtest.Run(t, n.clk, loops, time.Second, func() bool { return len(n.g.Watch()) > 0 })
				if got := byPod(drain(n.g.Watch()))["p1"]; !cmp.Equal(got, []string{"ContainerDied " + app}) {
					t.Fatalf("events within the relist period = %v", got)
				}
			}
		})
	}
}

// TestEventedPLEGIgnoresEventWithoutSandbox: upstream's guard against an event whose
// sandbox was deleted before the runtime built it.
func TestEventedPLEGIgnoresEventWithoutSandbox(t *testing.T) {
	n := newFakeNode(t, false)
	logs := &logRecorder{}
	e := n.watcher(0)
	e.HandleEvent(logs.ctx(), &cri.ContainerEventResponse{ContainerID: "c1", ContainerEventType: cri.ContainerStoppedEvent})
	if n.g.QueuedRelists() != 0 {
		t.Fatal("an event without a sandbox asked for a relist")
	}
	if logs.count("Evented PLEG: received ContainerEventResponse with nil PodSandboxStatus") != 1 {
		t.Fatalf("logs = %v", logs.lines)
	}
}

func TestNewEventedPLEGValidates(t *testing.T) {
	n := newFakeNode(t, false)
	tests := []struct {
		name    string
		cfg     EventedConfig
		wantErr string
	}{
		{"no generic", EventedConfig{Runtime: n.rt}, "generic PLEG is required"},
		{"no runtime", EventedConfig{Generic: n.g}, "runtime is required"},
		{"negative retries", EventedConfig{Generic: n.g, Runtime: n.rt, MaxRetries: -1}, "maxRetries must be positive, got -1"},
		{"defaults", EventedConfig{Generic: n.g, Runtime: n.rt}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewEventedPLEG(tt.cfg)
			if tt.wantErr == "" {
				if err != nil || e.maxRetries != DefaultMaxStreamRetries {
					t.Fatalf("err = %v, maxRetries = %d", err, e.maxRetries)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

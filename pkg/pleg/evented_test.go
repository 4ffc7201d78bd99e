package pleg

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
)

// scriptedStream is an event stream: each connection returns the next scripted error
// right away, or (once the script runs out) sends the queued events and blocks until ctx ends.
type scriptedStream struct {
	mu     sync.Mutex
	errs   []error
	events []*cri.ContainerEventResponse
	conns  int
}

func (s *scriptedStream) GetContainerEvents(ctx context.Context, ch chan<- *cri.ContainerEventResponse) error {
	s.mu.Lock()
	s.conns++
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		s.mu.Unlock()
		return err
	}
	evs := s.events
	s.events = nil
	s.mu.Unlock()
	for _, e := range evs {
		select {
		case ch <- e:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

func sandboxStatus(uid, id string, state cri.PodSandboxState) *cri.PodSandboxStatus {
	return &cri.PodSandboxStatus{ID: id, Metadata: cri.PodSandboxMetadata{Name: "pod-" + uid, UID: uid, Namespace: "default"}, State: state, IP: "10.0.0.7"}
}

func event(typ cri.ContainerEventType, cid string, at time.Time, sb *cri.PodSandboxStatus, cs ...*cri.ContainerStatus) *cri.ContainerEventResponse {
	return &cri.ContainerEventResponse{ContainerID: cid, ContainerEventType: typ, CreatedAt: at.UnixNano(), PodSandboxStatus: sb, ContainersStatuses: cs}
}

func criStatus(id string, state cri.ContainerState, created time.Time) *cri.ContainerStatus {
	return &cri.ContainerStatus{ID: id, Metadata: cri.ContainerMetadata{Name: "c-" + id, Attempt: 2}, State: state, CreatedAt: created.UnixNano(), ExitCode: 3}
}

type eventedFixture struct {
	*fixture
	stream *scriptedStream
	e      *EventedPLEG
}

func newEventedFixture(t *testing.T, stream *scriptedStream) *eventedFixture {
	t.Helper()
	f := newFixture(t, func(c *Config) { c.EventedPLEG = true })
	e, err := NewEventedPLEG(EventedConfig{Generic: f.g, Runtime: stream})
	if err != nil {
		t.Fatal(err)
	}
	return &eventedFixture{fixture: f, stream: stream, e: e}
}

func TestHandleEvent(t *testing.T) {
	at := start.Add(10 * time.Second)
	sb := sandboxStatus("a", "s1", cri.SandboxReady)
	tests := []struct {
		name       string
		cachedAt   *time.Time // a status already cached at this time
		ev         *cri.ContainerEventResponse
		wantEvents []string
		wantCached string // "event": the event's status; "old": the earlier one; "none": deleted
	}{
		{"started", nil, event(cri.ContainerStartedEvent, "c1", at, sb, criStatus("c1", cri.ContainerRunning, at)),
			[]string{"ContainerStarted c1"}, "event"},
		{"stopped", nil, event(cri.ContainerStoppedEvent, "c1", at, sb, criStatus("c1", cri.ContainerExited, at)),
			[]string{"ContainerDied c1"}, "event"},
		{"created: status only", nil, event(cri.ContainerCreatedEvent, "c1", at, sb, criStatus("c1", cri.ContainerCreated, at)),
			nil, "event"},
		{"container deleted: died and removed, cache kept", ptr(start), event(cri.ContainerDeletedEvent, "c1", at, sb),
			[]string{"ContainerDied c1", "ContainerRemoved c1"}, "old"},
		{"sandbox deleted: cache entry dropped", ptr(start), event(cri.ContainerDeletedEvent, "s1", at, sb),
			[]string{"ContainerDied s1", "ContainerRemoved s1"}, "none"},
		{"older than the cache: dropped", ptr(at.Add(time.Second)), event(cri.ContainerStartedEvent, "c1", at, sb, criStatus("c1", cri.ContainerRunning, at)),
			nil, "old"},
		{"same time as the cache: applied", ptr(at), event(cri.ContainerStartedEvent, "c1", at, sb, criStatus("c1", cri.ContainerRunning, at)),
			[]string{"ContainerStarted c1"}, "event"},
		{"no sandbox status: ignored", nil, event(cri.ContainerStartedEvent, "c1", at, nil), nil, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newEventedFixture(t, &scriptedStream{})
			if tt.cachedAt != nil {
				f.cache.Set("a", &container.PodStatus{ID: "a", Name: "old"}, nil, *tt.cachedAt)
			}
			f.clk.SetTime(at.Add(2 * time.Second))
			f.e.HandleEvent(context.Background(), tt.ev)
			var got []string
			for _, e := range drain(f.e.Watch()) {
				if e.ID != "a" {
					t.Fatalf("event for pod %q", e.ID)
				}
				got = append(got, fmt.Sprintf("%s %v", e.Type, e.Data))
			}
			if diff := cmp.Diff(tt.wantEvents, got); diff != "" {
				t.Fatalf("events (-want +got):\n%s", diff)
			}
			st, _ := f.cache.Get("a")
			switch tt.wantCached {
			case "old":
				if st.Name != "old" {
					t.Fatalf("cache = %+v, want the earlier status kept", st)
				}
			case "none":
				if st.Name != "" {
					t.Fatalf("cache = %+v, want no entry", st)
				}
			case "event":
				if st.Name != "pod-a" || !st.TimeStamp.Equal(at) || len(st.IPs) != 1 || len(st.SandboxStatuses) != 1 {
					t.Fatalf("cache = %+v, want the event's status at %v", st, at)
				}
				if cs := st.ContainerStatuses; len(cs) != 1 || cs[0].ID.ID != "c1" || cs[0].RestartCount != 2 || cs[0].ExitCode != 3 || !cs[0].CreatedAt.Equal(at) {
					t.Fatalf("container statuses = %+v", cs)
				}
				if _, ok, _ := f.cache.GetIfNewerThan("a", at.Add(-time.Nanosecond)); !ok {
					t.Fatal("cache entry not stamped with the event time")
				}
			}
		})
	}
}

func TestHandleEventObservesLatency(t *testing.T) {
	f := newEventedFixture(t, &scriptedStream{})
	at := start
	f.clk.SetTime(at.Add(1500 * time.Millisecond))
	f.e.HandleEvent(context.Background(), event(cri.ContainerStartedEvent, "c1", at, sandboxStatus("a", "s1", cri.SandboxReady)))
	want := `
# HELP evented_pleg_connection_latency_seconds [ALPHA] The latency of streaming connection with the CRI runtime, measured in seconds.
# TYPE evented_pleg_connection_latency_seconds histogram
evented_pleg_connection_latency_seconds_bucket{le="0.005"} 0
evented_pleg_connection_latency_seconds_bucket{le="0.01"} 0
evented_pleg_connection_latency_seconds_bucket{le="0.025"} 0
evented_pleg_connection_latency_seconds_bucket{le="0.05"} 0
evented_pleg_connection_latency_seconds_bucket{le="0.1"} 0
evented_pleg_connection_latency_seconds_bucket{le="0.25"} 0
evented_pleg_connection_latency_seconds_bucket{le="0.5"} 0
evented_pleg_connection_latency_seconds_bucket{le="1"} 0
evented_pleg_connection_latency_seconds_bucket{le="2.5"} 1
evented_pleg_connection_latency_seconds_bucket{le="5"} 1
evented_pleg_connection_latency_seconds_bucket{le="10"} 1
evented_pleg_connection_latency_seconds_bucket{le="+Inf"} 1
evented_pleg_connection_latency_seconds_sum 1.5
evented_pleg_connection_latency_seconds_count 1
`
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(want), "evented_pleg_connection_latency_seconds"); err != nil {
		t.Fatal(err)
	}
}

func activeGauge(t *testing.T, reg *metrics.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var active []string
	for _, mf := range mfs {
		if mf.GetName() != "pleg_active" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetGauge().GetValue() == 1 {
				active = append(active, m.GetLabel()[0].GetValue())
			}
		}
	}
	return strings.Join(active, ",")
}

func TestEventedFallbackAfterStreamErrors(t *testing.T) {
	tests := []struct {
		name         string
		errors       int
		wantFallback bool
	}{
		{"4 errors: evented stays", 4, false},
		{"5 errors: falls back to generic at 1s/3m", 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			stream := &scriptedStream{}
			for i := 0; i < tt.errors; i++ {
				stream.errs = append(stream.errs, fmt.Errorf("stream broken %d", i))
			}
			f := newEventedFixture(t, stream)
			ctx := context.Background()
			f.g.Start(ctx)
			waitFor(t, "first generic relist", func() bool { return f.rt.lists() >= 1 })
			f.e.Start(ctx)

			waitFor(t, "stream attempts", func() bool {
				return testutil.ToFloat64(f.g.metrics.connErr) == float64(tt.errors) && f.e.InUse() != tt.wantFallback
			})
			// Every failed stream forced a relist.
			waitFor(t, "forced relists", func() bool { return f.rt.lists() >= 1+tt.errors })

			if tt.wantFallback {
				if got := f.g.RelistDuration(); got != (RelistDuration{time.Second, 3 * time.Minute}) {
					t.Fatalf("generic cadence after fallback = %+v, want 1s/3m", got)
				}
				if got := activeGauge(t, f.reg); got != TypeGeneric {
					t.Fatalf("pleg_active = %q, want generic", got)
				}
				if f.e.ActiveType() != TypeGeneric {
					t.Fatalf("ActiveType = %q", f.e.ActiveType())
				}
				// The restarted generic loop relists every second again: within 10 virtual
				// seconds (far below 300s) it relists at least 3 more times.
				n := f.rt.lists()
				for i := 0; i < 10 && f.rt.lists() < n+3; i++ {
					waitFor(t, "loop parked", func() bool { return f.clk.HasWaiters() })
					f.clk.Step(time.Second)
					waitFor(t, "loop parked again", func() bool { return f.clk.HasWaiters() })
				}
				if got := f.rt.lists(); got < n+3 {
					t.Fatalf("relists in 10s after fallback = %d, want >= 3", got-n)
				}
				stream.mu.Lock()
				conns := stream.conns
				stream.mu.Unlock()
				if conns != tt.errors {
					t.Fatalf("stream connections = %d, want %d (no attempt after falling back)", conns, tt.errors)
				}
			} else {
				if got := f.g.RelistDuration(); got != (RelistDuration{300 * time.Second, 10 * time.Minute}) {
					t.Fatalf("generic cadence while evented = %+v, want 300s/10m", got)
				}
				if got := activeGauge(t, f.reg); got != TypeEvented {
					t.Fatalf("pleg_active = %q, want evented", got)
				}
			}
			f.e.Stop()
			f.e.Stop()
			f.g.Stop()
			waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
		})
	}
}

func TestEventedStreamDeliversEvents(t *testing.T) {
	at := start
	stream := &scriptedStream{events: []*cri.ContainerEventResponse{
		event(cri.ContainerStartedEvent, "c1", at, sandboxStatus("a", "s1", cri.SandboxReady), criStatus("c1", cri.ContainerRunning, at)),
	}}
	f := newEventedFixture(t, stream)
	ctx := context.Background()
	f.e.Start(ctx)
	defer f.e.Stop()
	var got *PodLifecycleEvent
	select {
	case got = <-f.e.Watch():
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the stream")
	}
	if got.ID != "a" || got.Type != ContainerStarted || got.Data != "c1" {
		t.Fatalf("event = %+v", got)
	}
	waitFor(t, "connection counted", func() bool { return testutil.ToFloat64(f.g.metrics.conn) == 1 })
	if got := activeGauge(t, f.reg); got != TypeEvented {
		t.Fatalf("pleg_active = %q, want evented", got)
	}
	if n := testutil.ToFloat64(f.g.metrics.connErr); n != 0 {
		t.Fatalf("connection errors = %v", n)
	}
}

// The steps simulate mode drives, without goroutines.
func TestEventedSteps(t *testing.T) {
	f := newEventedFixture(t, &scriptedStream{})
	var logs logRecorder
	ctx := logs.ctx()
	if !f.e.Activate(ctx) || f.e.Activate(ctx) {
		t.Fatal("Activate should switch once")
	}
	// Which PLEG is in charge is visible without -v, on every switch.
	const toEvented = `"Switched PLEG" "active"="evented" "previous"="generic" "reason"="EventedPLEG started"`
	if n := logs.count(toEvented); n != 1 {
		t.Fatalf("switch log lines = %d, want 1: %q", n, logs.lines)
	}
	if got := f.g.RelistDuration(); got != (RelistDuration{300 * time.Second, 10 * time.Minute}) {
		t.Fatalf("generic cadence = %+v", got)
	}
	for i := 1; i <= 5; i++ {
		fellBack := f.e.HandleStreamError(ctx, errors.New("broken"))
		if fellBack != (i == 5) {
			t.Fatalf("attempt %d: fell back = %v", i, fellBack)
		}
	}
	if f.e.InUse() || f.g.RelistDuration() != (RelistDuration{time.Second, 3 * time.Minute}) || f.rt.lists() != 5 {
		t.Fatalf("after 5 errors: inUse=%v cadence=%+v relists=%d", f.e.InUse(), f.g.RelistDuration(), f.rt.lists())
	}
	const toGeneric = `"Switched PLEG" "active"="generic" "previous"="evented" "reason"="Fall back to Generic PLEG relisting since Evented PLEG is not working"`
	if n := logs.count(toGeneric); n != 1 {
		t.Fatalf("fallback log lines = %d, want 1: %q", n, logs.lines)
	}
	if got := activeGauge(t, f.reg); got != TypeGeneric {
		t.Fatalf("pleg_active = %q, want generic", got)
	}
	// Not running: the fallback must not have started a loop.
	f.g.runMu.Lock()
	running := f.g.group != nil
	f.g.runMu.Unlock()
	if running {
		t.Fatal("fallback started the generic loop of a PLEG that was not running")
	}

	// UpdateGlobalCache wakes pod workers waiting for anything newer than before now (for a
	// pod the cache holds: an unknown one is answered at once in EventedPLEG mode).
	f.cache.Set("a", &container.PodStatus{ID: "a"}, nil, f.clk.Now())
	f.clk.Step(time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := f.cache.GetNewerThan(ctx, "a", f.clk.Now().Add(-time.Millisecond))
		done <- err
	}()
	waitFor(t, "waiter parked", func() bool { return f.cache.NumWaiters() == 1 })
	f.e.UpdateGlobalCache()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestEventedHealthy(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ChannelCapacity = 1 })
	e, err := NewEventedPLEG(EventedConfig{Generic: f.g, Runtime: &scriptedStream{}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.Healthy(); !ok || err != nil {
		t.Fatalf("Healthy = %v, %v", ok, err)
	}
	if got := testutil.ToFloat64(f.g.metrics.lastSeen); got != float64(start.Unix()) {
		t.Fatalf("pleg_last_seen_seconds = %v, want now", got)
	}
	f.g.Watch() <- &PodLifecycleEvent{}
	ok, err := e.Healthy()
	if ok || err == nil || err.Error() != "EventedPLEG: pleg event channel capacity is full with 1 events" {
		t.Fatalf("Healthy with a full channel = %v, %v", ok, err)
	}
	if e.Name() != "EventedPLEG" {
		t.Fatalf("Name = %q", e.Name())
	}
}

// While the stream is in charge, a relist whose status read is older than what an event
// already cached is not applied: its events are withheld and the record not advanced.
func TestRelistDefersToNewerEventedStatus(t *testing.T) {
	f := newEventedFixture(t, &scriptedStream{})
	ctx := context.Background()
	f.e.Activate(ctx)
	f.cache.Set("a", &container.PodStatus{ID: "a", Name: "from-event"}, nil, start.Add(time.Minute))
	f.rt.set(pod("a", []*container.Container{ctr("a1", running)}))
	f.g.Relist(ctx)
	if got := drain(f.g.Watch()); len(got) != 0 {
		t.Fatalf("events = %v, want none (cache kept the newer status)", got)
	}
	if st, _ := f.cache.Get("a"); st.Name != "from-event" {
		t.Fatalf("cache = %+v, want the event's status kept", st)
	}
	// Once the relist is newer, the change is found again and delivered.
	f.clk.Step(2 * time.Minute)
	f.g.Relist(ctx)
	if diff := cmp.Diff(map[types.UID][]string{"a": {"ContainerStarted a1"}}, byPod(drain(f.g.Watch()))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

func TestNewEventedPLEGValidates(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name    string
		cfg     EventedConfig
		wantErr string
	}{
		{"no generic", EventedConfig{Runtime: &scriptedStream{}}, "generic PLEG is required"},
		{"no runtime", EventedConfig{Generic: f.g}, "runtime is required"},
		{"negative retries", EventedConfig{Generic: f.g, Runtime: &scriptedStream{}, MaxRetries: -1}, "maxRetries must be positive, got -1"},
		{"bad evented cadence", EventedConfig{Generic: f.g, Runtime: &scriptedStream{}, EventedRelistPeriod: -time.Hour}, "evented relistPeriod must be positive, got -1h0m0s"},
		{"bad generic cadence", EventedConfig{Generic: f.g, Runtime: &scriptedStream{}, GenericRelistThreshold: -time.Second}, "generic relistThreshold must be positive, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewEventedPLEG(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// The number of stream failures tolerated and the cadence restored on fallback come from
// the configuration (eventedPLEG.maxRetries, pleg.relistPeriod/relistThreshold).
func TestEventedFallbackIsConfigurable(t *testing.T) {
	tests := []struct {
		name        string
		cfg         EventedConfig
		wantRetries int
		wantRestore RelistDuration
	}{
		{"defaults", EventedConfig{}, 5, RelistDuration{time.Second, 3 * time.Minute}},
		{"one retry", EventedConfig{MaxRetries: 1}, 1, RelistDuration{time.Second, 3 * time.Minute}},
		{"custom generic cadence", EventedConfig{MaxRetries: 3, GenericRelistPeriod: 2 * time.Second, GenericRelistThreshold: time.Minute}, 3, RelistDuration{2 * time.Second, time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.EventedPLEG = true })
			cfg := tt.cfg
			cfg.Generic, cfg.Runtime = f.g, &scriptedStream{}
			e, err := NewEventedPLEG(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			e.Activate(ctx)
			for i := 1; i < tt.wantRetries; i++ {
				if e.HandleStreamError(ctx, errors.New("broken")) || !e.InUse() {
					t.Fatalf("fell back after %d of %d failures", i, tt.wantRetries)
				}
			}
			if !e.HandleStreamError(ctx, errors.New("broken")) || e.InUse() {
				t.Fatalf("still evented after %d failures", tt.wantRetries)
			}
			if got := f.g.RelistDuration(); got != tt.wantRestore {
				t.Fatalf("generic cadence after fallback = %+v, want %+v", got, tt.wantRestore)
			}
			if got := testutil.ToFloat64(f.g.metrics.connErr); got != float64(tt.wantRetries) {
				t.Fatalf("evented_pleg_connection_error_count = %v, want %d", got, tt.wantRetries)
			}
			if got := f.rt.lists(); got != tt.wantRetries {
				t.Fatalf("forced relists = %d, want one per failure", got)
			}
		})
	}
}

// A status built from an event orders containers as one read from the runtime: newest first,
// so the kubelet finds a container's current instance first.
func TestHandleEventStatusesNewestFirst(t *testing.T) {
	f := newEventedFixture(t, &scriptedStream{})
	at := start.Add(time.Minute)
	sb := sandboxStatus("a", "s1", cri.SandboxReady)
	f.e.HandleEvent(context.Background(), event(cri.ContainerStartedEvent, "new", at, sb,
		criStatus("old", cri.ContainerExited, at.Add(-time.Minute)), criStatus("new", cri.ContainerRunning, at), nil))
	st, _ := f.cache.Get("a")
	var ids []string
	for _, cs := range st.ContainerStatuses {
		ids = append(ids, cs.ID.ID)
	}
	if diff := cmp.Diff([]string{"new", "old"}, ids); diff != "" {
		t.Fatalf("cached container statuses (-want +got):\n%s", diff)
	}
}

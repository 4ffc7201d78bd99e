package pleg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// scriptedStream is a runtime's event stream. Each connection attempt takes the next
// scripted error (refused), or once the script runs out connects and hands out the queued
// events. hold, when set, makes an attempt wait for it (a runtime slow to answer).
type scriptedStream struct {
	mu     sync.Mutex
	errs   []error
	events []*cri.ContainerEventResponse // handed to the next connection
	hold   *task.Op
	conns  int // connection attempts
	cur    *scriptedConn
}

// scriptedConn is one connection; its fields are guarded by the stream's mutex.
type scriptedConn struct {
	s      *scriptedStream
	notify func()
	events []*cri.ContainerEventResponse
	err    error // why it ended
}

var errConnClosed = errors.New("connection closed")

func (s *scriptedStream) GetContainerEvents(ctx context.Context, notify func()) (cri.ContainerEventStream, error) {
	s.mu.Lock()
	s.conns++
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		if err := task.Await(ctx, hold); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return nil, err
	}
	c := &scriptedConn{s: s, notify: notify, events: s.events}
	s.events, s.cur = nil, c
	return c, nil
}

func (s *scriptedStream) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// send puts an event on the current connection and notifies, as a runtime does.
func (s *scriptedStream) send(ev *cri.ContainerEventResponse) {
	s.mu.Lock()
	c := s.cur
	c.events = append(c.events, ev)
	s.mu.Unlock()
	c.notify()
}

// breakConn ends the current connection with err: the events not yet received are lost.
func (s *scriptedStream) breakConn(err error) {
	s.mu.Lock()
	c := s.cur
	c.err, c.events = err, nil
	s.cur = nil
	s.mu.Unlock()
	c.notify()
}

// connected reports whether a connection is open (not broken nor closed).
func (s *scriptedStream) connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur != nil && s.cur.err == nil
}

func (c *scriptedConn) Recv() (*cri.ContainerEventResponse, bool, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if len(c.events) > 0 {
		ev := c.events[0]
		c.events = c.events[1:]
		return ev, true, nil
	}
	return nil, false, c.err
}

func (c *scriptedConn) Len() int {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return len(c.events)
}

func (c *scriptedConn) Close() {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.err == nil {
		c.err = errConnClosed
	}
	if c.s.cur == c {
		c.s.cur = nil
	}
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
	e      *LegacyEventedPLEG
}

func newEventedFixture(t *testing.T, stream *scriptedStream) *eventedFixture {
	t.Helper()
	f := newFixture(t, func(c *Config) { c.LegacyEvented = true })
	e, err := NewLegacyEventedPLEG(LegacyEventedConfig{Generic: f.g, Runtime: stream})
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

// relistIfDue runs the generic PLEG's relist when its loop is due now (a forced relist)
// and reports whether it did.
func (f *eventedFixture) relistIfDue() bool {
	now := f.clk.Now()
	if due := f.g.Due(now); due.IsZero() || due.After(now) {
		return false
	}
	f.g.Step(context.Background())
	return true
}

func (f *eventedFixture) loops() []runner.Loop {
	return []runner.Loop{genericLoop(f.g), eventedLoop(f.e)}
}

// Each failed connection attempt counts an error and forces a relist (events may have been
// lost); the attempt after it follows at once, as upstream (no backoff). After the 5th the
// generic PLEG is back in charge at 1s/3m and the stream is not tried again.
func TestEventedFallbackAfterStreamErrors(t *testing.T) {
	tests := []struct {
		name         string
		errors       int
		wantFallback bool
		// Relists in the 10s run: the first at once, one forced per error (all at the start
		// instant), then the cadence: 300s while evented, 1s after the fallback.
		wantLists int
	}{
		{"4 errors: evented stays", 4, false, 1 + 4},
		{"5 errors: falls back to generic at 1s/3m", 5, true, 1 + 5 + 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := &scriptedStream{}
			for i := 0; i < tt.errors; i++ {
				stream.errs = append(stream.errs, fmt.Errorf("stream broken %d", i))
			}
			f := newEventedFixture(t, stream)
			f.e.Activate(context.Background())
			runFor(t, f.clk, 10*time.Second, f.loops()...)

			if got := testutil.ToFloat64(f.g.metrics.connErr); got != float64(tt.errors) {
				t.Fatalf("evented_pleg_connection_error_count = %v, want %d", got, tt.errors)
			}
			if got := f.rt.lists(); got != tt.wantLists {
				t.Fatalf("relists = %d, want %d", got, tt.wantLists)
			}
			if f.e.InUse() == tt.wantFallback {
				t.Fatalf("InUse = %v, want %v", f.e.InUse(), !tt.wantFallback)
			}
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
				if n := stream.attempts(); n != tt.errors {
					t.Fatalf("connection attempts = %d, want %d (none after falling back)", n, tt.errors)
				}
				if due := f.e.Due(f.clk.Now()); !due.IsZero() {
					t.Fatalf("evented loop due at %v after the fallback, want idle", due)
				}
				if got := testutil.ToFloat64(f.g.metrics.conn); got != 0 {
					t.Fatalf("evented_pleg_connection_success_count = %v, want 0", got)
				}
			} else {
				if got := f.g.RelistDuration(); got != (RelistDuration{300 * time.Second, 10 * time.Minute}) {
					t.Fatalf("generic cadence while evented = %+v, want 300s/10m", got)
				}
				if got := activeGauge(t, f.reg); got != TypeEvented {
					t.Fatalf("pleg_active = %q, want evented", got)
				}
				if got := testutil.ToFloat64(f.g.metrics.conn); got != 1 || !stream.connected() {
					t.Fatalf("evented_pleg_connection_success_count = %v, connected %v; want the 5th attempt connected", got, stream.connected())
				}
			}
			f.e.Stop()
			f.e.Stop() // idempotent
			if stream.connected() || !f.e.Due(f.clk.Now()).IsZero() || f.e.InUse() {
				t.Fatal("Stop left the stream connected or the loop due")
			}
		})
	}
}

// Events arrive through the stream's notification: the loop wakes, is due at once and
// turns every waiting event into a pod lifecycle event, including the ones queued before the
// connection was read.
func TestEventedLoopDeliversStreamEvents(t *testing.T) {
	at := start
	sb := sandboxStatus("a", "s1", cri.SandboxReady)
	stream := &scriptedStream{events: []*cri.ContainerEventResponse{
		event(cri.ContainerStartedEvent, "c1", at, sb, criStatus("c1", cri.ContainerRunning, at)),
	}}
	f := newEventedFixture(t, stream)
	if due := f.e.Due(f.clk.Now()); !due.IsZero() {
		t.Fatalf("Due before Activate = %v, want idle", due)
	}
	f.e.Activate(context.Background())
	if !signalled(f.e.Wake()) || !f.e.Due(f.clk.Now()).Equal(f.clk.Now()) {
		t.Fatal("Activate did not make the loop due to connect")
	}
	loop := eventedLoop(f.e)
	runFor(t, f.clk, 0, loop)
	if diff := cmp.Diff(map[types.UID][]string{"a": {"ContainerStarted c1"}}, byPod(drain(f.e.Watch()))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	// Connected and idle: next due is the global cache bump.
	if due := f.e.Due(f.clk.Now()); !due.Equal(start.Add(DefaultGlobalCacheUpdatePeriod)) {
		t.Fatalf("Due when idle = start+%v, want the cache bump at start+5s", due.Sub(start))
	}

	f.clk.Step(time.Second)
	stream.send(event(cri.ContainerStoppedEvent, "c1", f.clk.Now(), sb, criStatus("c1", cri.ContainerExited, at)))
	stream.send(event(cri.ContainerDeletedEvent, "c1", f.clk.Now(), sb))
	if !signalled(f.e.Wake()) || !f.e.Due(f.clk.Now()).Equal(f.clk.Now()) {
		t.Fatal("an event did not wake the loop")
	}
	runFor(t, f.clk, 0, loop)
	if diff := cmp.Diff(map[types.UID][]string{"a": {"ContainerDied c1", "ContainerDied c1", "ContainerRemoved c1"}}, byPod(drain(f.e.Watch()))); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(f.g.metrics.conn); got != 1 {
		t.Fatalf("evented_pleg_connection_success_count = %v, want 1", got)
	}
	if n := testutil.ToFloat64(f.g.metrics.connErr); n != 0 {
		t.Fatalf("connection errors = %v", n)
	}
	if got := activeGauge(t, f.reg); got != TypeEvented {
		t.Fatalf("pleg_active = %q, want evented", got)
	}
}

// A stream that breaks after connecting counts an error, forces a relist and is reconnected
// at once. As upstream the failure count is never reset by a successful connection: the 5th
// broken stream falls back even with successful connections in between.
func TestEventedReconnectsAfterBrokenStream(t *testing.T) {
	stream := &scriptedStream{}
	f := newEventedFixture(t, stream)
	f.e.Activate(context.Background())
	loops := f.loops()
	runFor(t, f.clk, 0, loops...) // the first relist, and the connection
	for i := 1; i <= 5; i++ {
		f.clk.Step(time.Second)
		lists := f.rt.lists()
		stream.breakConn(fmt.Errorf("broken %d", i))
		runFor(t, f.clk, 0, loops...)
		if got := f.rt.lists(); got != lists+1 {
			t.Fatalf("break %d: %d relists, want one forced relist", i, got-lists)
		}
		if got := testutil.ToFloat64(f.g.metrics.connErr); got != float64(i) {
			t.Fatalf("break %d: evented_pleg_connection_error_count = %v", i, got)
		}
		if i < 5 {
			if !stream.connected() || testutil.ToFloat64(f.g.metrics.conn) != float64(i+1) {
				t.Fatalf("break %d: not reconnected (successes %v)", i, testutil.ToFloat64(f.g.metrics.conn))
			}
			continue
		}
		if f.e.InUse() || stream.connected() || activeGauge(t, f.reg) != TypeGeneric {
			t.Fatalf("after the 5th broken stream: inUse=%v connected=%v, want the fallback", f.e.InUse(), stream.connected())
		}
	}
}

// A connection attempt the runtime is slow to answer is a pending task: the loop is not due
// for it (only for the global cache bump meanwhile), and the answer wakes it.
func TestEventedConnectionAttemptWaits(t *testing.T) {
	hold := task.NewOp()
	stream := &scriptedStream{hold: hold}
	f := newEventedFixture(t, stream)
	f.e.Activate(context.Background())
	loop := eventedLoop(f.e)
	runFor(t, f.clk, 0, loop)
	if n := stream.attempts(); n != 1 {
		t.Fatalf("connection attempts = %d, want 1", n)
	}
	if due := f.e.Due(f.clk.Now()); !due.Equal(start.Add(5 * time.Second)) {
		t.Fatalf("Due while connecting = start+%v, want the cache bump (start+5s)", due.Sub(start))
	}
	// The cache bump goes on while the connection waits.
	woken := false
	f.cache.Set("a", &container.PodStatus{ID: "a"}, nil, start)
	if f.cache.NotifyWhenNewer("a", start.Add(4*time.Second), func() { woken = true }) {
		t.Fatal("the cache is already fresh enough")
	}
	runFor(t, f.clk, 5*time.Second, loop)
	if !woken {
		t.Fatal("the global cache time was not bumped while connecting")
	}
	drainSignal(f.e.Wake())
	hold.Complete(nil)
	if !signalled(f.e.Wake()) || !f.e.Due(f.clk.Now()).Equal(f.clk.Now()) {
		t.Fatal("the runtime's answer did not wake the loop")
	}
	runFor(t, f.clk, 0, loop)
	if !stream.connected() || testutil.ToFloat64(f.g.metrics.conn) != 1 || stream.attempts() != 1 {
		t.Fatalf("connected=%v successes=%v attempts=%d, want one successful attempt", stream.connected(), testutil.ToFloat64(f.g.metrics.conn), stream.attempts())
	}
}

// Stop during a connection attempt abandons it, without counting it as a failed connection;
// Activate later starts over.
func TestEventedStopWhileConnecting(t *testing.T) {
	hold := task.NewOp()
	stream := &scriptedStream{hold: hold}
	f := newEventedFixture(t, stream)
	ctx := context.Background()
	f.e.Activate(ctx)
	f.e.Step(ctx)
	f.e.Stop()
	hold.Complete(nil)
	if stream.connected() || testutil.ToFloat64(f.g.metrics.conn) != 0 {
		t.Fatal("an abandoned connection attempt connected")
	}
	// Stopping is not a connection failure: an abandoned attempt's Await returns
	// task.ErrStopped with ctx still live.
	if n := testutil.ToFloat64(f.g.metrics.connErr); n != 0 {
		t.Errorf("Stop during a connection attempt counted %v evented_pleg_connection_error_count, want 0", n)
	}
	if due := f.e.Due(f.clk.Now()); !due.IsZero() {
		t.Fatalf("Due after Stop = %v, want idle", due)
	}
	if !f.e.Activate(ctx) {
		t.Fatal("Activate after Stop did not take charge again")
	}
	runFor(t, f.clk, 0, eventedLoop(f.e))
	if !stream.connected() || stream.attempts() != 2 {
		t.Fatalf("connected=%v after %d attempts, want a new connection", stream.connected(), stream.attempts())
	}
}

// The evented PLEG shares the generic one's channel and discard counter.
func TestEventedChannelFullDiscards(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ChannelCapacity = 1; c.LegacyEvented = true })
	e, err := NewLegacyEventedPLEG(LegacyEventedConfig{Generic: f.g, Runtime: &scriptedStream{}})
	if err != nil {
		t.Fatal(err)
	}
	sb := sandboxStatus("a", "s1", cri.SandboxReady)
	var logs logRecorder
	e.HandleEvent(logs.ctx(), event(cri.ContainerDeletedEvent, "c1", start, sb))
	if got := drain(e.Watch()); len(got) != 1 || got[0].Type != ContainerDied {
		t.Fatalf("delivered = %v, want the first event", got)
	}
	if n := f.g.DiscardedEvents(); n != 1 {
		t.Fatalf("DiscardedEvents = %d, want 1", n)
	}
	if got := testutil.ToFloat64(f.g.metrics.discardEvents); got != 1 {
		t.Fatalf("pleg_discard_events = %v, want 1", got)
	}
	if n := logs.count(`"Evented PLEG: Event channel is full, discarded pod lifecycle event"`); n != 1 {
		t.Fatalf("discard log lines = %d: %q", n, logs.lines)
	}
}

// The state changes and the global cache bump, called directly as the loop does.
func TestEventedSteps(t *testing.T) {
	f := newEventedFixture(t, &scriptedStream{})
	var logs logRecorder
	ctx := logs.ctx()
	f.g.Step(ctx) // the generic loop's first relist: from now on it relists when due
	if !f.e.Activate(ctx) || f.e.Activate(ctx) {
		t.Fatal("Activate should switch once")
	}
	// Which PLEG is in charge is visible without -v, on every switch.
	const toEvented = `"level"=0 "msg"="Switched PLEG" "active"="evented" "previous"="generic" "reason"="EventedPLEG started"`
	if n := logs.count(toEvented); n != 1 {
		t.Fatalf("switch log lines = %d, want 1: %q", n, logs.lines)
	}
	if got := f.g.RelistDuration(); got != (RelistDuration{300 * time.Second, 10 * time.Minute}) {
		t.Fatalf("generic cadence = %+v", got)
	}
	// The relist scheduled before Activate keeps its time; the one after it waits 300s.
	f.clk.Step(time.Second)
	if !f.relistIfDue() {
		t.Fatal("the relist scheduled at the old cadence did not run")
	}
	if due := f.g.Due(f.clk.Now()); !due.Equal(f.clk.Now().Add(300 * time.Second)) {
		t.Fatalf("next relist in %v, want 300s", due.Sub(f.clk.Now()))
	}
	for i := 1; i <= 5; i++ {
		fellBack := f.e.HandleStreamError(ctx, errors.New("broken"))
		if fellBack != (i == 5) {
			t.Fatalf("attempt %d: fell back = %v", i, fellBack)
		}
		if !f.relistIfDue() {
			t.Fatalf("attempt %d: no forced relist", i)
		}
	}
	if f.e.InUse() || f.g.RelistDuration() != (RelistDuration{time.Second, 3 * time.Minute}) || f.rt.lists() != 2+5 {
		t.Fatalf("after 5 errors: inUse=%v cadence=%+v relists=%d", f.e.InUse(), f.g.RelistDuration(), f.rt.lists())
	}
	if due := f.g.Due(f.clk.Now()); !due.Equal(f.clk.Now().Add(time.Second)) {
		t.Fatalf("next relist in %v after the fallback, want 1s", due.Sub(f.clk.Now()))
	}
	const toGeneric = `"level"=0 "msg"="Switched PLEG" "active"="generic" "previous"="evented" "reason"="Fall back to Generic PLEG relisting since Evented PLEG is not working"`
	if n := logs.count(toGeneric); n != 1 {
		t.Fatalf("fallback log lines = %d, want 1: %q", n, logs.lines)
	}
	// upstream's own lines, at -v=4
	if n := logs.count(`"level"=4 "msg"="Fall back to Generic PLEG relisting since Evented PLEG is not working"`); n != 1 {
		t.Fatalf("upstream fallback log lines = %d, want 1: %q", n, logs.lines)
	}
	if n := logs.count(`"level"=4 "msg"="Evented PLEG: Failed to get container events, retrying: "`); n != 5 {
		t.Fatalf("retry log lines = %d, want 5: %q", n, logs.lines)
	}
	if got := activeGauge(t, f.reg); got != TypeGeneric {
		t.Fatalf("pleg_active = %q, want generic", got)
	}

	// UpdateGlobalCache wakes pod workers waiting for anything newer than before now (for a
	// pod the cache holds: an unknown one is answered at once in EventedPLEG mode).
	f.cache.Set("a", &container.PodStatus{ID: "a"}, nil, f.clk.Now())
	f.clk.Step(time.Second)
	woken := false
	if f.cache.NotifyWhenNewer("a", f.clk.Now().Add(-time.Millisecond), func() { woken = true }) {
		t.Fatal("the cache is already fresh enough")
	}
	f.e.UpdateGlobalCache()
	if !woken || f.cache.NumWaiters() != 0 {
		t.Fatalf("waiter woken = %v, %d left", woken, f.cache.NumWaiters())
	}
}

// The loop bumps the cache's global time every GlobalCacheUpdatePeriod while the stream is
// in charge, so a pod worker waiting for an event that was lost is not stuck.
func TestEventedGlobalCacheBump(t *testing.T) {
	f := newEventedFixture(t, &scriptedStream{})
	f.e.Activate(context.Background())
	loop := eventedLoop(f.e)
	runFor(t, f.clk, 0, loop) // connect
	// In EventedPLEG mode an unknown pod is answered at once: wait on one the cache holds.
	f.cache.Set("a", &container.PodStatus{ID: "a"}, nil, start)
	var woken []time.Duration
	for _, min := range []time.Duration{time.Second, 7 * time.Second} {
		if f.cache.NotifyWhenNewer("a", start.Add(min), func() { woken = append(woken, f.clk.Now().Sub(start)) }) {
			t.Fatal("the cache is already fresh enough")
		}
	}
	runFor(t, f.clk, 12*time.Second, loop)
	if diff := cmp.Diff([]time.Duration{5 * time.Second, 10 * time.Second}, woken); diff != "" {
		t.Fatalf("waiters woken at (-want +got):\n%s", diff)
	}
	if due := f.e.Due(f.clk.Now()); !due.Equal(start.Add(15 * time.Second)) {
		t.Fatalf("next bump at start+%v, want start+15s", due.Sub(start))
	}
}

func TestEventedHealthy(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ChannelCapacity = 1 })
	e, err := NewLegacyEventedPLEG(LegacyEventedConfig{Generic: f.g, Runtime: &scriptedStream{}})
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

func TestNewLegacyEventedPLEGValidates(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name    string
		cfg     LegacyEventedConfig
		wantErr string
	}{
		{"no generic", LegacyEventedConfig{Runtime: &scriptedStream{}}, "generic PLEG is required"},
		{"no runtime", LegacyEventedConfig{Generic: f.g}, "runtime is required"},
		{"negative retries", LegacyEventedConfig{Generic: f.g, Runtime: &scriptedStream{}, MaxRetries: -1}, "maxRetries must be positive, got -1"},
		{"bad evented cadence", LegacyEventedConfig{Generic: f.g, Runtime: &scriptedStream{}, EventedRelistPeriod: -time.Hour}, "evented relistPeriod must be positive, got -1h0m0s"},
		{"bad generic cadence", LegacyEventedConfig{Generic: f.g, Runtime: &scriptedStream{}, GenericRelistThreshold: -time.Second}, "generic relistThreshold must be positive, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLegacyEventedPLEG(tt.cfg)
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
		cfg         LegacyEventedConfig
		wantRetries int
		wantRestore RelistDuration
	}{
		{"defaults", LegacyEventedConfig{}, 5, RelistDuration{time.Second, 3 * time.Minute}},
		{"one retry", LegacyEventedConfig{MaxRetries: 1}, 1, RelistDuration{time.Second, 3 * time.Minute}},
		{"custom generic cadence", LegacyEventedConfig{MaxRetries: 3, GenericRelistPeriod: 2 * time.Second, GenericRelistThreshold: time.Minute}, 3, RelistDuration{2 * time.Second, time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.LegacyEvented = true })
			cfg := tt.cfg
			cfg.Generic, cfg.Runtime = f.g, &scriptedStream{}
			e, err := NewLegacyEventedPLEG(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			f.g.Step(ctx) // the first relist: the generic loop now relists when due
			e.Activate(ctx)
			ef := &eventedFixture{fixture: f, e: e}
			for i := 1; i < tt.wantRetries; i++ {
				if e.HandleStreamError(ctx, errors.New("broken")) || !e.InUse() {
					t.Fatalf("fell back after %d of %d failures", i, tt.wantRetries)
				}
				if !ef.relistIfDue() {
					t.Fatalf("failure %d forced no relist", i)
				}
			}
			if !e.HandleStreamError(ctx, errors.New("broken")) || e.InUse() {
				t.Fatalf("still evented after %d failures", tt.wantRetries)
			}
			if !ef.relistIfDue() {
				t.Fatal("the fallback forced no relist")
			}
			if got := f.g.RelistDuration(); got != tt.wantRestore {
				t.Fatalf("generic cadence after fallback = %+v, want %+v", got, tt.wantRestore)
			}
			if got := testutil.ToFloat64(f.g.metrics.connErr); got != float64(tt.wantRetries) {
				t.Fatalf("evented_pleg_connection_error_count = %v, want %d", got, tt.wantRetries)
			}
			if got := f.rt.lists(); got != 1+tt.wantRetries {
				t.Fatalf("relists = %d, want the first and one forced per failure", got)
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

// A stream error while a relist waits for the runtime forces another relist once that one
// ends (upstream serialises the forced Relist behind the one in flight): the relist in flight
// may have listed before the changes whose events the stream lost, and the next scheduled
// relist is 300s away.
func TestForcedRelistDuringARelistInFlight(t *testing.T) {
	f := newEventedFixture(t, &scriptedStream{})
	ctx := context.Background()
	f.g.Step(ctx) // the first relist
	f.e.Activate(ctx)
	f.clk.Step(time.Second)
	hold := task.NewOp()
	f.rt.setHold(hold)
	f.g.Step(ctx) // the relist due at the old 1s cadence starts and waits
	if f.e.HandleStreamError(ctx, errors.New("broken")) {
		t.Fatal("one error fell back")
	}
	f.rt.setHold(nil)
	hold.Complete(nil)
	f.g.Step(ctx) // the relist in flight ends
	if n := f.rt.lists(); n != 2 {
		t.Fatalf("listings = %d, want 2", n)
	}
	now := f.clk.Now()
	if due := f.g.Due(now); !due.Equal(now) {
		// A trigger during a run is kept: the next run starts when this one ends.
		t.Fatalf("the forced relist was dropped; next relist in %v instead of now", due.Sub(now))
	}
	f.g.Step(ctx)
	if n := f.rt.lists(); n != 3 {
		t.Fatalf("listings = %d, want the forced relist", n)
	}
}

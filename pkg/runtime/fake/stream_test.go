package fake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// stream is a test subscriber of GetContainerEvents: it counts the runtime's notifications
// and receives what has arrived, as the evented PLEG's loop does.
type stream struct {
	t        testing.TB
	s        cri.ContainerEventStream
	notified int
	got      []*cri.ContainerEventResponse
}

func subscribe(t testing.TB, r *Runtime) *stream {
	t.Helper()
	st := &stream{t: t}
	s, err := r.GetContainerEvents(context.Background(), func() { st.notified++ })
	if err != nil {
		t.Fatalf("GetContainerEvents: %v", err)
	}
	st.s = s
	t.Cleanup(s.Close)
	return st
}

// drain receives every event that has arrived and returns them; it fails the test if the
// stream broke.
func (s *stream) drain() []*cri.ContainerEventResponse {
	s.t.Helper()
	evs, err := s.recvAll()
	if err != nil {
		s.t.Fatalf("stream broke: %v", err)
	}
	return evs
}

func (s *stream) recvAll() ([]*cri.ContainerEventResponse, error) {
	start := len(s.got)
	for {
		ev, ok, err := s.s.Recv()
		if !ok {
			return s.got[start:], err
		}
		s.got = append(s.got, ev)
	}
}

// close disconnects and returns what a Recv then reports.
func (s *stream) close() error {
	s.s.Close()
	_, _, err := s.s.Recv()
	return err
}

func eventNames(evs []*cri.ContainerEventResponse) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ContainerEventType.String() + " " + ev.ContainerID
	}
	return out
}

func TestEventStreamOrderAndContents(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	ctx := context.Background()
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: testImage}, nil); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, r)
	sbID, sbCfg := runPod(t, r, "u1", annotate("c", "runFor=10s,exitCode=1"))
	clk.Step(time.Second)
	id := startContainer(t, r, sbID, sbCfg, "c", "")
	clk.Step(15 * time.Second)
	if _, err := r.ListContainers(ctx, nil); err != nil { // any call materialises the exit
		t.Fatal(err)
	}
	if err := r.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := r.StopPodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if err := r.RemovePodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	evs := s.drain()

	type want struct {
		name       string
		at         time.Duration
		containers []cri.ContainerState // ContainersStatuses states
		sandbox    cri.PodSandboxState
	}
	wants := []want{
		{"CONTAINER_CREATED_EVENT " + sbID, 0, nil, cri.SandboxReady},
		{"CONTAINER_STARTED_EVENT " + sbID, 0, nil, cri.SandboxReady},
		{"CONTAINER_CREATED_EVENT " + id, time.Second, []cri.ContainerState{cri.ContainerCreated}, cri.SandboxReady},
		{"CONTAINER_STARTED_EVENT " + id, time.Second, []cri.ContainerState{cri.ContainerRunning}, cri.SandboxReady},
		// Observed at 16s, stamped at the scheduled 11s.
		{"CONTAINER_STOPPED_EVENT " + id, 11 * time.Second, []cri.ContainerState{cri.ContainerExited}, cri.SandboxReady},
		{"CONTAINER_DELETED_EVENT " + id, 16 * time.Second, nil, cri.SandboxReady},
		{"CONTAINER_STOPPED_EVENT " + sbID, 16 * time.Second, nil, cri.SandboxNotReady},
		{"CONTAINER_DELETED_EVENT " + sbID, 16 * time.Second, nil, cri.SandboxNotReady},
	}
	if got := eventNames(evs); strings.Join(got, "\n") != func() string {
		var w []string
		for _, x := range wants {
			w = append(w, x.name)
		}
		return strings.Join(w, "\n")
	}() {
		t.Fatalf("events:\n%s\nwant:\n%v", strings.Join(got, "\n"), wants)
	}
	for i, w := range wants {
		ev := evs[i]
		if ev.CreatedAt != ns(w.at) {
			t.Errorf("event %d (%s) at %v, want %v", i, w.name, time.Unix(0, ev.CreatedAt).Sub(epoch), w.at)
		}
		if ev.PodSandboxStatus == nil || ev.PodSandboxStatus.Metadata.UID != "u1" || ev.PodSandboxStatus.State != w.sandbox {
			t.Errorf("event %d (%s) sandbox status = %+v, want pod u1 in %v", i, w.name, ev.PodSandboxStatus, w.sandbox)
		}
		var states []cri.ContainerState
		for _, cs := range ev.ContainersStatuses {
			states = append(states, cs.State)
		}
		if fmt.Sprint(states) != fmt.Sprint(w.containers) {
			t.Errorf("event %d (%s) container states = %v, want %v", i, w.name, states, w.containers)
		}
	}
	if st := evs[4].ContainersStatuses[0]; st.ExitCode != 1 || st.Reason != ReasonError {
		t.Errorf("STOPPED event status: exit %d reason %q, want 1 Error", st.ExitCode, st.Reason)
	}
	if err := s.close(); !errors.Is(err, errStreamClosed) {
		t.Errorf("closed stream returned %v", err)
	}
}

func TestEventStreamOneSubscriberAtATime(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	first := subscribe(t, r)
	if _, err := r.GetContainerEvents(context.Background(), nil); !errors.Is(err, errStreamBusy) {
		t.Fatalf("second subscriber: %v, want refused", err)
	}
	if err := first.close(); !errors.Is(err, errStreamClosed) {
		t.Fatalf("first stream after Close: %v", err)
	}
	second := subscribe(t, r)
	runPod(t, r, "u1", nil)
	if evs := second.drain(); len(evs) != 2 {
		t.Errorf("new subscriber got %d events, want the sandbox's 2", len(evs))
	}
}

// TestEventStreamNotifiesWhenEventsArrive: the runtime calls notify when the first event
// arrives in an empty stream (the reader's loop then drains it), not for every event, and
// when the stream breaks.
func TestEventStreamNotifiesWhenEventsArrive(t *testing.T) {
	r, _ := newRuntime(t, Config{EventBufferSize: 4})
	s := subscribe(t, r)
	if s.notified != 0 || s.s.Len() != 0 {
		t.Fatalf("before any event: notified %d, len %d", s.notified, s.s.Len())
	}
	runPod(t, r, "u1", nil) // two events
	if s.notified != 1 || s.s.Len() != 2 {
		t.Fatalf("after two events: notified %d, len %d; want 1 notification and 2 waiting", s.notified, s.s.Len())
	}
	s.drain()
	runPod(t, r, "u2", nil)
	if s.notified != 2 {
		t.Fatalf("after the stream emptied and refilled: notified %d, want 2", s.notified)
	}
	runPod(t, r, "u3", nil) // 4 waiting: at the limit
	runPod(t, r, "u4", nil) // over it: broken
	if s.notified != 3 {
		t.Errorf("a broken stream notified %d times in all, want 3", s.notified)
	}
}

// TestEventStreamBreaksOnSlowSubscriber: more than EventBufferSize waiting events break the
// stream (the reader learns why once it has read what arrived before), free the slot, and
// the runtime goes on.
func TestEventStreamBreaksOnSlowSubscriber(t *testing.T) {
	r, _ := newRuntime(t, Config{EventBufferSize: 5})
	s := subscribe(t, r) // nobody reads
	for i := 0; i < 10; i++ {
		runPod(t, r, uidN(i), nil)
	}
	evs, err := s.recvAll()
	if err == nil || !strings.Contains(err.Error(), "too slow") {
		t.Fatalf("stream ended with %v, want broken for a slow subscriber", err)
	}
	if len(evs) != 0 {
		t.Errorf("a broken stream handed out %d events, want none (lost, as with a broken gRPC stream)", len(evs))
	}
	// The slot is free again and the runtime kept working.
	s2 := subscribe(t, r)
	runPod(t, r, "again", nil)
	if evs := s2.drain(); len(evs) != 2 {
		t.Errorf("after reconnect: %d events", len(evs))
	}
	if pods, _ := r.GetPods(context.Background(), true); len(pods) != 11 {
		t.Errorf("GetPods = %d pods, want 11", len(pods))
	}
}

// TestEventsOnTheLoop: the runtime's loop applies scheduled transitions at their instants;
// a reader sees each event stamped with the instant it happened.
func TestEventsOnTheLoop(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	s := subscribe(t, r)
	sbID, sbCfg := runPod(t, r, "u1", annotate("c", "startDelay=1s,runFor=10s"))
	id := startContainer(t, r, sbID, sbCfg, "c", "")
	if got := len(s.drain()); got != 3 {
		t.Fatalf("%d events before the clock moved, want 3 (sandbox created+started, container created)", got)
	}
	if due := r.Due(clk.Now()); !due.Equal(epoch.Add(time.Second)) {
		t.Fatalf("runtime loop due %v, want the start at +1s", due)
	}
	run(t, r, clk, 20*time.Second)
	if s.notified != 2 {
		t.Errorf("notified %d times, want 2 (the first event into an empty stream, twice)", s.notified)
	}
	evs := s.drain()
	if len(evs) != 2 {
		t.Fatalf("events after 20s: %v, want STARTED and STOPPED", eventNames(evs))
	}
	if evs[0].ContainerEventType != cri.ContainerStartedEvent || evs[0].CreatedAt != ns(time.Second) {
		t.Errorf("event 3 = %s at %d, want STARTED at 1s", evs[0].ContainerEventType, evs[0].CreatedAt)
	}
	if evs[1].ContainerEventType != cri.ContainerStoppedEvent || evs[1].ContainerID != id || evs[1].CreatedAt != ns(11*time.Second) {
		t.Errorf("event 4 = %s %s at %d, want STOPPED at 11s", evs[1].ContainerEventType, evs[1].ContainerID, evs[1].CreatedAt)
	}
	if _, ok := r.NextTransition(); ok {
		t.Error("a transition is still pending after the container exited")
	}
	if due := r.Due(clk.Now()); !due.IsZero() {
		t.Errorf("runtime loop due %v with nothing scheduled, want zero", due)
	}
}

func TestStepAPI(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	if _, ok := r.NextTransition(); ok {
		t.Fatal("NextTransition on an empty runtime reports one")
	}
	sbID, sbCfg := runPod(t, r, "u1", map[string]string{
		"minikubelet.io/behavior.a": "runFor=30s",
		"minikubelet.io/behavior.b": "oomAfter=20s",
	})
	startContainer(t, r, sbID, sbCfg, "a", "")
	b := startContainer(t, r, sbID, sbCfg, "b", "")
	next, ok := r.NextTransition()
	if !ok || !next.Equal(epoch.Add(20*time.Second)) {
		t.Fatalf("NextTransition = %v, %v; want epoch+20s", next, ok)
	}
	// A scheduler moves the clock to the next transition and calls Advance.
	s := subscribe(t, r)
	clk.SetTime(next)
	r.Advance()
	evs := s.drain()
	if len(evs) != 1 || evs[0].ContainerID != b || evs[0].ContainerEventType != cri.ContainerStoppedEvent {
		t.Fatalf("Advance emitted %v, want b STOPPED", eventNames(evs))
	}
	if next, _ := r.NextTransition(); !next.Equal(epoch.Add(30 * time.Second)) {
		t.Errorf("next transition = %v, want epoch+30s", next)
	}
}

// TestEventStreamBufferLimit: up to EventBufferSize unread events wait for the reader; the
// event that would make one more breaks the stream, and everything unread is lost (as with a
// broken gRPC stream). Only unread events count: reading makes room again.
func TestEventStreamBufferLimit(t *testing.T) {
	const size = 3
	tests := []struct {
		name string
		// script alternates emitting n container events (n > 0) and reading n (n < 0).
		script   []int
		wantRead int // events read in all, including a final drain
		broken   bool
	}{
		{name: "at the limit", script: []int{3}, wantRead: 3},
		{name: "one over the limit", script: []int{4}, broken: true},
		{name: "reading makes room", script: []int{2, -2, 3}, wantRead: 5},
		{name: "a partial read makes room for as many", script: []int{3, -1, 1}, wantRead: 4},
		{name: "over the limit after a partial read", script: []int{3, -1, 2}, wantRead: 1, broken: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRuntime(t, Config{EventBufferSize: size})
			sb, cfg := runPod(t, r, "u1", nil) // before subscribing: its events are not replayed
			s := subscribe(t, r)
			created := 0
			for _, n := range tc.script {
				for ; n > 0; n-- {
					createContainer(t, r, sb, cfg, fmt.Sprintf("c%d", created), "")
					created++
				}
				for ; n < 0; n++ {
					ev, ok, err := s.s.Recv()
					if !ok || err != nil {
						t.Fatalf("Recv = %v, %t, %v; want an event", ev, ok, err)
					}
					s.got = append(s.got, ev)
				}
			}
			_, err := s.recvAll()
			if broken := err != nil && strings.Contains(err.Error(), "too slow"); broken != tc.broken || (!tc.broken && err != nil) {
				t.Fatalf("stream ended with %v, want broken %t", err, tc.broken)
			}
			if len(s.got) != tc.wantRead {
				t.Errorf("read %d events, want %d", len(s.got), tc.wantRead)
			}
			for i, ev := range s.got {
				if want := fmt.Sprintf("c%d", i); ev.ContainerEventType != cri.ContainerCreatedEvent || ev.ContainersStatuses[i].Metadata.Name != want {
					t.Errorf("event %d = %s of %s, want CREATED of %s (in order, none replayed)", i, ev.ContainerEventType, ev.ContainerID, want)
				}
			}
			if n := s.s.Len(); n != 0 {
				t.Errorf("Len = %d after reading everything", n)
			}
		})
	}
}

// TestEventStreamBreaksOnTheLoop: exits the runtime's own loop applies overflow a slow
// reader's stream just as calls do; the loop is not held up by the reader and goes on.
func TestEventStreamBreaksOnTheLoop(t *testing.T) {
	r, clk := newRuntime(t, Config{EventBufferSize: 2, DefaultBehavior: "runFor=10s"})
	sb, cfg := runPod(t, r, "u1", nil)
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = startContainer(t, r, sb, cfg, fmt.Sprintf("c%d", i), "")
	}
	s := subscribe(t, r) // nothing waits yet: the starts came before
	run(t, r, clk, 20*time.Second)
	for _, id := range ids {
		if st := status(t, r, id); st.State != cri.ContainerExited || st.FinishedAt != ns(10*time.Second) {
			t.Errorf("container %s: %v finished at %v, want exited at 10s", id, st.State, time.Unix(0, st.FinishedAt).Sub(epoch))
		}
	}
	if s.notified != 2 {
		t.Errorf("notified %d times, want 2 (the first event, then the break)", s.notified)
	}
	if evs, err := s.recvAll(); len(evs) != 0 || err == nil || !strings.Contains(err.Error(), "too slow") {
		t.Errorf("stream after three exits at once with room for two: %d events, err %v; want broken", len(evs), err)
	}
}

// TestEventStreamAfterItBroke: a broken stream keeps reporting why (Close does not replace
// the reason), and its late Close does not disconnect the subscriber that took its place.
func TestEventStreamAfterItBroke(t *testing.T) {
	r, _ := newRuntime(t, Config{EventBufferSize: 2})
	old := subscribe(t, r)
	runPod(t, r, "u1", nil) // two events: at the limit
	runPod(t, r, "u2", nil) // over it: broken
	for i := 0; i < 2; i++ {
		if ev, ok, err := old.s.Recv(); ok || err == nil || !strings.Contains(err.Error(), "too slow") {
			t.Fatalf("Recv %d on the broken stream = %v, %t, %v; want the break", i, ev, ok, err)
		}
	}
	if n := old.s.Len(); n != 0 {
		t.Errorf("Len of a broken stream = %d", n)
	}
	cur := subscribe(t, r)
	if err := old.close(); err == nil || !strings.Contains(err.Error(), "too slow") {
		t.Errorf("broken stream after Close: %v, want still the break", err)
	}
	if _, err := r.GetContainerEvents(context.Background(), nil); !errors.Is(err, errStreamBusy) {
		t.Errorf("a third subscriber: %v, want refused (the current one is still connected)", err)
	}
	sb, _ := runPod(t, r, "u3", nil)
	if evs := cur.drain(); len(evs) != 2 || evs[0].ContainerID != sb {
		t.Errorf("current subscriber got %v, want the new sandbox's two events", eventNames(evs))
	}
}

// TestEventStreamRecvAppliesDueTransitions: a reader whose loop runs before the runtime's
// at an instant still sees what fell due by then (Len and Recv apply due transitions first),
// stamped with the scheduled instant.
func TestEventStreamRecvAppliesDueTransitions(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sb, cfg := runPod(t, r, "u1", annotate("c", "startDelay=2s,runFor=3s"))
	id := startContainer(t, r, sb, cfg, "c", "")
	s := subscribe(t, r)
	clk.Step(time.Minute) // no loop runs
	if n := s.s.Len(); n != 2 {
		t.Fatalf("Len = %d a minute later, want the start and the exit", n)
	}
	if s.notified != 1 {
		t.Errorf("notified %d times, want 1", s.notified)
	}
	evs := s.drain()
	want := []struct {
		typ cri.ContainerEventType
		at  time.Duration
	}{{cri.ContainerStartedEvent, 2 * time.Second}, {cri.ContainerStoppedEvent, 5 * time.Second}}
	for i, w := range want {
		if evs[i].ContainerID != id || evs[i].ContainerEventType != w.typ || evs[i].CreatedAt != ns(w.at) {
			t.Errorf("event %d = %s %s at %v, want %s at %v", i, evs[i].ContainerEventType, evs[i].ContainerID, time.Unix(0, evs[i].CreatedAt).Sub(epoch), w.typ, w.at)
		}
	}
}

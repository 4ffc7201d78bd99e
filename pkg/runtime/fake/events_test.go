package fake

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
)

// stream is a test subscriber of GetContainerEvents.
type stream struct {
	t      testing.TB
	r      *Runtime
	ch     chan *cri.ContainerEventResponse
	cancel context.CancelFunc
	done   <-chan error
	got    []*cri.ContainerEventResponse
}

func subscribe(t testing.TB, r *Runtime, capacity int) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{t: t, r: r, ch: make(chan *cri.ContainerEventResponse, capacity), cancel: cancel}
	s.done = async(func() error { return r.GetContainerEvents(ctx, s.ch) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		ok := r.sub != nil
		r.mu.Unlock()
		if ok {
			break
		}
		select {
		case err := <-s.done:
			t.Fatalf("GetContainerEvents returned at once: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("subscriber never connected")
		}
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() { s.cancel() })
	return s
}

// drain waits until every queued event reached the channel and returns the new ones.
func (s *stream) drain() []*cri.ContainerEventResponse {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.r.mu.Lock()
		sub := s.r.sub
		settled := sub == nil || (len(sub.buf) == 0 && sub.sent.Load() == sub.queued)
		s.r.mu.Unlock()
		if settled {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatal("events never reached the channel")
		}
		time.Sleep(time.Millisecond)
	}
	start := len(s.got)
	for {
		select {
		case ev := <-s.ch:
			s.got = append(s.got, ev)
		default:
			return s.got[start:]
		}
	}
}

// waitFor waits until n events in total have arrived (for events made by Run).
func (s *stream) waitFor(n int) []*cri.ContainerEventResponse {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.got) < n {
		select {
		case ev := <-s.ch:
			s.got = append(s.got, ev)
		case <-time.After(time.Until(deadline)):
			s.t.Fatalf("got %d events, want %d: %v", len(s.got), n, eventNames(s.got))
		}
	}
	return s.got
}

func (s *stream) close() error {
	s.t.Helper()
	s.cancel()
	return recv(s.t, s.done)
}

func collectEvents(t testing.TB, r *Runtime, fn func()) []*cri.ContainerEventResponse {
	t.Helper()
	s := subscribe(t, r, 1000)
	fn()
	evs := s.drain()
	if err := s.close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stream ended with %v, want context.Canceled", err)
	}
	return evs
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
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: "busybox:1.36"}, nil); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, r, 1000)
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
	if err := s.close(); !errors.Is(err, context.Canceled) {
		t.Errorf("closed stream returned %v", err)
	}
}

func TestEventStreamOneSubscriberAtATime(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	first := subscribe(t, r, 10)
	err := r.GetContainerEvents(context.Background(), make(chan *cri.ContainerEventResponse))
	if err == nil || !strings.Contains(err.Error(), "one at a time") {
		t.Fatalf("second subscriber: %v, want refused", err)
	}
	if err := first.close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("first stream ended with %v", err)
	}
	second := subscribe(t, r, 10)
	runPod(t, r, "u1", nil)
	if evs := second.drain(); len(evs) != 2 {
		t.Errorf("new subscriber got %d events, want the sandbox's 2", len(evs))
	}
	second.close()
}

func TestEventStreamBreaksOnSlowSubscriber(t *testing.T) {
	r, _ := newRuntime(t, Config{EventBufferSize: 5})
	s := subscribe(t, r, 0) // nobody reads the channel
	for i := 0; i < 10; i++ {
		runPod(t, r, uidN(i), nil)
	}
	err := recv(t, s.done)
	if err == nil || !strings.Contains(err.Error(), "too slow") {
		t.Fatalf("stream ended with %v, want broken for a slow subscriber", err)
	}
	// The slot is free again and the runtime kept working.
	s2 := subscribe(t, r, 100)
	runPod(t, r, "again", nil)
	if evs := s2.drain(); len(evs) != 2 {
		t.Errorf("after reconnect: %d events", len(evs))
	}
	if pods, _ := r.GetPods(context.Background(), true); len(pods) != 11 {
		t.Errorf("GetPods = %d pods, want 11", len(pods))
	}
}

// TestStreamBacklog: a single-threaded reader can tell when every event of the calls made so
// far is in the stream's channel.
func TestStreamBacklog(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	if pending, subscribed := r.StreamBacklog(); pending != 0 || subscribed {
		t.Fatalf("before any stream: backlog %d subscribed %v, want 0 false", pending, subscribed)
	}
	s := subscribe(t, r, 1) // room for one event: the second waits in the runtime
	runPod(t, r, "u1", nil)
	waitUntil(t, func() bool { return len(s.ch) == 1 })
	if pending, subscribed := r.StreamBacklog(); pending != 1 || !subscribed {
		t.Errorf("with one event in the channel and one waiting: backlog %d subscribed %v, want 1 true", pending, subscribed)
	}
	<-s.ch
	waitUntil(t, func() bool { pending, _ := r.StreamBacklog(); return pending == 0 })
	if len(s.ch) != 1 {
		t.Errorf("backlog 0 with %d events in the channel, want the last one there", len(s.ch))
	}
	s.close()
	if pending, subscribed := r.StreamBacklog(); pending != 0 || subscribed {
		t.Errorf("after the stream closed: backlog %d subscribed %v, want 0 false", pending, subscribed)
	}
}

func TestRunEmitsExitsOnTime(t *testing.T) {
	before := runtime.NumGoroutine()
	r, clk := newRuntime(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); r.Run(ctx) }()

	s := subscribe(t, r, 100)
	sbID, sbCfg := runPod(t, r, "u1", annotate("c", "startDelay=1s,runFor=10s"))
	id := startContainer(t, r, sbID, sbCfg, "c", "")
	s.waitFor(3) // sandbox created+started, container created
	for _, step := range []time.Duration{time.Second, 10 * time.Second} {
		waitForWaiters(t, clk)
		clk.Step(step)
	}
	evs := s.waitFor(5)
	if evs[3].ContainerEventType != cri.ContainerStartedEvent || evs[3].CreatedAt != ns(time.Second) {
		t.Errorf("event 3 = %s at %d, want STARTED at 1s", evs[3].ContainerEventType, evs[3].CreatedAt)
	}
	if evs[4].ContainerEventType != cri.ContainerStoppedEvent || evs[4].ContainerID != id || evs[4].CreatedAt != ns(11*time.Second) {
		t.Errorf("event 4 = %s %s at %d, want STOPPED at 11s", evs[4].ContainerEventType, evs[4].ContainerID, evs[4].CreatedAt)
	}
	if _, ok := r.NextTransition(); ok {
		t.Error("a transition is still pending after the container exited")
	}
	cancel()
	<-ran
	s.close()
	// No goroutine of the runtime outlives Run and the stream.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
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
	s := subscribe(t, r, 10)
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

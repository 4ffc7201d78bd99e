package pleg

import (
	"context"
	"sync/atomic"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// eventStream is the CRI event stream an evented PLEG holds, v1.37's watcher and the
// v1.30-v1.36 PLEG alike: a connection attempt in flight (a task, since the runtime may hold
// it up), the connected stream, and whether its callback fired since the last step. What an
// event or a failure means is the PLEG's (handle, failed). Its state is the node owner's but
// arrived, which the callback sets wherever the runtime calls it from.
type eventStream struct {
	runtime   EventStreamer
	wake      *runner.Signal
	wanted    func() bool // the PLEG still watches: a stream connected after it stopped is closed
	handle    func(ctx context.Context, ev *cri.ContainerEventResponse)
	failed    func(ctx context.Context, err error) // a connection attempt or the stream failed
	connected func()                               // a connection was established

	stream  cri.ContainerEventStream
	connect *task.Task  // a connection attempt in flight
	arrived atomic.Bool // the stream notified: events arrived or it broke
}

// due reports whether a step has work: a connection to make or to go on with now that it
// got its answer, or events (or a break) that arrived.
func (s *eventStream) due() bool {
	switch {
	case s.connect != nil:
		return s.connect.Ready()
	case s.stream == nil, s.arrived.Load():
		return true
	}
	return false
}

// step connects (or resumes the attempt in flight) and handles every event that arrived,
// or the broken stream's error.
func (s *eventStream) step(ctx context.Context) {
	t, stream := s.connect, s.stream
	if t == nil && stream == nil {
		t = task.New(ctx, s.connectStream)
		s.connect = t
	}
	s.arrived.Store(false)
	if t != nil {
		if !t.Resume() {
			t.Waiting().OnDone(s.wake.Notify)
			return
		}
		s.connect = nil
		stream = s.stream
	}
	if stream != nil {
		s.drain(ctx, stream)
	}
}

// connectStream is one connection attempt (the body of a task).
func (s *eventStream) connectStream(ctx context.Context) {
	st, err := s.runtime.GetContainerEvents(ctx, s.notify)
	if err != nil {
		if !interrupted(ctx, err) {
			s.failed(ctx, err)
		}
		return
	}
	if !s.wanted() {
		st.Close()
		return
	}
	s.stream = st
	// Counted when the connection is established, as upstream's callback.
	s.connected()
}

// notify is the stream's callback: remember and wake the loop.
func (s *eventStream) notify() {
	s.arrived.Store(true)
	s.wake.Notify()
}

// drain handles every event that has arrived; a broken stream is dropped and reported.
func (s *eventStream) drain(ctx context.Context, st cri.ContainerEventStream) {
	for {
		ev, ok, err := st.Recv()
		if ok {
			s.handle(ctx, ev)
			continue
		}
		if err != nil {
			if s.stream == st {
				s.stream = nil
			}
			st.Close()
			s.failed(ctx, err)
		}
		return
	}
}

// closeStream closes the connected stream, if any.
func (s *eventStream) closeStream() {
	if st := s.stream; st != nil {
		s.stream = nil
		st.Close()
	}
}

// stop abandons a connection attempt and closes the stream. Idempotent.
func (s *eventStream) stop() {
	t := s.connect
	s.connect = nil
	if t != nil {
		t.Stop()
	}
	s.closeStream()
}

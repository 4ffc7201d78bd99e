package fake

import (
	"context"
	"fmt"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// eventStream is the one GetContainerEvents subscriber. Events queue in buf under the
// runtime's lock; the subscriber takes them with Recv whenever its loop runs, so a slow
// reader never blocks the runtime (it loses its stream instead, as with containerd).
type eventStream struct {
	r      *Runtime
	notify func()
	buf    []*cri.ContainerEventResponse
	head   int   // buf[head:] are waiting
	err    error // why it broke
}

var _ cri.ContainerEventStream = (*eventStream)(nil)

// changedLocked records that a sandbox or container of sb changed state: every state change
// goes through here. It drops the pod's cached GetPods snapshot and queues an event for the
// subscriber, if any: CreatedAt is the event's virtual time, and the statuses are the sandbox
// and all its containers right after the event, as containerd sends them.
func (r *Runtime) changedLocked(typ cri.ContainerEventType, id string, sb *sandbox, at int64) {
	sb.pod.snap = nil
	s := r.sub
	if s == nil {
		return
	}
	ev := &cri.ContainerEventResponse{
		ContainerID:        id,
		ContainerEventType: typ,
		CreatedAt:          at,
		PodSandboxStatus:   sb.status(),
		ContainersStatuses: make([]*cri.ContainerStatus, len(sb.containers)),
	}
	for i, c := range sb.containers {
		ev.ContainersStatuses[i] = r.containerStatusLocked(c)
	}
	waiting := len(s.buf) - s.head
	if waiting >= r.eventBufSize {
		r.breakStreamLocked(s, fmt.Errorf("get container events: stream broken: the subscriber is too slow, %d events are waiting", waiting))
		return
	}
	s.buf = append(s.buf, ev)
	if waiting == 0 && s.notify != nil {
		r.deferLocked(s.notify)
	}
}

// breakStreamLocked ends the subscriber's stream with err and frees the slot for a new one.
func (r *Runtime) breakStreamLocked(s *eventStream, err error) {
	if s.err != nil {
		return
	}
	s.err = err
	clear(s.buf)
	s.buf, s.head = nil, 0
	if r.sub == s {
		r.sub = nil
	}
	if s.notify != nil {
		r.deferLocked(s.notify)
	}
	r.logger.V(2).Info("Container event stream broken", "err", err)
}

// GetContainerEvents connects the container event stream (see cri.RuntimeService). It fails
// when a streamError fault refuses the connection or another subscriber is connected (one at
// a time, as with CRI runtimes). The stream breaks on a streamError fault, or when more than
// Config.EventBufferSize events wait for a slow reader. Events of things that happened while
// nobody was subscribed are not replayed. Sandbox events carry the sandbox id as container id.
func (r *Runtime) GetContainerEvents(ctx context.Context, notify func()) (cri.ContainerEventStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodGetContainerEvents, one); err != nil {
		return nil, err
	}
	now := r.lock()
	if f, err := r.streamRefusalLocked(); err != nil {
		r.unlock(now)
		r.fire(f, methodGetContainerEvents)
		return nil, err
	}
	if r.sub != nil {
		r.unlock(now)
		return nil, errStreamBusy
	}
	s := &eventStream{r: r, notify: notify}
	r.sub = s
	r.unlock(now)
	r.logger.V(2).Info("Container event subscriber connected")
	return s, nil
}

// Recv implements cri.ContainerEventStream. It first applies the transitions due by now, so
// their events are there.
func (s *eventStream) Recv() (*cri.ContainerEventResponse, bool, error) {
	r := s.r
	now := r.lock()
	defer r.unlock(now)
	if s.head < len(s.buf) {
		ev := s.buf[s.head]
		s.buf[s.head] = nil
		s.head++
		if s.head == len(s.buf) {
			s.buf, s.head = s.buf[:0], 0
		}
		return ev, true, nil
	}
	return nil, false, s.err
}

// Len implements cri.ContainerEventStream.
func (s *eventStream) Len() int {
	r := s.r
	now := r.lock()
	defer r.unlock(now)
	return len(s.buf) - s.head
}

// Close implements cri.ContainerEventStream.
func (s *eventStream) Close() {
	r := s.r
	r.mu.Lock()
	if r.sub == s {
		r.sub = nil
		r.logger.V(2).Info("Container event subscriber disconnected")
	}
	if s.err == nil {
		s.err = errStreamClosed
	}
	clear(s.buf)
	s.buf, s.head = nil, 0
	r.release()
}

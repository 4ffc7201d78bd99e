package fake

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
)

// subscriber is the one GetContainerEvents stream. Events queue in buf under the runtime's
// lock; the subscriber's own goroutine moves them to its channel, so a slow reader never
// blocks the runtime.
type subscriber struct {
	buf    []*cri.ContainerEventResponse
	spare  []*cri.ContainerEventResponse
	notify chan struct{} // capacity 1: events queued
	done   chan struct{} // closed when the stream is broken
	err    error         // why it broke
	queued int64         // events ever queued, and sent to the channel: tests wait for them to match
	sent   atomic.Int64
}

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
		ev.ContainersStatuses[i] = c.status()
	}
	if len(s.buf) >= r.eventBufSize {
		r.breakStreamLocked(s, fmt.Errorf("get container events: stream broken: the subscriber is too slow, %d events are waiting", len(s.buf)))
		return
	}
	s.buf = append(s.buf, ev)
	s.queued++
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// breakStreamLocked ends the subscriber's stream with err and frees the slot for a new one.
func (r *Runtime) breakStreamLocked(s *subscriber, err error) {
	if s.err != nil {
		return
	}
	s.err = err
	s.buf = nil
	close(s.done)
	if r.sub == s {
		r.sub = nil
	}
	r.logger.V(2).Info("Container event stream broken", "err", err)
}

// GetContainerEvents streams container and sandbox events into ch until ctx ends (it then
// returns ctx.Err()) or the stream breaks (a streamError fault, or more than
// Config.EventBufferSize events waiting for a slow reader). Only one subscriber at a time, as
// with CRI runtimes: a second gets an error. Events of things that happen while nobody is
// subscribed are not replayed. Sandbox events carry the sandbox id as container id.
func (r *Runtime) GetContainerEvents(ctx context.Context, ch chan<- *cri.ContainerEventResponse) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.inject(ctx, methodGetContainerEvents, one); err != nil {
		return err
	}
	now := r.lock()
	if f, err := r.streamRefusalLocked(); err != nil {
		r.unlock(now)
		r.fire(f, methodGetContainerEvents)
		return err
	}
	if r.sub != nil {
		r.unlock(now)
		return errStreamBusy
	}
	s := &subscriber{notify: make(chan struct{}, 1), done: make(chan struct{})}
	r.sub = s
	r.unlock(now)
	r.logger.V(2).Info("Container event subscriber connected")
	defer func() {
		r.mu.Lock()
		if r.sub == s {
			r.sub = nil
		}
		r.mu.Unlock()
		r.logger.V(2).Info("Container event subscriber disconnected")
	}()

	for {
		r.mu.Lock()
		batch, err := s.buf, s.err
		s.buf, s.spare = s.spare[:0], nil
		r.mu.Unlock()
		if err != nil {
			return err
		}
		for i, ev := range batch {
			select {
			case ch <- ev:
				batch[i] = nil
				s.sent.Add(1)
			case <-s.done:
				return r.streamErr(s)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		r.mu.Lock()
		if s.spare == nil {
			s.spare = batch[:0]
		}
		r.mu.Unlock()
		select {
		case <-s.notify:
		case <-s.done:
			return r.streamErr(s)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *Runtime) streamErr(s *subscriber) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.err
}

// StreamBacklog reports whether a GetContainerEvents stream is connected and how many of
// its events are queued but not yet in its channel. A single-threaded scheduler that reads
// the stream's channel without blocking waits for pending to reach 0 first: every event of
// the calls made so far is then in the channel.
func (r *Runtime) StreamBacklog() (pending int64, subscribed bool) {
	r.mu.Lock()
	s := r.sub
	var queued int64
	if s != nil {
		queued = s.queued
	}
	r.mu.Unlock()
	if s == nil {
		return 0, false
	}
	return queued - s.sent.Load(), true
}

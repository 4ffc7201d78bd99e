package task

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// ErrStopped is what Await returns inside a task that its owner abandoned (Stop): the task
// must return promptly.
var ErrStopped = errors.New("task stopped")

// ErrWouldBlock is wrapped by Await's error when an operation is not done, the caller is not
// a task and its context forbids blocking (simulate mode: one goroutine runs every loop, so
// blocking would stall them all).
var ErrWouldBlock = errors.New("operation is pending outside a task and this context must not block")

type frameKey struct{}
type noBlockKey struct{}
type deadlineKey struct{}

// frame is what a running task puts in its context: how to give control back to its owner.
type frame struct {
	yield func(*Op) bool
}

// Task is work that may wait for operations: fn runs as a coroutine that the owner advances
// with Resume. When fn awaits an Op that is not done, Resume returns; the owner resumes it
// again once Ready (usually when told by Op.OnDone). A task never runs on its own: between
// Resume calls it holds no CPU, and no two Resume calls of one task may overlap.
type Task struct {
	ctx      context.Context
	next     func() (*Op, bool)
	stop     func()
	waiting  *Op
	started  bool
	finished bool
}

// New prepares fn as a task with ctx; it does not run until the first Resume.
func New(ctx context.Context, fn func(ctx context.Context)) *Task {
	t := &Task{ctx: ctx}
	seq := func(yield func(*Op) bool) {
		fn(context.WithValue(ctx, frameKey{}, &frame{yield: yield}))
	}
	t.next, t.stop = iter.Pull(iter.Seq[*Op](seq))
	return t
}

// Resume runs the task until it awaits an operation that is not done, or returns. It reports
// whether the task has finished. Resuming a finished task does nothing.
func (t *Task) Resume() (finished bool) {
	if t.finished {
		return true
	}
	t.started = true
	op, ok := t.next()
	if !ok {
		t.finished, t.waiting = true, nil
		return true
	}
	t.waiting = op
	return false
}

// Ready reports whether Resume would make progress: the task has not started, or the
// operation it waits for is done, or its context has ended (Await then returns the
// context's error).
func (t *Task) Ready() bool {
	if t.finished {
		return false
	}
	return !t.started || t.waiting == nil || t.waiting.Done() || t.ctx.Err() != nil
}

// Waiting is the operation the task waits for; nil before it starts and after it finished.
func (t *Task) Waiting() *Op { return t.waiting }

// Finished reports whether fn has returned.
func (t *Task) Finished() bool { return t.finished }

// Stop abandons the task: if it is waiting, its Await returns ErrStopped and fn runs to its
// end before Stop returns. Safe to call more than once and on a finished task.
func (t *Task) Stop() {
	t.stop()
	t.finished, t.waiting = true, nil
}

// Await waits until op is done and returns its error. In a task it gives control back to
// the task's owner (Resume returns) until op is done, so nothing blocks; a task whose
// context ends gets the context's error at its next Resume. Outside a task it blocks until op
// is done or ctx ends (the blocking adapter for goroutines on the real clock), unless ctx
// came from WithoutBlocking, in which case it fails at once with ErrWouldBlock.
func Await(ctx context.Context, op *Op) error {
	if op.Done() {
		return op.Err()
	}
	if f, ok := ctx.Value(frameKey{}).(*frame); ok {
		for !op.Done() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !f.yield(op) {
				return ErrStopped
			}
		}
		return op.Err()
	}
	if ctx.Value(noBlockKey{}) != nil {
		return fmt.Errorf("await: %w", ErrWouldBlock)
	}
	select {
	case <-op.Wait():
		return op.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InTask reports whether ctx belongs to a running task.
func InTask(ctx context.Context) bool {
	_, ok := ctx.Value(frameKey{}).(*frame)
	return ok
}

// WithoutBlocking marks ctx so that Await outside a task fails instead of blocking. The
// virtual-time scheduler gives its steps such a context: one goroutine runs every loop there.
func WithoutBlocking(ctx context.Context) context.Context {
	return context.WithValue(ctx, noBlockKey{}, true)
}

// All runs fns as concurrent child tasks of the calling task (each with ctx) and returns once
// every one has returned. Outside a task the children still interleave, and All blocks while
// all of them wait. If ctx ends or the calling task is stopped, the unfinished children are
// stopped and the error returned.
func All(ctx context.Context, fns ...func(ctx context.Context)) error {
	children := make([]*Task, len(fns))
	for i, fn := range fns {
		children[i] = New(ctx, fn) // each child gets its own frame
	}
	defer func() {
		for _, c := range children {
			if !c.Finished() {
				c.Stop()
			}
		}
	}()
	waits := make([]*Op, 0, len(children))
	for {
		waits = waits[:0]
		for _, c := range children {
			if c.Ready() {
				c.Resume()
			}
			if !c.Finished() {
				waits = append(waits, c.Waiting())
			}
		}
		if len(waits) == 0 {
			return nil
		}
		if err := Await(ctx, Any(waits...)); err != nil {
			return err
		}
	}
}

// WithDeadline gives the calls made with the returned context a deadline on the injected
// clock (context.WithDeadline follows the wall clock, which simulate mode does not use).
// The runtime fails a call still pending at that instant, as gRPC does at its deadline. An
// earlier deadline already in ctx is kept.
func WithDeadline(ctx context.Context, at time.Time) context.Context {
	if cur, ok := Deadline(ctx); ok && !at.Before(cur) {
		return ctx
	}
	return context.WithValue(ctx, deadlineKey{}, at)
}

// Deadline returns the deadline WithDeadline put in ctx.
func Deadline(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(deadlineKey{}).(time.Time)
	return t, ok
}

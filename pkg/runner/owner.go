package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/task"
)

// ErrOwnerStopped is what Do returns once the owner has stopped: the work was not done.
var ErrOwnerStopped = errors.New("the node has stopped")

// Owner is the daemon's runner of a node: one goroutine steps the node's whole loop table on
// a clock, as Sim does on a virtual one (the first due entry in table order, then the table
// again from the top), and in between waits for the earliest Due, a loop's Wake or work
// posted to its mailbox. Everything outside the node (HTTP handlers, file watches, API
// watches, signals) hands work in through Post or Do, which runs on the owner's goroutine
// between steps; so the node's components see one caller, as etcd raft's node loop does.
type Owner struct {
	clock clock.Clock
	loops []Loop
	// settled, if set, is called when no loop is due, before the owner waits: the state is
	// complete for that instant (Sim's settled).
	settled func(ctx context.Context, now time.Time)

	// MaxStepsWithoutWait bounds how many times one loop may step before the owner next
	// waits (DefaultMaxStepsPerInstant when zero): a loop that is still due after so many is
	// a bug, as Sim reports it. The owner logs it with the loop's name, calls Runaway if set,
	// and parks the loop for RunawayPark, so the node's other loops and its mailbox go on.
	MaxStepsWithoutWait int
	// Runaway, if set, is told of each loop parked so (a metric, a test).
	Runaway func(loop string, steps int)

	wake   *Signal
	last   []time.Time // each loop's last step start, for Slack
	burst  []int       // each loop's steps since the owner last waited
	parked []time.Time // a runaway loop is not stepped before this

	mu      sync.Mutex
	mailbox []letter
	stopped bool
}

// letter is work handed to the owner; done, if set, gets fn's result.
type letter struct {
	fn   func(ctx context.Context) error
	done chan error
}

// NewOwner returns the runner of loops on clk. Every loop's Wake is redirected to the
// owner's own, so that one goroutine can wait for all of them. settled may be nil.
func NewOwner(clk clock.Clock, loops []Loop, settled func(ctx context.Context, now time.Time)) *Owner {
	o := &Owner{clock: clk, loops: loops, settled: settled, wake: NewSignal(), last: make([]time.Time, len(loops)),
		burst: make([]int, len(loops)), parked: make([]time.Time, len(loops))}
	for _, l := range loops {
		l.Wake.forwardTo(o.wake)
	}
	return o
}

// Post queues fn to run on the owner's goroutine before its next step; it never blocks.
// Work posted after the owner stopped is dropped (Do reports it).
func (o *Owner) Post(fn func(ctx context.Context)) {
	o.send(letter{fn: func(ctx context.Context) error { fn(ctx); return nil }})
}

// send queues l, or answers it ErrOwnerStopped.
func (o *Owner) send(l letter) {
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		if l.done != nil {
			l.done <- ErrOwnerStopped
		}
		return
	}
	o.mailbox = append(o.mailbox, l)
	o.mu.Unlock()
	o.wake.Notify()
}

// Do runs fn on the owner's goroutine and waits for it, or for ctx: the edges' way to make a
// change and report its result (an HTTP handler adding a fault). It returns ErrOwnerStopped
// when the owner stopped before running it.
//
// Called from the owner's own goroutine with a context of its steps (OnOwner), it runs fn at
// once: waiting for the owner there would wait forever.
func (o *Owner) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if v, _ := ctx.Value(ownerKey{}).(*Owner); v == o {
		return fn(ctx)
	}
	done := make(chan error, 1)
	o.send(letter{fn: fn, done: done})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run steps the table until ctx ends, on the calling goroutine. Steps get a context on
// which a blocking wait fails (task.WithoutBlocking), as in simulate: a step must not wait.
// Work still in the mailbox when ctx ends is dropped; Do callers get ErrOwnerStopped.
func (o *Owner) Run(ctx context.Context) {
	klog.FromContext(ctx).V(4).Info("Starting node loops", "loops", len(o.loops))
	defer o.stop()
	// The steps' context says they run on this owner (OnOwner), and that they must not wait.
	step := context.WithValue(task.WithoutBlocking(ctx), ownerKey{}, o)
	var t clock.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for ctx.Err() == nil {
		o.drain(step)
		now := o.clock.Now()
		if i := o.firstDue(now); i >= 0 {
			o.last[i] = now
			o.loops[i].Step(step)
			o.guard(ctx, i, now)
			continue
		}
		if o.settled != nil {
			o.settled(step, now)
			if o.hasMail() {
				continue
			}
		}
		var fire <-chan time.Time
		if next, ok := o.nextWake(now); ok {
			d := next.Sub(now)
			if t == nil {
				t = o.clock.NewTimer(d)
			} else {
				t.Reset(d)
			}
			fire = t.C()
		}
		clear(o.burst)
		select {
		case <-ctx.Done():
		case <-fire:
		case <-o.wake.C():
		}
		if fire != nil {
			t.Stop()
		}
	}
}

// RunawayPark is how long a loop that never stopped being due waits before it is stepped
// again.
const RunawayPark = time.Second

// firstDue is the first due entry of the table in order, parked ones passed over.
func (o *Owner) firstDue(now time.Time) int {
	for i, l := range o.loops {
		if now.Before(o.parked[i]) {
			continue
		}
		if isDue(l.Due(now), now) {
			return i
		}
	}
	return -1
}

// guard counts loop i's step since the owner last waited and parks it past the bound.
func (o *Owner) guard(ctx context.Context, i int, now time.Time) {
	o.burst[i]++
	max := o.MaxStepsWithoutWait
	if max == 0 {
		max = DefaultMaxStepsPerInstant
	}
	if o.burst[i] <= max {
		return
	}
	name := o.loops[i].Name
	klog.FromContext(ctx).Error(nil, "Loop is still due after as many steps without a wait: a step must make progress; parking it",
		"loop", name, "steps", o.burst[i], "parkedFor", RunawayPark)
	if o.Runaway != nil {
		o.Runaway(name, o.burst[i])
	}
	o.burst[i] = 0
	o.parked[i] = now.Add(RunawayPark)
}

// nextWake is the earliest Due of the table, each pushed to at least its Slack after its
// last step (the batching RunLoop did per loop) and rounded up to its Grain, and whether
// any loop is waiting for a time.
func (o *Owner) nextWake(now time.Time) (time.Time, bool) {
	var next time.Time
	for i, l := range o.loops {
		d := l.Due(now)
		if d.IsZero() {
			continue
		}
		if l.Slack > 0 && !o.last[i].IsZero() {
			d = latest(d, o.last[i].Add(l.Slack))
		}
		d = latest(roundUp(d, l.Grain), o.parked[i])
		if next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next, !next.IsZero()
}

func (o *Owner) drain(ctx context.Context) {
	for {
		o.mu.Lock()
		mail := o.mailbox
		o.mailbox = nil
		o.mu.Unlock()
		if len(mail) == 0 {
			return
		}
		for _, l := range mail {
			err := l.fn(ctx)
			if l.done != nil {
				l.done <- err
			}
		}
	}
}

func (o *Owner) hasMail() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.mailbox) > 0
}

// stop refuses further mail and drops what is queued; a Do waiting for dropped work is
// answered ErrOwnerStopped.
func (o *Owner) stop() {
	o.mu.Lock()
	o.stopped = true
	mail := o.mailbox
	o.mailbox = nil
	o.mu.Unlock()
	for _, l := range mail {
		if l.done != nil {
			l.done <- ErrOwnerStopped
		}
	}
	for _, l := range o.loops {
		l.Wake.forwardTo(nil)
	}
}

// roundUp is t rounded up to a multiple of grain (since the zero time, so that every owner
// of a process rounds to the same instants); t itself when grain is zero.
func roundUp(t time.Time, grain time.Duration) time.Time {
	if grain <= 0 {
		return t
	}
	if r := t.Truncate(grain); r.Before(t) {
		return r.Add(grain)
	}
	return t
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ownerKey marks the context of an owner's steps.
type ownerKey struct{}

// OnOwner reports whether ctx is the context of a step of an owner (or derived from one):
// code called both from the owner and from an edge can tell which it runs on.
func OnOwner(ctx context.Context) bool {
	_, ok := ctx.Value(ownerKey{}).(*Owner)
	return ok
}

package runner

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/task"
)

// Periodic is a loop that runs fn every period measured from the end of the previous run
// (the kubelet's wait.Until, sliding), the first run at once. Each run is a task, so a run
// that waits for the runtime gives control back and the loop resumes it when what it waits
// for completes. Not safe for concurrent use: the node's owner steps it and triggers it.
type Periodic struct {
	clock  clock.PassiveClock
	period func() time.Duration
	fn     func(ctx context.Context)
	wake   *Signal

	run     *task.Task // the run in flight
	next    time.Time
	started bool
	// triggered: Trigger was called while a run was in flight; the next run is due as soon
	// as that one ends, not a period later.
	triggered bool
}

// NewPeriodic returns a loop running fn every period() (re-read after each run, so the
// cadence can change).
func NewPeriodic(clk clock.PassiveClock, period func() time.Duration, fn func(ctx context.Context)) *Periodic {
	return &Periodic{clock: clk, period: period, fn: fn, wake: NewSignal()}
}

// Every is a constant period for NewPeriodic.
func Every(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// Loop is the table entry of p.
func (p *Periodic) Loop(name string) Loop {
	return Loop{Name: name, Due: p.Due, Step: p.Step, Wake: p.wake, Stop: p.Stop}
}

// Due is the next run's start, now while the run in flight can go on, zero while it waits.
func (p *Periodic) Due(now time.Time) time.Time {
	switch {
	case p.run != nil:
		if p.run.Ready() {
			return now
		}
		return time.Time{}
	case !p.started:
		return now
	}
	return p.next
}

// Wake is notified when the run in flight can go on or a run was asked for.
func (p *Periodic) Wake() *Signal { return p.wake }

// Step starts the due run or resumes the one in flight and returns as soon as it ends or
// has to wait.
func (p *Periodic) Step(ctx context.Context) {
	t := p.run
	if t == nil {
		t = task.New(ctx, p.fn)
		p.run, p.started = t, true
	}
	if !t.Resume() {
		t.Waiting().OnDone(p.wake.Notify)
		return
	}
	p.run = nil
	if p.triggered {
		p.triggered = false // a Trigger during the run: the next one is due at once
		p.next = p.clock.Now()
	} else {
		p.next = p.clock.Now().Add(p.period())
	}
}

// Running reports whether a run is in flight (started and not finished).
func (p *Periodic) Running() bool {
	return p.run != nil
}

// Trigger makes the next run due now (a run in flight goes on; the next starts when it ends).
func (p *Periodic) Trigger() {
	p.next = p.clock.Now()
	p.triggered = p.run != nil
	p.wake.Notify()
}

// Stop abandons the run in flight, if any (its task ends before Stop returns). Idempotent.
func (p *Periodic) Stop() {
	t := p.run
	p.run = nil
	if t != nil {
		t.Stop()
	}
}

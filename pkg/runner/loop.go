package runner

import (
	"context"
	"sync/atomic"
	"time"
)

// Loop is one of the node's loops: a step that does the work due now and returns without
// waiting, and when it is next due.
type Loop struct {
	// Name names the loop in logs, errors and the architecture docs.
	Name string
	// Due returns when Step should next run: a time at or before now means now; the zero
	// time means idle until the loop's Wake fires (new work from elsewhere). It must be
	// cheap: the virtual-time scheduler calls it for every entry at every step.
	Due func(now time.Time) time.Time
	// Step does the work due at the clock's current time. It must not wait for anything:
	// work that takes time is a pending operation (package task) that makes the loop due
	// again when it completes.
	Step func(ctx context.Context)
	// Wake is notified when Due may have moved earlier because of something outside the
	// loop's own steps (a pod update, a completed operation). The daemon runner sleeps on it
	// between steps; the virtual-time scheduler re-reads every Due after every step instead.
	// Nil for loops that only ever run on their own schedule.
	Wake *Signal
	// Slack lets the daemon's runner (on the real clock) run a step that falls due sooner
	// than Slack after the last one at Slack after it, so that work due at many nearby
	// instants is done in one step, late by less than Slack, as the kernel's timer slack
	// batches wake-ups. A wake (new work) is never delayed. The virtual-time scheduler
	// ignores it: simulated instants stay exact.
	Slack time.Duration
	// Grain lets the daemon's runner round the loop's timed wake up to the next multiple of
	// Grain on the clock, so that the loops of a process' many nodes that fall due within
	// one grain wake it once, as the kernel's timer slack coalesces the wake-ups of many
	// threads: a timed step runs late by less than Grain. A wake (new work) is never
	// delayed, and the virtual-time scheduler ignores it: simulated instants stay exact.
	Grain time.Duration
	// Stop abandons the loop's work in flight (its tasks end before Stop returns); nil for a
	// loop that keeps none. The node stops its loops by walking the table, so no second list
	// of them exists.
	Stop func()
}

// StopAll stops every loop of the table that has work to abandon, in table order.
func StopAll(loops []Loop) {
	for _, l := range loops {
		if l.Stop != nil {
			l.Stop()
		}
	}
}

// firstDue is the index of the first loop of the table due at now, or -1.
func firstDue(loops []Loop, now time.Time) int {
	for i, l := range loops {
		if isDue(l.Due(now), now) {
			return i
		}
	}
	return -1
}

// Signal wakes a loop's goroutine without blocking the notifier; notifications coalesce.
// The zero value is not usable; use NewSignal.
type Signal struct {
	ch chan struct{}
	// to, when set, receives the notifications instead: a node's Owner waits on one signal
	// for all of its loops.
	to atomic.Pointer[Signal]
}

// NewSignal returns a signal with no notification pending.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{}, 1)} }

// Notify records a notification; it never blocks.
func (s *Signal) Notify() {
	if s == nil {
		return
	}
	if to := s.to.Load(); to != nil {
		to.Notify()
		return
	}
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// forwardTo sends s's notifications to to from now on (nil: back to s itself), passing on
// one already pending.
func (s *Signal) forwardTo(to *Signal) {
	if s == nil {
		return
	}
	s.to.Store(to)
	if to == nil {
		return
	}
	select {
	case <-s.ch:
		to.Notify()
	default:
	}
}

// C receives once per coalesced notification.
func (s *Signal) C() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.ch
}

// isDue reports whether a Due answer means "run now".
func isDue(due, now time.Time) bool { return !due.IsZero() && !due.After(now) }

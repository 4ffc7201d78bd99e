package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/minikubelet/minikubelet/pkg/task"
)

// VirtualClock is the clock simulate mode moves: k8s.io/utils/clock/testing's FakeClock.
type VirtualClock interface {
	Now() time.Time
	SetTime(time.Time)
}

// DefaultMaxStepsPerInstant bounds how many steps may run at one virtual instant before the
// scheduler reports a loop that never stops being due (a bug: a step must make progress).
const DefaultMaxStepsPerInstant = 1_000_000

// Sim runs a loop table on a virtual clock, on the caller's goroutine: it repeatedly steps
// the earliest due loop (ties go to the earlier entry of the table) and, when none is due
// now, moves the clock to the earliest Due. The same table, in the same order, always gives
// the same run.
type Sim struct {
	clock VirtualClock
	loops []Loop
	// MaxStepsPerInstant: see DefaultMaxStepsPerInstant. Zero means the default.
	MaxStepsPerInstant int

	instant time.Time
	steps   int
}

// NewSim returns a scheduler of loops on clk.
func NewSim(clk VirtualClock, loops []Loop) *Sim {
	return &Sim{clock: clk, loops: loops}
}

// Loops is the table.
func (s *Sim) Loops() []Loop { return s.loops }

// SetLoops replaces the table (a kubelet restart builds a new one).
func (s *Sim) SetLoops(loops []Loop) { s.loops = loops }

// StepDue runs the first loop that is due at the clock's current time and returns its
// index, or -1 when none is due. ctx is made non-blocking (task.WithoutBlocking): a step that
// tried to block the only goroutine fails instead of hanging the run.
func (s *Sim) StepDue(ctx context.Context) (int, error) {
	now := s.clock.Now()
	i := firstDue(s.loops, now)
	if i < 0 {
		return -1, nil
	}
	l := s.loops[i]
	if !now.Equal(s.instant) {
		s.instant, s.steps = now, 0
	}
	s.steps++
	max := s.MaxStepsPerInstant
	if max == 0 {
		max = DefaultMaxStepsPerInstant
	}
	if s.steps > max {
		return i, fmt.Errorf("loop %q is still due after %d steps at %s: a step must make progress", l.Name, max, now.Format(time.RFC3339Nano))
	}
	l.Step(task.WithoutBlocking(ctx))
	return i, nil
}

// NextDue is the earliest time any loop is due, after the current time when none is due
// now; ok is false when every loop is idle.
func (s *Sim) NextDue() (time.Time, bool) {
	now := s.clock.Now()
	var next time.Time
	for _, l := range s.loops {
		d := l.Due(now)
		if d.IsZero() {
			continue
		}
		if d.Before(now) {
			d = now
		}
		if next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next, !next.IsZero()
}

// RunUntil steps loops and moves the clock until end (the clock is left at end) or ctx ends.
// Before the clock moves off an instant at which something ran, and at end, it calls
// settled (if not nil) with the time: the moment to observe a state that is complete for
// that instant.
func (s *Sim) RunUntil(ctx context.Context, end time.Time, settled func(now time.Time)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		i, err := s.StepDue(ctx)
		if err != nil {
			return err
		}
		if i >= 0 {
			continue
		}
		now := s.clock.Now()
		if settled != nil {
			settled(now)
		}
		next, ok := s.NextDue()
		if !ok || next.After(end) {
			if now.Before(end) {
				s.clock.SetTime(end)
				if settled != nil {
					settled(end)
				}
			}
			return nil
		}
		if next.After(now) {
			s.clock.SetTime(next)
		}
	}
}

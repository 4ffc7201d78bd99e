// Package simtest drives tasks and loops on a fake clock in tests: a call that waits for a pending runtime operation runs as a task, and the test moves the clock instead of sleeping.
package simtest

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// Epoch is the virtual time tests start at.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// NewClock returns a fake clock at Epoch.
func NewClock() *testingclock.FakeClock { return testingclock.NewFakeClock(Epoch) }

// Call is fn running as a task: it runs until it waits for a pending operation, and Poll
// resumes it once that operation is done.
type Call struct {
	t   *task.Task
	err error
}

// Go starts fn as a task with ctx and runs it until it first waits or returns.
func Go(ctx context.Context, fn func(ctx context.Context) error) *Call {
	c := &Call{}
	c.t = task.New(ctx, func(ctx context.Context) { c.err = fn(ctx) })
	c.t.Resume()
	return c
}

// Poll resumes the call if what it waits for is done and reports whether it has returned.
func (c *Call) Poll() bool {
	for c.t.Ready() {
		c.t.Resume()
	}
	return c.t.Finished()
}

// Done reports whether the call has returned, without resuming it.
func (c *Call) Done() bool { return c.t.Finished() }

// Err is the call's error once it has returned.
func (c *Call) Err() error { return c.err }

// Stop abandons the call.
func (c *Call) Stop() { c.t.Stop() }

// Loop makes the call an entry of a loop table: due while it can make progress.
func (c *Call) Loop() runner.Loop {
	return runner.Loop{
		Name: "test-call",
		Due: func(now time.Time) time.Time {
			if c.t.Ready() {
				return now
			}
			return time.Time{}
		},
		Step: func(context.Context) { c.t.Resume() },
	}
}

// Run runs loops on clk until done reports true, failing the test if that has not happened
// after max virtual time (or when nothing is due any more).
func Run(t testing.TB, clk *testingclock.FakeClock, loops []runner.Loop, max time.Duration, done func() bool) {
	t.Helper()
	end := clk.Now().Add(max)
	sim := runner.NewSim(clk, loops)
	ctx := context.Background()
	for !done() {
		i, err := sim.StepDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 0 {
			continue
		}
		next, ok := sim.NextDue()
		if !ok || next.After(end) {
			t.Fatalf("condition not met after %v of virtual time (next due: %v)", max, next)
		}
		clk.SetTime(next)
	}
}

// Await runs fn as a task beside loops until it returns (see Run) and returns its error.
func Await(t testing.TB, clk *testingclock.FakeClock, loops []runner.Loop, max time.Duration, fn func(ctx context.Context) error) error {
	t.Helper()
	c := Go(context.Background(), fn)
	Run(t, clk, append([]runner.Loop{c.Loop()}, loops...), max, c.Done)
	return c.Err()
}

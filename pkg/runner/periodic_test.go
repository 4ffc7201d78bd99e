package runner

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/task"
)

func TestPeriodicRunsEveryPeriodAfterTheEndOfTheLast(t *testing.T) {
	t0 := time.Unix(0, 0)
	clk := testingclock.NewFakeClock(t0)
	var op *task.Op
	var starts, ends []time.Duration
	run := 0
	p := NewPeriodic(clk, Every(10*time.Second), func(ctx context.Context) {
		starts = append(starts, clk.Since(t0))
		run++
		if run == 2 { // the second run waits 3s for "the runtime"
			op = task.NewOp()
			_ = task.Await(ctx, op)
		}
		ends = append(ends, clk.Since(t0))
	})
	completer := Loop{Name: "runtime", Due: func(now time.Time) time.Time {
		if op != nil && !op.Done() {
			return t0.Add(13 * time.Second)
		}
		return time.Time{}
	}, Step: func(context.Context) { op.Complete(nil) }}
	sim := NewSim(clk, []Loop{completer, p.Loop("periodic")})
	if err := sim.RunUntil(context.Background(), t0.Add(30*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 10 * time.Second, 23 * time.Second}
	if len(starts) != len(want) {
		t.Fatalf("starts = %v, want %v", starts, want)
	}
	for i := range want {
		if starts[i] != want[i] {
			t.Fatalf("starts = %v, want %v (the period counts from the end of a run)", starts, want)
		}
	}
	if ends[1] != 13*time.Second {
		t.Fatalf("second run ended at %v, want when its operation completed (13s)", ends[1])
	}
}

func TestPeriodicTriggerAndStop(t *testing.T) {
	t0 := time.Unix(0, 0)
	clk := testingclock.NewFakeClock(t0)
	stopped := false
	n := 0
	p := NewPeriodic(clk, Every(time.Minute), func(ctx context.Context) {
		n++
		if n == 2 {
			if err := task.Await(ctx, task.NewOp()); err == task.ErrStopped {
				stopped = true
			}
		}
	})
	p.Step(context.Background())
	if got := p.Due(clk.Now()); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Due = %v, want a minute later", got)
	}
	p.Trigger()
	if got := p.Due(clk.Now()); !got.Equal(clk.Now()) {
		t.Fatalf("Due after Trigger = %v, want now", got)
	}
	p.Step(context.Background())
	if !p.Running() || !p.Due(clk.Now()).IsZero() {
		t.Fatal("a run waiting for an operation must be in flight and not due")
	}
	p.Stop()
	if !stopped || p.Running() {
		t.Fatalf("stopped=%v running=%v, want the run abandoned", stopped, p.Running())
	}
	p.Stop()
}

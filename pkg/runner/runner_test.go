package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/task"
)

func TestSimRunsEarliestDueAndBreaksTiesByTableOrder(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	var trace []string
	mk := func(name string, period time.Duration) Loop {
		next := t0
		return Loop{
			Name: name,
			Due:  func(time.Time) time.Time { return next },
			Step: func(context.Context) {
				trace = append(trace, name+"@"+clk.Now().Sub(t0).String())
				next = clk.Now().Add(period)
			},
		}
	}
	sim := NewSim(clk, []Loop{mk("a", 2*time.Second), mk("b", 3*time.Second)})
	if err := sim.RunUntil(context.Background(), t0.Add(6*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	want := "a@0s b@0s a@2s b@3s a@4s a@6s b@6s"
	if got := strings.Join(trace, " "); got != want {
		t.Fatalf("trace = %q, want %q", got, want)
	}
	if !clk.Now().Equal(t0.Add(6 * time.Second)) {
		t.Fatalf("clock at %v, want end", clk.Now())
	}
}

func TestSimSettledOncePerInstantAndAtEnd(t *testing.T) {
	t0 := time.Unix(0, 0)
	clk := testingclock.NewFakeClock(t0)
	count := 0
	l := Loop{Name: "x", Due: func(time.Time) time.Time {
		if count < 2 {
			return t0.Add(time.Duration(count) * time.Second)
		}
		return time.Time{}
	}, Step: func(context.Context) { count++ }}
	var settled []time.Duration
	if err := NewSim(clk, []Loop{l}).RunUntil(context.Background(), t0.Add(10*time.Second), func(now time.Time) {
		settled = append(settled, now.Sub(t0))
	}); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, time.Second, 10 * time.Second}
	if len(settled) != len(want) {
		t.Fatalf("settled at %v, want %v", settled, want)
	}
	for i := range want {
		if settled[i] != want[i] {
			t.Fatalf("settled at %v, want %v", settled, want)
		}
	}
}

func TestSimReportsALoopThatNeverStopsBeingDue(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	sim := NewSim(clk, []Loop{{Name: "stuck", Due: func(now time.Time) time.Time { return now }, Step: func(context.Context) {}}})
	sim.MaxStepsPerInstant = 10
	err := sim.RunUntil(context.Background(), time.Unix(5, 0), nil)
	if err == nil || !strings.Contains(err.Error(), `loop "stuck" is still due after 10 steps`) {
		t.Fatalf("err = %v", err)
	}
}

func TestSimStepsCannotBlock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	var got error
	done := false
	sim := NewSim(clk, []Loop{{Name: "blocker", Due: func(now time.Time) time.Time {
		if done {
			return time.Time{}
		}
		return now
	}, Step: func(ctx context.Context) {
		done = true
		got = task.Await(ctx, task.NewOp())
	}}})
	if err := sim.RunUntil(context.Background(), time.Unix(1, 0), nil); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got, task.ErrWouldBlock) {
		t.Fatalf("Await in a simulated step = %v, want ErrWouldBlock", got)
	}
}

func TestRunLoopStepsWhenDueAndWhenWoken(t *testing.T) {
	t0 := time.Unix(0, 0)
	clk := testingclock.NewFakeClock(t0)
	wake := NewSignal()
	var mu sync.Mutex
	var due time.Time = t0.Add(time.Second)
	steps := make(chan time.Time, 10)
	l := Loop{
		Name: "test",
		Due: func(time.Time) time.Time {
			mu.Lock()
			defer mu.Unlock()
			return due
		},
		Step: func(context.Context) {
			mu.Lock()
			due = time.Time{} // idle until woken
			mu.Unlock()
			steps <- clk.Now()
		},
		Wake: wake,
	}
	g := NewGroup(context.Background())
	Start(g, clk, []Loop{l})
	defer g.Stop()

	eventually.True(t, "the loop to park on the clock", clk.HasWaiters)
	clk.Step(time.Second)
	if got := <-steps; !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("stepped at %v, want at its due time", got)
	}
	// Idle: only a wake makes it step again.
	mu.Lock()
	due = clk.Now()
	mu.Unlock()
	wake.Notify()
	<-steps
	g.Stop()
	g.Stop() // idempotent
}

// With Slack, work due at many nearby instants is done in one step per Slack, late by less
// than Slack; without it, every instant is a step. A wake is never delayed.
func TestRunLoopSlackBatchesNearbyInstants(t *testing.T) {
	tests := []struct {
		name  string
		slack time.Duration
		want  []string // the steps: instant (ms) and how many items each did
	}{
		{"no slack", 0, []string{"1:1", "2:1", "3:1", "4:1", "5:1"}},
		{"slack 2ms", 2 * time.Millisecond, []string{"1:1", "3:2", "5:2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(0, 0)
			clk := testingclock.NewFakeClock(t0)
			var mu sync.Mutex
			next := 1 // the next item, due at next ms; one a millisecond up to 5
			var steps []string
			wake := NewSignal()
			l := Loop{
				Name: "batch",
				Due: func(time.Time) time.Time {
					mu.Lock()
					defer mu.Unlock()
					if next > 5 {
						return time.Time{}
					}
					return t0.Add(time.Duration(next) * time.Millisecond)
				},
				Step: func(context.Context) {
					mu.Lock()
					defer mu.Unlock()
					now := clk.Now()
					n := 0
					for next <= 5 && !t0.Add(time.Duration(next)*time.Millisecond).After(now) {
						next++
						n++
					}
					steps = append(steps, fmt.Sprintf("%d:%d", now.Sub(t0).Milliseconds(), n))
				},
				Wake:  wake,
				Slack: tt.slack,
			}
			g := NewGroup(context.Background())
			Start(g, clk, []Loop{l})
			defer g.Stop()
			for range 5 {
				eventually.True(t, "the loop to park on the clock", clk.HasWaiters)
				clk.Step(time.Millisecond)
			}
			eventually.True(t, "the last step", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return next > 5
			})
			mu.Lock()
			got := slices.Clone(steps)
			// New work due now is done at once, however recent the last step.
			next = 5
			mu.Unlock()
			wake.Notify()
			eventually.True(t, "the woken step", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return next > 5
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("steps %v, want %v", got, tt.want)
			}
		})
	}
}

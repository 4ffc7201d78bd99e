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

// The owner steps the first due entry in table order, sleeps on the clock until the next
// Due, and wakes for any loop's Wake.
func TestOwnerStepsWhenDueAndWhenWoken(t *testing.T) {
	t0 := time.Unix(0, 0)
	clk := testingclock.NewFakeClock(t0)
	wake := NewSignal()
	var mu sync.Mutex
	var due = t0.Add(time.Second)
	steps := make(chan string, 10)
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
			steps <- "test@" + clk.Since(t0).String()
		},
		Wake: wake,
	}
	other := 0
	o := Loop{
		Name: "other",
		Due: func(time.Time) time.Time {
			if other == 0 {
				return t0.Add(time.Second)
			}
			return time.Time{}
		},
		Step: func(context.Context) { other++; steps <- "other@" + clk.Since(t0).String() },
	}
	owner := NewOwner(clk, []Loop{o, l}, nil)
	g := NewGroup(context.Background())
	g.Go("node", owner.Run)
	defer g.Stop()

	eventually.True(t, "the owner to park on the clock", clk.HasWaiters)
	clk.Step(time.Second)
	// Both due at 1s: table order.
	if got := []string{<-steps, <-steps}; got[0] != "other@1s" || got[1] != "test@1s" {
		t.Fatalf("steps %v, want other then test at 1s", got)
	}
	// Idle: only a wake makes it step again.
	mu.Lock()
	due = clk.Now()
	mu.Unlock()
	wake.Notify()
	if got := <-steps; got != "test@1s" {
		t.Fatalf("woken step %q", got)
	}
	g.Stop()
	g.Stop() // idempotent
	// A stopped owner's loops notify their own signal again.
	wake.Notify()
	select {
	case <-wake.C():
	default:
		t.Fatal("the loop's signal still forwards to a stopped owner")
	}
}

// Work handed in through the mailbox runs on the owner's goroutine before its next step; Do
// returns its result, and ErrOwnerStopped once the owner has stopped.
func TestOwnerMailbox(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	var trace []string // touched only by the owner's goroutine, then read after Do
	n := 0
	l := Loop{Name: "count", Due: func(now time.Time) time.Time {
		if n > 0 {
			return now
		}
		return time.Time{}
	}, Step: func(context.Context) { trace = append(trace, fmt.Sprint("step ", n)); n-- }}
	owner := NewOwner(clk, []Loop{l}, func(_ context.Context, now time.Time) {})
	owner.Post(func(context.Context) { trace = append(trace, "post"); n = 2 })
	owner.Post(func(context.Context) { trace = append(trace, "post2") })
	g := NewGroup(context.Background())
	g.Go("node", owner.Run)
	for done := false; !done; {
		if err := owner.Do(context.Background(), func(context.Context) error { done = n == 0; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if want := "post post2 step 2 step 1"; strings.Join(trace, " ") != want {
		t.Fatalf("trace %q, want %q (the mail, then the steps it made due)", strings.Join(trace, " "), want)
	}
	if err := owner.Do(context.Background(), func(context.Context) error { return errors.New("bad input") }); err == nil || err.Error() != "bad input" {
		t.Fatalf("Do = %v, want the function's error", err)
	}
	g.Stop()
	if err := owner.Do(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, ErrOwnerStopped) {
		t.Fatalf("Do after stop = %v, want ErrOwnerStopped", err)
	}
}

// Code that runs both on the owner and at an edge (the stats summary: the eviction manager's
// and /stats/summary's) calls Do either way: from a step, with the step's context, Do runs the
// function at once instead of waiting for the owner, which is itself.
func TestOwnerDoFromAStep(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	var owner *Owner
	var onOwner, inline, outside bool
	stepped := make(chan struct{})
	l := Loop{Name: "once", Due: func(now time.Time) time.Time {
		if onOwner {
			return time.Time{}
		}
		return now
	}, Step: func(ctx context.Context) {
		onOwner = OnOwner(ctx)
		_ = owner.Do(ctx, func(context.Context) error { inline = true; return nil })
		close(stepped)
	}}
	owner = NewOwner(clk, []Loop{l}, nil)
	g := NewGroup(context.Background())
	g.Go("node", owner.Run)
	defer g.Stop()
	select {
	case <-stepped:
	case <-time.After(time.Minute): // a deadlock's bound, not a timing
		t.Fatal("Do from a step with its context never returned")
	}
	if err := owner.Do(context.Background(), func(ctx context.Context) error { outside = OnOwner(ctx); return nil }); err != nil {
		t.Fatal(err)
	}
	if !onOwner || !inline || !outside {
		t.Errorf("OnOwner(step) = %v, Do from the step ran = %v, OnOwner(a Do's) = %v; want all true", onOwner, inline, outside)
	}
	if OnOwner(context.Background()) {
		t.Error("OnOwner(Background) = true")
	}
}

// With Slack, work due at many nearby instants is done in one step per Slack, late by less
// than Slack; with Grain, the timed wake is rounded up to a multiple of the grain on the
// clock, late by less than the grain; without either, every instant is a step. A wake (new
// work) is never delayed, however recent the last step and off the grain.
func TestOwnerBatchesTimedWakes(t *testing.T) {
	tests := []struct {
		name         string
		slack, grain time.Duration
		dues         []int    // ms after t0
		want         []string // the steps: instant (ms) and how many items each did
	}{
		{"no slack", 0, 0, []int{1, 2, 3, 4, 5}, []string{"1:1", "2:1", "3:1", "4:1", "5:1"}},
		{"slack 2ms", 2 * time.Millisecond, 0, []int{1, 2, 3, 4, 5}, []string{"1:1", "3:2", "5:2"}},
		{"no grain", 0, 0, []int{3, 7, 12}, []string{"3:1", "7:1", "12:1"}},
		{"grain 5ms", 0, 5 * time.Millisecond, []int{3, 7, 12}, []string{"5:1", "10:1", "15:1"}},
		{"grain 10ms", 0, 10 * time.Millisecond, []int{3, 7, 12}, []string{"10:2", "20:1"}},
		{"due on the grain", 0, 10 * time.Millisecond, []int{10, 20}, []string{"10:1", "20:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(0, 0)
			clk := testingclock.NewFakeClock(t0)
			var mu sync.Mutex
			dues := slices.Clone(tt.dues)
			var steps []string
			wake := NewSignal()
			l := Loop{
				Name: "timed",
				Due: func(time.Time) time.Time {
					mu.Lock()
					defer mu.Unlock()
					if len(dues) == 0 {
						return time.Time{}
					}
					return t0.Add(time.Duration(dues[0]) * time.Millisecond)
				},
				Step: func(context.Context) {
					mu.Lock()
					defer mu.Unlock()
					now := clk.Now()
					n := 0
					for len(dues) > 0 && !t0.Add(time.Duration(dues[0])*time.Millisecond).After(now) {
						dues = dues[1:]
						n++
					}
					steps = append(steps, fmt.Sprintf("%d:%d", now.Sub(t0).Milliseconds(), n))
				},
				Wake:  wake,
				Slack: tt.slack,
				Grain: tt.grain,
			}
			g := NewGroup(context.Background())
			g.Go("node", NewOwner(clk, []Loop{l}, nil).Run)
			defer g.Stop()
			left := func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(dues) > 0
			}
			for left() {
				eventually.True(t, "the loop to park on the clock or be done", func() bool { return clk.HasWaiters() || !left() })
				if left() {
					clk.Step(time.Millisecond)
				}
			}
			mu.Lock()
			got := slices.Clone(steps)
			// New work, due a millisecond after the last step: done at once.
			clk.Step(time.Millisecond)
			at := clk.Now().Sub(t0).Milliseconds()
			dues = []int{int(at)}
			mu.Unlock()
			wake.Notify()
			eventually.True(t, "the woken step", func() bool { return !left() })
			mu.Lock()
			woken := steps[len(steps)-1]
			mu.Unlock()
			if !slices.Equal(got, tt.want) {
				t.Errorf("steps %v, want %v", got, tt.want)
			}
			if want := fmt.Sprintf("%d:1", at); woken != want {
				t.Errorf("woken step %s, want %s", woken, want)
			}
		})
	}
}

// A loop that never stops being due is reported with its name and parked, as Sim reports
// it, and the node goes on: the loop after it in the table and the mailbox still run.
func TestOwnerParksARunawayLoop(t *testing.T) {
	t0 := time.Unix(0, 0)
	clk := testingclock.NewFakeClock(t0)
	spins := 0
	runaway := Loop{Name: "spinner", Due: func(now time.Time) time.Time { return now }, Step: func(context.Context) { spins++ }}
	stepped := make(chan struct{}, 1)
	done := false
	after := Loop{
		Name: "after",
		Due: func(now time.Time) time.Time {
			if done {
				return time.Time{}
			}
			return now
		},
		Step: func(context.Context) { done = true; stepped <- struct{}{} },
	}
	reported := make(chan string, 4)
	owner := NewOwner(clk, []Loop{runaway, after}, nil)
	owner.MaxStepsWithoutWait = 100
	owner.Runaway = func(loop string, steps int) { reported <- fmt.Sprintf("%s after %d", loop, steps) }
	g := NewGroup(context.Background())
	g.Go("node", owner.Run)
	defer g.Stop()

	if got := <-reported; got != "spinner after 101" {
		t.Fatalf("reported %q, want the spinner after 101 steps", got)
	}
	<-stepped // the entry after it in the table ran
	ran := make(chan struct{})
	owner.Post(func(context.Context) { close(ran) })
	<-ran // and the mailbox
	// Parked for RunawayPark on the clock: it spins again once that has passed.
	eventually.True(t, "the owner to park on the clock", clk.HasWaiters)
	clk.Step(RunawayPark)
	if got := <-reported; got != "spinner after 101" {
		t.Fatalf("reported %q the second time", got)
	}
}

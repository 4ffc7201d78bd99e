package task

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAwaitInTaskGivesControlBack(t *testing.T) {
	op := NewOp()
	var steps []string
	tk := New(context.Background(), func(ctx context.Context) {
		steps = append(steps, "before")
		err := Await(ctx, op)
		steps = append(steps, "after:"+errString(err))
	})
	if !tk.Ready() {
		t.Fatal("a task that has not started must be ready")
	}
	if tk.Resume() {
		t.Fatal("Resume finished a task that awaits a pending op")
	}
	if tk.Ready() || tk.Waiting() != op {
		t.Fatalf("Ready=%v Waiting=%p, want false and the awaited op", tk.Ready(), tk.Waiting())
	}
	if got := len(steps); got != 1 {
		t.Fatalf("steps after first Resume = %v", steps)
	}
	woken := 0
	op.OnDone(func() { woken++ })
	op.Complete(errors.New("boom"))
	if woken != 1 || !tk.Ready() {
		t.Fatalf("after Complete: woken=%d ready=%v", woken, tk.Ready())
	}
	if !tk.Resume() {
		t.Fatal("Resume did not finish the task")
	}
	if steps[1] != "after:boom" {
		t.Fatalf("steps = %v, want the op's error returned by Await", steps)
	}
	if tk.Ready() || !tk.Resume() {
		t.Fatal("a finished task is not ready and Resume reports finished")
	}
}

func TestAwaitDoneOpDoesNotYield(t *testing.T) {
	tk := New(context.Background(), func(ctx context.Context) {
		for i := 0; i < 3; i++ {
			if err := Await(ctx, Completed(nil)); err != nil {
				t.Errorf("Await(done) = %v", err)
			}
		}
	})
	if !tk.Resume() {
		t.Fatal("awaiting completed ops must not suspend the task")
	}
}

func TestAwaitOutsideTask(t *testing.T) {
	t.Run("blocks until completed", func(t *testing.T) {
		op := NewOp()
		errc := make(chan error, 1)
		go func() { errc <- Await(context.Background(), op) }()
		op.Complete(nil)
		if err := <-errc; err != nil {
			t.Fatalf("Await = %v", err)
		}
	})
	t.Run("returns when ctx ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := Await(ctx, NewOp()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Await = %v, want context.Canceled", err)
		}
	})
	t.Run("refuses to block when told not to", func(t *testing.T) {
		if err := Await(WithoutBlocking(context.Background()), NewOp()); !errors.Is(err, ErrWouldBlock) {
			t.Fatalf("Await = %v, want ErrWouldBlock", err)
		}
	})
}

func TestStopAbandonsWaitingTask(t *testing.T) {
	var got error
	returned := false
	tk := New(context.Background(), func(ctx context.Context) {
		got = Await(ctx, NewOp())
		returned = true
	})
	tk.Resume()
	tk.Stop()
	if !returned || !errors.Is(got, ErrStopped) {
		t.Fatalf("returned=%v err=%v, want the body to end with ErrStopped", returned, got)
	}
	tk.Stop() // idempotent
	if !tk.Finished() {
		t.Fatal("a stopped task is finished")
	}
	New(context.Background(), func(context.Context) {}).Stop() // never started
}

func TestCancelledTaskIsReadyAndSeesTheError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var got error
	tk := New(ctx, func(ctx context.Context) { got = Await(ctx, NewOp()) })
	tk.Resume()
	if tk.Ready() {
		t.Fatal("ready before cancel")
	}
	cancel()
	if !tk.Ready() {
		t.Fatal("a task whose context ended must be ready")
	}
	if !tk.Resume() || !errors.Is(got, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", got)
	}
}

func TestResumePropagatesPanic(t *testing.T) {
	tk := New(context.Background(), func(context.Context) { panic("kaboom") })
	defer func() {
		if r := recover(); r != "kaboom" {
			t.Fatalf("recovered %v, want the task's panic", r)
		}
	}()
	tk.Resume()
}

func TestAllRunsChildrenConcurrently(t *testing.T) {
	a, b := NewOp(), NewOp()
	var trace []string
	tk := New(context.Background(), func(ctx context.Context) {
		err := All(ctx,
			func(ctx context.Context) {
				trace = append(trace, "a-start")
				_ = Await(ctx, a)
				trace = append(trace, "a-end")
			},
			func(ctx context.Context) {
				trace = append(trace, "b-start")
				_ = Await(ctx, b)
				_ = Await(ctx, Completed(nil))
				trace = append(trace, "b-end")
			})
		trace = append(trace, "all:"+errString(err))
	})
	if tk.Resume() {
		t.Fatal("All returned while both children wait")
	}
	b.Complete(nil)
	if !tk.Ready() || tk.Resume() {
		t.Fatal("after b: the task must resume and wait again for a")
	}
	a.Complete(nil)
	if !tk.Resume() {
		t.Fatal("All did not return after both children finished")
	}
	want := []string{"a-start", "b-start", "b-end", "a-end", "all:nil"}
	if len(trace) != len(want) {
		t.Fatalf("trace = %v, want %v", trace, want)
	}
	for i := range want {
		if trace[i] != want[i] {
			t.Fatalf("trace = %v, want %v", trace, want)
		}
	}
}

func TestAllStopsChildrenWhenParentStops(t *testing.T) {
	childDone := false
	tk := New(context.Background(), func(ctx context.Context) {
		_ = All(ctx, func(ctx context.Context) {
			_ = Await(ctx, NewOp())
			childDone = true
		})
	})
	tk.Resume()
	tk.Stop()
	if !childDone {
		t.Fatal("stopping the parent must end its children")
	}
}

func TestAny(t *testing.T) {
	if !Any().Done() {
		t.Fatal("Any() of nothing is done")
	}
	a, b := NewOp(), NewOp()
	any := Any(a, b)
	if any.Done() {
		t.Fatal("done before any op")
	}
	b.Complete(errors.New("x"))
	if !any.Done() || any.Err() != nil {
		t.Fatalf("Any after b: done=%v err=%v", any.Done(), any.Err())
	}
	if !Any(NewOp(), Completed(nil)).Done() {
		t.Fatal("Any with a completed op is done")
	}
}

func TestOpCompletesOnce(t *testing.T) {
	op := NewOp()
	calls := 0
	op.OnDone(func() { calls++ })
	if !op.Complete(nil) || op.Complete(errors.New("late")) {
		t.Fatal("only the first Complete counts")
	}
	op.OnDone(func() { calls++ }) // runs at once
	if calls != 2 || op.Err() != nil {
		t.Fatalf("calls=%d err=%v", calls, op.Err())
	}
	select {
	case <-op.Wait():
	default:
		t.Fatal("Wait of a done op must be closed")
	}
}

func TestWithDeadlineKeepsTheEarlier(t *testing.T) {
	t0 := time.Unix(100, 0)
	ctx := WithDeadline(context.Background(), t0)
	if d, _ := Deadline(WithDeadline(ctx, t0.Add(time.Second))); !d.Equal(t0) {
		t.Fatalf("later deadline replaced the earlier: %v", d)
	}
	if d, _ := Deadline(WithDeadline(ctx, t0.Add(-time.Second))); !d.Equal(t0.Add(-time.Second)) {
		t.Fatalf("earlier deadline not taken: %v", d)
	}
	if _, ok := Deadline(context.Background()); ok {
		t.Fatal("no deadline expected")
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestEveryRunsOnFakeClockAndStops(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	var n atomic.Int32
	stepped := make(chan struct{}, 10)
	g := NewGroup(context.Background())
	g.Go("test", func(ctx context.Context) {
		Every(ctx, clk, Fixed(time.Second), func(context.Context) { n.Add(1); stepped <- struct{}{} })
	})
	<-stepped // first step runs immediately
	for i := 0; i < 3; i++ {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
		<-stepped
	}
	g.Stop()
	if got := n.Load(); got != 4 {
		t.Fatalf("steps = %d, want 4 (one at start, one per period)", got)
	}
	g.Stop() // idempotent
}

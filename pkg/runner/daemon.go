package runner

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// RunLoop is the daemon's runner of one loop: it steps the loop whenever it is due on clk,
// sleeping in between until the due time, a Wake or the end of ctx. It returns when ctx ends.
func RunLoop(ctx context.Context, clk clock.Clock, l Loop) {
	var t clock.Timer // one for the loop's life, reset for every wait
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	var last time.Time // the last step's start
	for ctx.Err() == nil {
		now := clk.Now()
		due := l.Due(now)
		if isDue(due, now) {
			last = now
			l.Step(ctx)
			continue
		}
		var fire <-chan time.Time
		if !due.IsZero() {
			if l.Slack > 0 && !last.IsZero() {
				due = latest(due, last.Add(l.Slack))
			}
			if t == nil {
				t = clk.NewTimer(due.Sub(now))
			} else {
				t.Reset(due.Sub(now))
			}
			fire = t.C()
		}
		select {
		case <-ctx.Done():
		case <-fire:
		case <-l.Wake.C():
		}
		if fire != nil {
			t.Stop()
		}
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Start runs every loop of the table in its own goroutine of g, on clk.
func Start(g *Group, clk clock.Clock, loops []Loop) {
	for _, l := range loops {
		g.Go(l.Name, func(ctx context.Context) { RunLoop(ctx, clk, l) })
	}
}

// logStart is shared by the goroutine wrappers.
func logStart(ctx context.Context, name string) klog.Logger {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("Starting loop", "loop", name)
	return logger
}

package runner

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Every calls step, then waits period() measured from the end of the step (the kubelet's
// wait.Until, sliding), until ctx ends. period is re-read after every step so a component
// can change its cadence (EventedPLEG stretches the relist period). A panic in step is not
// recovered: as in the kubelet, a crashing loop crashes the daemon.
func Every(ctx context.Context, clk clock.Clock, period func() time.Duration, step func(context.Context)) {
	for {
		if ctx.Err() != nil {
			return
		}
		step(ctx)
		t := clk.NewTimer(period())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// Fixed returns a period func for a constant period.
func Fixed(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// Group owns a set of goroutines that share one context: Stop cancels it and waits for all
// of them. The zero value is not usable; use NewGroup.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewGroup returns a group whose goroutines stop when parent ends or Stop is called.
func NewGroup(parent context.Context) *Group {
	ctx, cancel := context.WithCancel(parent)
	return &Group{ctx: ctx, cancel: cancel}
}

// Context is the group's context.
func (g *Group) Context() context.Context { return g.ctx }

// Go runs fn in a goroutine owned by the group.
func (g *Group) Go(name string, fn func(ctx context.Context)) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		klog.FromContext(g.ctx).V(4).Info("Starting loop", "loop", name)
		fn(g.ctx)
		klog.FromContext(g.ctx).V(4).Info("Stopped loop", "loop", name)
	}()
}

// Stop cancels the group's context and waits for every goroutine. Safe to call twice.
func (g *Group) Stop() {
	g.cancel()
	g.wg.Wait()
}

// Wait blocks until every goroutine has returned (after the parent context ended).
func (g *Group) Wait() { g.wg.Wait() }

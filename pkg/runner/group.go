package runner

import (
	"context"
	"sync"

	"k8s.io/klog/v2"
)

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
		logger := klog.FromContext(g.ctx)
		logger.V(4).Info("Starting", "goroutine", name)
		fn(g.ctx)
		logger.V(4).Info("Stopped", "goroutine", name)
	}()
}

// Stop cancels the group's context and waits for every goroutine. Safe to call twice.
func (g *Group) Stop() {
	g.cancel()
	g.wg.Wait()
}

// Wait blocks until every goroutine has returned (after the parent context ended).
func (g *Group) Wait() { g.wg.Wait() }

package cluster

import (
	"context"
	"sync"

	"github.com/minikubelet/minikubelet/pkg/task"
)

// Caller runs API calls, which block on the network, in goroutines of their own and hands
// back a pending operation: a loop's task awaits it without blocking the loop. Stop cancels
// the calls in flight and waits for them.
type Caller struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	inline bool
	// deliver, if set, runs each completion on the goroutine that owns the waiters (the
	// node's owner), so that what a completion wakes runs there, as everything else does.
	deliver func(complete func())
}

// DeliverOn makes post carry every later completion to the goroutine that owns the waiters.
// Call it before the first Go.
func (c *Caller) DeliverOn(post func(complete func())) { c.deliver = post }

// NewCaller returns a caller whose calls end when parent ends or Stop is called.
func NewCaller(parent context.Context) *Caller {
	ctx, cancel := context.WithCancel(parent)
	return &Caller{ctx: ctx, cancel: cancel}
}

// Inline returns a caller that runs each call at once on the calling goroutine: for an
// in-memory API (client-go's fake clientset in tests), where nothing waits on a network.
func Inline() *Caller {
	c := NewCaller(context.Background())
	c.inline = true
	return c
}

// Go runs fn in a goroutine with the caller's context; the operation completes with fn's
// error.
func (c *Caller) Go(fn func(ctx context.Context) error) *task.Op {
	op := task.NewOp()
	if c.inline {
		op.Complete(fn(c.ctx))
		return op
	}
	if err := c.ctx.Err(); err != nil {
		op.Complete(err)
		return op
	}
	c.wg.Add(1)
	deliver := c.deliver
	go func() {
		defer c.wg.Done()
		err := fn(c.ctx)
		if deliver != nil {
			deliver(func() { op.Complete(err) })
			return
		}
		op.Complete(err)
	}()
	return op
}

// Stop cancels the calls in flight and waits for their goroutines. Idempotent.
func (c *Caller) Stop() {
	c.cancel()
	c.wg.Wait()
}

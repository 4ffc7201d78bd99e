package task

import (
	"sync"
)

// Op is an operation that completes later: a pull, a stop with a grace period, a call held up
// by an injected latency or hang. Whoever owns the operation's timing (the fake runtime's
// event queue) completes it at a clock instant; whoever started it awaits it (Await) or asks
// to be told (OnDone). The zero value is not usable; use NewOp. Safe for concurrent use.
type Op struct {
	mu     sync.Mutex
	done   bool
	err    error
	ch     chan struct{} // made on demand for blocking waiters; closed on completion
	onDone []func()
}

// NewOp returns an operation that is not done.
func NewOp() *Op { return &Op{} }

// Completed returns an operation that is already done with err.
func Completed(err error) *Op { return &Op{done: true, err: err} }

// Complete finishes the operation with err and runs the OnDone callbacks in the calling
// goroutine. Only the first completion counts; it reports whether this call was it. Callers
// must not hold locks the callbacks may take.
func (o *Op) Complete(err error) bool {
	o.mu.Lock()
	if o.done {
		o.mu.Unlock()
		return false
	}
	o.done, o.err = true, err
	if o.ch != nil {
		close(o.ch)
	}
	fns := o.onDone
	o.onDone = nil
	o.mu.Unlock()
	for _, f := range fns {
		f()
	}
	return true
}

// Done reports whether the operation has completed.
func (o *Op) Done() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done
}

// Err is the operation's result: nil before completion or on success.
func (o *Op) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// OnDone calls f once the operation completes, at once (in the calling goroutine) if it
// already has. f must not block: it should only record that its owner has work to do.
func (o *Op) OnDone(f func()) {
	o.mu.Lock()
	if !o.done {
		o.onDone = append(o.onDone, f)
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	f()
}

// Wait returns a channel closed when the operation completes, for blocking waiters.
func (o *Op) Wait() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ch == nil {
		o.ch = make(chan struct{})
		if o.done {
			close(o.ch)
		}
	}
	return o.ch
}

// Any returns an operation that completes (with a nil error) as soon as one of ops does; at
// once when ops is empty or one is already done.
func Any(ops ...*Op) *Op {
	any := NewOp()
	if len(ops) == 0 {
		any.Complete(nil)
		return any
	}
	for _, op := range ops {
		op.OnDone(func() { any.Complete(nil) })
		if any.Done() {
			break
		}
	}
	return any
}

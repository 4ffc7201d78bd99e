package shell

import (
	"iter"
	"sync"
)

// A worker is a coroutine that runs processes' programs one after another. A process
// gets one when it first runs and when it wakes from parking, and gives it back when its
// program returns or parks: a sleeping loop takes a worker for the moment it is awake,
// with the stack an earlier turn grew, instead of starting a goroutine (and growing its
// stack again) at every wake.
type worker struct {
	next func() (struct{}, bool)
	stop func()
	p    *Proc
	prog Program
}

func newWorker() *worker {
	w := &worker{}
	w.next, w.stop = iter.Pull(func(yield func(struct{}) bool) {
		for {
			w.p.yield = yield
			w.p.runProgram(w.prog)
			w.p, w.prog = nil, nil
			if !yield(struct{}{}) { // idle until the next program, or stopped
				return
			}
		}
	})
	return w
}

// Workers lends workers to the processes of many machines (a node's containers), keeping
// a few idle ones. Safe for concurrent use. A nil *Workers lends a new worker every time
// and ends it when it is given back.
type Workers struct {
	mu     sync.Mutex
	idle   []*worker
	closed bool
}

// maxIdleWorkers is how many idle workers a Workers keeps: a node steps its machines one
// at a time, so a few serve every wake.
const maxIdleWorkers = 4

// NewWorkers returns an empty pool; Close ends its idle workers.
func NewWorkers() *Workers { return &Workers{} }

func (ws *Workers) get() *worker {
	if ws != nil {
		ws.mu.Lock()
		if n := len(ws.idle); n > 0 {
			w := ws.idle[n-1]
			ws.idle[n-1] = nil
			ws.idle = ws.idle[:n-1]
			ws.mu.Unlock()
			return w
		}
		ws.mu.Unlock()
	}
	return newWorker()
}

// put takes back an idle worker, or ends it when the pool is full or closed.
func (ws *Workers) put(w *worker) {
	if ws != nil {
		ws.mu.Lock()
		if !ws.closed && len(ws.idle) < maxIdleWorkers {
			ws.idle = append(ws.idle, w)
			ws.mu.Unlock()
			return
		}
		ws.mu.Unlock()
	}
	w.stop()
}

// Close ends the idle workers; workers given back afterwards end at once.
func (ws *Workers) Close() {
	ws.mu.Lock()
	idle := ws.idle
	ws.idle, ws.closed = nil, true
	ws.mu.Unlock()
	for _, w := range idle {
		w.stop()
	}
}

// Coroutines counts m's processes that hold a worker now: running, or waiting on one (in
// a pipe, a wait, a sleep that could not park). A parked process holds none.
func (m *Machine) Coroutines() int {
	n := 0
	for _, p := range m.procs {
		if !p.exited && p.w != nil {
			n++
		}
	}
	return n
}

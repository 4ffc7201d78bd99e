package simulate

import (
	"context"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/minikubelet/minikubelet/pkg/promrules"
)

// evalSpan is the least a background evaluation covers, in evaluation intervals: each rule
// is a range query per evaluation (one over 5 instants cost 1.6 times an instant query),
// and evaluating the whole run at its end leaves the other core idle until then (spans of
// 10 to 40, and the whole run, measured within the noise of each other).
const evalSpan = 20

// evaluator is the rules' side of a run, on a goroutine of its own: it stores the scrapes
// the run gathered and makes the evaluations the run asked for, in the order they were
// handed to it, while the run goes on (on the other core, most of the rules' cost is off
// the run's). The order is the run's, not the goroutine's timing: an evaluation covers
// from the last one to a limit the run gave, once that is evalSpan intervals or more, so
// two runs store the same series and evaluate the same batches, and their output is the
// same byte for byte.
type evaluator struct {
	ev   *promrules.Evaluator
	span time.Duration
	wake chan struct{} // cap 1: work was pushed, or finish
	done chan struct{} // closed when the goroutine has returned

	mu      sync.Mutex
	queue   []work
	closing bool

	// Owned by the goroutine until done is closed.
	evaluated time.Time
	trans     []promrules.Transition
	errs      []promrules.RuleError
	err       error // the first append that failed
}

// work is a scrape to store (mfs, gathered for every instant of at) or, when limit is set,
// an evaluation of the instants before limit.
type work struct {
	target labels.Labels
	at     []time.Time
	mfs    []*dto.MetricFamily
	limit  time.Time
}

func startEvaluator(ctx context.Context, ev *promrules.Evaluator) *evaluator {
	b := &evaluator{ev: ev, span: evalSpan * ev.Interval(), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go b.run(ctx)
	return b
}

func (b *evaluator) run(ctx context.Context) {
	defer close(b.done)
	for {
		select {
		case <-b.wake:
		case <-ctx.Done():
			return
		}
		b.mu.Lock()
		queue, closing := b.queue, b.closing
		b.queue = nil
		b.mu.Unlock()
		for _, w := range queue {
			b.do(ctx, w)
		}
		if closing {
			return
		}
	}
}

func (b *evaluator) do(ctx context.Context, w work) {
	if w.limit.IsZero() {
		if b.err == nil {
			b.err = store(b.ev, w)
		}
		return
	}
	if w.limit.Sub(b.evaluated) >= b.span {
		b.evaluateBefore(ctx, w.limit)
	}
}

// store appends a scrape to the rules' storage: what a Prometheus scraping the target would
// store at each of its instants.
func store(ev *promrules.Evaluator, w work) error {
	return ev.Scrape(w.target, w.at, w.mfs)
}

func (b *evaluator) evaluateBefore(ctx context.Context, limit time.Time) {
	if !limit.After(b.evaluated) {
		return
	}
	trans, errs := b.ev.EvalBefore(ctx, limit)
	b.trans, b.errs = append(b.trans, trans...), append(b.errs, errs...)
	b.evaluated = limit
}

func (b *evaluator) push(w work) {
	b.mu.Lock()
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// finish stores and evaluates everything handed to it, then up to limit, stops the
// goroutine and returns what the evaluations found.
func (b *evaluator) finish(ctx context.Context, limit time.Time) ([]promrules.Transition, []promrules.RuleError, error) {
	b.stop()
	if err := ctx.Err(); err != nil {
		return nil, nil, err // the goroutine may have left work undone
	}
	if b.err == nil {
		b.evaluateBefore(ctx, limit)
	}
	return b.trans, b.errs, b.err
}

// stop ends the goroutine once it has done what was handed to it, and waits for it.
func (b *evaluator) stop() {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	<-b.done
}

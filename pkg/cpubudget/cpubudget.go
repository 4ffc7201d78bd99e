package cpubudget

import (
	"sync"
	"time"
)

// Budget lets the programs of every node of a process use at most a rate of real CPU
// (millicores), however many containers run busy loops: a node's runtime asks ReadyAt
// before it steps a container's machine and reports what the step took with Spend. Time
// is what the callers measure on their clock: on simulate's virtual clock no step takes
// any, and the budget never holds a program back, so replays stay deterministic.
//
// Safe for concurrent use: the nodes of a process step on goroutines of their own.
type Budget struct {
	mu     sync.Mutex
	milli  int64
	burst  time.Duration
	tokens time.Duration // CPU time the programs may still spend; negative: owed
	last   time.Time
}

// DefaultBurst is how much CPU the programs may spend at once after the budget has been
// idle: a few of a node's steps.
const DefaultBurst = 20 * time.Millisecond

// New returns a budget of milli millicores of real CPU (1000: one core), with burst
// DefaultBurst. milli must be positive.
func New(milli int64) *Budget {
	return &Budget{milli: milli, burst: DefaultBurst, tokens: DefaultBurst}
}

// Milli is the budget's rate in millicores.
func (b *Budget) Milli() int64 { return b.milli }

// refill adds what the rate gave since the last call, up to the burst.
func (b *Budget) refill(now time.Time) {
	if b.last.IsZero() {
		b.last = now
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.tokens+d*time.Duration(b.milli)/1000, b.burst)
		b.last = now
	}
}

// ReadyAt returns the zero time when programs may run at now, else the instant the rate
// will have paid back what they overspent.
func (b *Budget) ReadyAt(now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens > 0 {
		return time.Time{}
	}
	return now.Add(-b.tokens*1000/time.Duration(b.milli) + time.Millisecond)
}

// Spend records d of CPU the programs spent, ending at now.
func (b *Budget) Spend(now time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.tokens -= d
}

package cpubudget

import (
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := New(250) // a quarter of a core
	steps := []struct {
		at    time.Duration
		spend time.Duration
		ready time.Duration // -1: ready now
	}{
		{0, 0, -1},
		{0, 15 * time.Millisecond, -1}, // within the 20ms burst
		// 20 - 15 + 0.25ms of refill - 10 = -4.75ms owed: 19ms of rate, plus a ms.
		{time.Millisecond, 10 * time.Millisecond, 21 * time.Millisecond},
		{2 * time.Millisecond, 0, 21 * time.Millisecond}, // -4.5ms: 18ms more, plus a ms
		{100 * time.Millisecond, 0, -1},
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		b.Spend(now, s.spend)
		got := b.ReadyAt(now)
		switch {
		case s.ready < 0 && !got.IsZero():
			t.Errorf("step %d: ReadyAt = +%v, want ready now", i, got.Sub(t0))
		case s.ready >= 0 && !got.Equal(t0.Add(s.ready)):
			t.Errorf("step %d: ReadyAt = %v, want +%v", i, got.Sub(t0), s.ready)
		}
	}
}

// TestBudgetRate: a spender that runs whenever it may gets the rate over a long run.
func TestBudgetRate(t *testing.T) {
	for _, milli := range []int64{100, 500, 1000} {
		b := New(milli)
		now := time.Unix(1000, 0)
		var spent time.Duration
		const run = 10 * time.Second
		for end := now.Add(run); now.Before(end); {
			if at := b.ReadyAt(now); !at.IsZero() {
				now = at
				continue
			}
			now = now.Add(2 * time.Millisecond)
			b.Spend(now, 2*time.Millisecond) // busy the whole time it runs
			spent += 2 * time.Millisecond
		}
		want := run * time.Duration(milli) / 1000
		if spent < want*9/10 || spent > want*11/10+DefaultBurst {
			t.Errorf("%dm: spent %v of %v, want about %v", milli, spent, run, want)
		}
	}
}

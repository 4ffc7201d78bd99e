// Package eventually is the tests' one way to wait for something another goroutine does (a daemon's goroutine parking on a fake clock, a server answering): poll a condition with a deadline.
package eventually

import (
	"testing"
	"time"
)

// Timeout is how long True waits before failing the test.
const Timeout = 30 * time.Second

// True polls cond every millisecond until it holds, failing the test with what after Timeout.
// Use it only for what another goroutine does; single-threaded code is stepped, not waited for.
func True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", Timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Within polls cond every pollPeriod (10ms) until it reports true, failing the test after
// timeout with what and the state cond reported last. For slower conditions, such as a
// daemon process's HTTP answers.
func Within(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	WithinEvery(t, pollPeriod, timeout, what, cond)
}

const pollPeriod = 10 * time.Millisecond

// WithinEvery is Within polling every poll: for a condition that is costly to check (a list
// of thousands of pods), a poll the size of the precision the caller needs.
func WithinEvery(t testing.TB, poll, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not seen within %v; last: %s", what, timeout, state)
		}
		time.Sleep(poll)
	}
}

package kuberuntime

import (
	"time"

	"k8s.io/utils/clock"
)

// Backoff is a per-key exponential back-off on an injected clock, with the semantics of
// client-go's flowcontrol.Backoff (without jitter, as the kubelet builds it): the first Next
// sets the initial delay, each further Next doubles it up to max, and an entry whose last
// update is more than 2 x max before the event is treated as expired (reset). Not safe
// for concurrent use: the pod syncs and housekeeping, on the node's owner, are its callers.
type Backoff struct {
	clock   clock.PassiveClock
	initial time.Duration
	max     time.Duration

	entries map[string]*backoffEntry
}

type backoffEntry struct {
	backoff    time.Duration
	lastUpdate time.Time
}

// NewBackoff returns a back-off starting at initial and capped at max.
func NewBackoff(clk clock.PassiveClock, initial, max time.Duration) *Backoff {
	return &Backoff{clock: clk, initial: initial, max: max, entries: map[string]*backoffEntry{}}
}

// Get returns the current delay of id (0 if unknown).
func (b *Backoff) Get(id string) time.Duration {
	if e, ok := b.entries[id]; ok {
		return e.backoff
	}
	return 0
}

// Next records a failure of id observed at eventTime and grows its delay.
func (b *Backoff) Next(id string, eventTime time.Time) {
	e, ok := b.entries[id]
	if !ok || b.expired(eventTime, e.lastUpdate) {
		e = &backoffEntry{backoff: b.initial}
		b.entries[id] = e
	} else {
		e.backoff = min(2*e.backoff, b.max)
	}
	e.lastUpdate = b.clock.Now()
}

// IsInBackOffSince reports whether id is still backing off, counting from eventTime (the
// crash-loop check: eventTime is when the container last finished).
func (b *Backoff) IsInBackOffSince(id string, eventTime time.Time) bool {
	e, ok := b.entries[id]
	if !ok || b.expired(eventTime, e.lastUpdate) {
		return false
	}
	return b.clock.Since(eventTime) < e.backoff
}

// ExpiryAfterUpdate is when the delay of id, counted from its last Next, ends (the image
// pull back-off's retry time); false when id is unknown.
func (b *Backoff) ExpiryAfterUpdate(id string) (time.Time, bool) {
	e, ok := b.entries[id]
	if !ok {
		return time.Time{}, false
	}
	return e.lastUpdate.Add(e.backoff), true
}

// IsInBackOffSinceUpdate reports whether eventTime is within the delay counted from the
// last Next (the image pull check: eventTime is now).
func (b *Backoff) IsInBackOffSinceUpdate(id string, eventTime time.Time) bool {
	e, ok := b.entries[id]
	if !ok || b.expired(eventTime, e.lastUpdate) {
		return false
	}
	return eventTime.Sub(e.lastUpdate) < e.backoff
}

// GC drops entries not updated for 2 x max.
func (b *Backoff) GC() {
	now := b.clock.Now()
	for id, e := range b.entries {
		if now.Sub(e.lastUpdate) > 2*b.max {
			delete(b.entries, id)
		}
	}
}

// Reset forgets id.
func (b *Backoff) Reset(id string) {
	delete(b.entries, id)
}

// Len is the number of tracked keys.
func (b *Backoff) Len() int {
	return len(b.entries)
}

// expired: a key that stayed quiet for twice the cap is considered stable again, which is
// what resets a crash-looping container's back-off once it ran 10 minutes.
func (b *Backoff) expired(eventTime, lastUpdate time.Time) bool {
	return eventTime.Sub(lastUpdate) > 2*b.max
}

package statuscache

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
)

// Config configures a Cache.
type Config struct {
	// EventedPLEG makes Set drop a write older than the cached one. Two writers (the generic
	// and the evented PLEG) compute their timestamps independently, so a late relist must not
	// overwrite a newer event; with only the generic PLEG every write wins, as upstream. It
	// also makes GetNewerThan answer at once, with an empty status, for a pod the cache does
	// not hold (upstream's behaviour with the gate on).
	EventedPLEG bool
}

// Cache implements container.Cache: every pod's latest status with the time it was read, a
// global timestamp that says how fresh all of it is at least, and waiters blocked until a
// pod's data passes a given time. The zero value is not usable; use New. Safe for concurrent use.
type Cache struct {
	evented bool

	mu   sync.Mutex
	pods map[types.UID]*data
	// timestamp is the global freshness; valid only when hasTimestamp (it starts unset, so
	// waiters block until the first relist completes).
	timestamp    time.Time
	hasTimestamp bool
	waiters      map[types.UID][]*waiter
}

var _ container.Cache = (*Cache)(nil)

type data struct {
	status   *container.PodStatus
	err      error
	modified time.Time
}

type waiter struct {
	minTime time.Time
	// ch has room for the one value notify sends, so notify never blocks under the lock.
	ch chan *data
}

// New returns an empty cache.
func New(cfg Config) *Cache {
	return &Cache{
		evented: cfg.EventedPLEG,
		pods:    make(map[types.UID]*data),
		waiters: make(map[types.UID][]*waiter),
	}
}

// Get returns the cached status and the error recorded with it. A pod the cache does not
// know gets an empty status with only its ID set: the runtime has nothing for it. Callers
// must not modify the returned status.
func (c *Cache) Get(uid types.UID) (*container.PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.get(uid)
	return d.status, d.err
}

// GetAll returns every cached status, in no particular order.
func (c *Cache) GetAll() []*container.PodStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*container.PodStatus, 0, len(c.pods))
	for _, d := range c.pods {
		out = append(out, d.status)
	}
	return out
}

// Set stores status and err as read at timestamp and wakes the pod's waiters whose minimum
// time is not after timestamp. It reports whether it stored: in EventedPLEG mode a write
// older than the cached one is dropped (an equal timestamp still wins, as upstream).
func (c *Cache) Set(uid types.UID, status *container.PodStatus, err error, timestamp time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.evented {
		if cur, ok := c.pods[uid]; ok && cur.modified.After(timestamp) {
			return false
		}
	}
	c.pods[uid] = &data{status: status, err: err, modified: timestamp}
	c.notify(uid, timestamp)
	return true
}

// Delete forgets the pod. Waiters are not woken: a deleted pod reads as an empty status once
// the global timestamp passes their minimum time.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// UpdateTime sets the global timestamp (every entry is at least this fresh) and wakes every
// waiter whose minimum time is not after it. The PLEG calls it after each relist.
func (c *Cache) UpdateTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timestamp = t
	c.hasTimestamp = true
	for uid := range c.waiters {
		c.notify(uid, t) // may delete uid from the map, which is safe while ranging
	}
}

// GetNewerThan returns the pod's status once the cache holds data for it modified after
// minTime, or the global timestamp is after minTime (in EventedPLEG mode, an unknown pod is
// answered at once with an empty status). Until then it blocks; a Set or
// UpdateTime at or after minTime wakes it. When ctx ends first it returns ctx.Err().
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*container.PodStatus, error) {
	c.mu.Lock()
	if d := c.getIfNewerThan(uid, minTime); d != nil {
		c.mu.Unlock()
		return d.status, d.err
	}
	w := &waiter{minTime: minTime, ch: make(chan *data, 1)}
	c.waiters[uid] = append(c.waiters[uid], w)
	c.mu.Unlock()

	select {
	case d := <-w.ch:
		return d.status, d.err
	case <-ctx.Done():
		c.mu.Lock()
		c.removeWaiter(uid, w)
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// GetIfNewerThan is GetNewerThan without blocking, for a single-threaded scheduler that
// polls: ok is false when the cache has nothing newer than minTime yet (status and err are
// then nil).
func (c *Cache) GetIfNewerThan(uid types.UID, minTime time.Time) (status *container.PodStatus, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.getIfNewerThan(uid, minTime)
	if d == nil {
		return nil, false, nil
	}
	return d.status, true, d.err
}

// NumWaiters is the number of GetNewerThan calls currently blocked, so tests and schedulers
// can tell that a waiter has parked.
func (c *Cache) NumWaiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ws := range c.waiters {
		n += len(ws)
	}
	return n
}

func (c *Cache) get(uid types.UID) *data {
	if d, ok := c.pods[uid]; ok {
		return d
	}
	// A miss means the runtime had nothing for the pod at the last relist.
	return &data{status: &container.PodStatus{ID: uid}}
}

// getIfNewerThan returns the pod's data if it is fresh enough for minTime, else nil. The
// caller holds the lock.
func (c *Cache) getIfNewerThan(uid types.UID, minTime time.Time) *data {
	globalNewer := c.hasTimestamp && c.timestamp.After(minTime)
	d, ok := c.pods[uid]
	switch {
	case ok && (d.modified.After(minTime) || globalNewer):
		return d
	case !ok && (globalNewer || c.evented):
		// With EventedPLEG a pod whose container creation failed gets no runtime event, so
		// upstream answers an unknown pod at once rather than leave its worker waiting for
		// the next global time bump.
		return c.get(uid)
	}
	return nil
}

// notify hands the pod's current data to every waiter whose minimum time is not after
// timestamp and keeps the rest. Like upstream, waking is inclusive (timestamp == minTime
// wakes) while the immediate check in GetNewerThan is strict. The caller holds the lock.
func (c *Cache) notify(uid types.UID, timestamp time.Time) {
	ws, ok := c.waiters[uid]
	if !ok {
		return
	}
	keep := ws[:0]
	for _, w := range ws {
		if timestamp.Before(w.minTime) {
			keep = append(keep, w)
			continue
		}
		w.ch <- c.get(uid)
	}
	if len(keep) == 0 {
		delete(c.waiters, uid)
		return
	}
	clear(ws[len(keep):])
	c.waiters[uid] = keep
}

func (c *Cache) removeWaiter(uid types.UID, w *waiter) {
	ws := c.waiters[uid]
	if i := slices.Index(ws, w); i >= 0 {
		ws = slices.Delete(ws, i, i+1) // clears the freed slot
	}
	if len(ws) == 0 {
		delete(c.waiters, uid)
		return
	}
	c.waiters[uid] = ws
}

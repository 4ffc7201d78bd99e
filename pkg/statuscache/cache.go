package statuscache

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
)

// Config configures a Cache.
type Config struct {
	// EventedPLEG makes Set drop a write older than the cached one, as upstream's cache does
	// with the gate on (v1.30's two writers, the generic and the evented PLEG, computed their
	// timestamps independently, so a late relist must not overwrite a newer event); with the
	// gate off every write wins.
	EventedPLEG bool
	// UnknownPodFresh makes GetNewerThan answer at once, with an empty status, for a pod the
	// cache does not hold: v1.30's behaviour with EventedPLEG on, when the event stream wrote
	// the cache. v1.37's cache has no such case (only the generic PLEG writes it).
	UnknownPodFresh bool
}

// Cache implements container.Cache: every pod's latest status with the time it was read, a
// global timestamp that says how fresh all of it is at least, and waiters to notify when a
// pod's data passes a given time. The zero value is not usable; use New. Not safe for
// concurrent use: the PLEGs write it and the pod workers read it, all on the node's owner.
type Cache struct {
	evented, unknownFresh bool

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
	// observed is when a per-pod relist last read the pod (SetObservedTime; the global
	// timestamp does that for every pod at once). Zero until one does.
	observed time.Time
}

type waiter struct {
	minTime time.Time
	notify  func()
}

// New returns an empty cache.
func New(cfg Config) *Cache {
	return &Cache{
		evented:      cfg.EventedPLEG,
		unknownFresh: cfg.UnknownPodFresh,
		pods:         make(map[types.UID]*data),
		waiters:      make(map[types.UID][]*waiter),
	}
}

// Get returns the cached status and the error recorded with it. A pod the cache does not
// know gets an empty status with only its ID set: the runtime has nothing for it. Callers
// must not modify the returned status.
func (c *Cache) Get(uid types.UID) (*container.PodStatus, error) {
	d := c.get(uid)
	return d.status, d.err
}

// GetAll returns every cached status, in no particular order.
func (c *Cache) GetAll() []*container.PodStatus {
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
	if c.evented {
		if cur, ok := c.pods[uid]; ok && cur.modified.After(timestamp) {
			return false
		}
	}
	c.pods[uid] = &data{status: status, err: err, modified: timestamp}
	fns := c.notify(uid, timestamp, nil)
	run(fns)
	return true
}

// SetObservedTime records that a per-pod relist read the pod at timestamp and left the
// cache current (a relist that does not move the global timestamp), and wakes the pod's
// waiters whose minimum time is not after it, as upstream.
//
// Unlike the modification time, an observed time counts as fresh for a waiter whose
// minimum time equals it. Upstream's relist reads the runtime nanoseconds after the sync
// that asked for it ended; on the virtual clock both happen at one instant, and a strict
// check would leave the pod worker waiting for the next global relist, which is what the
// post-sync relist exists to avoid. A relist at that instant runs after the sync: the PLEG
// precedes the pod workers in the loop table, and a sync step runs to its end or to a wait
// that ends later.
func (c *Cache) SetObservedTime(uid types.UID, timestamp time.Time) {
	if d, ok := c.pods[uid]; ok {
		d.observed = timestamp
	}
	run(c.notify(uid, timestamp, nil))
}

func run(fns []func()) {
	for _, f := range fns {
		f()
	}
}

// ClearObservedTime forgets the pod's observed time (the PLEG calls it when it queues a
// relist of the pod). An observation at the instant a sync ended counts as newer than that
// sync only until the next relist request: a second sync at that instant (a requeue) asked
// for one, and must wait for it rather than read the observation it made stale.
func (c *Cache) ClearObservedTime(uid types.UID) {
	if d, ok := c.pods[uid]; ok {
		d.observed = time.Time{}
	}
}

// Delete forgets the pod. Waiters are not woken: a deleted pod reads as an empty status once
// the global timestamp passes their minimum time.
func (c *Cache) Delete(uid types.UID) {
	delete(c.pods, uid)
}

// UpdateTime sets the global timestamp (every entry is at least this fresh) and wakes every
// waiter whose minimum time is not after it. The PLEG calls it after each relist.
func (c *Cache) UpdateTime(t time.Time) {
	c.timestamp = t
	c.hasTimestamp = true
	// Woken in UID order, not the map's: the pod workers run pods in the order they became
	// ready, which simulate mode needs to be the same on every run.
	uids := make([]types.UID, 0, len(c.waiters))
	for uid := range c.waiters {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	var fns []func()
	for _, uid := range uids {
		fns = c.notify(uid, t, fns)
	}
	run(fns)
}

// NotifyWhenNewer implements container.Cache. The check is strict (data modified after
// minTime) while waking is inclusive (a write at minTime wakes), as upstream; with
// UnknownPodFresh an unknown pod counts as fresh at once (v1.30's behaviour with EventedPLEG).
func (c *Cache) NotifyWhenNewer(uid types.UID, minTime time.Time, notify func()) bool {
	if c.getIfNewerThan(uid, minTime) != nil {
		return true
	}
	c.waiters[uid] = append(c.waiters[uid], &waiter{minTime: minTime, notify: notify})
	return false
}

// GetIfNewerThan returns the pod's data if it is newer than minTime (see NotifyWhenNewer):
// ok is false when the cache has nothing newer than minTime yet (status and err are
// then nil).
func (c *Cache) GetIfNewerThan(uid types.UID, minTime time.Time) (status *container.PodStatus, ok bool, err error) {
	d := c.getIfNewerThan(uid, minTime)
	if d == nil {
		return nil, false, nil
	}
	return d.status, true, d.err
}

// Len is how many pods the cache holds a status for.
func (c *Cache) Len() int {
	return len(c.pods)
}

// NumWaiters is the number of NotifyWhenNewer registrations not yet notified.
func (c *Cache) NumWaiters() int {
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
	case ok && (d.modified.After(minTime) || (!d.observed.IsZero() && !d.observed.Before(minTime)) || globalNewer):
		return d
	case !ok && (globalNewer || c.unknownFresh):
		// With v1.30's EventedPLEG a pod whose container creation failed gets no runtime
		// event, so upstream answers an unknown pod at once rather than leave its worker waiting for
		// the next global time bump.
		return c.get(uid)
	}
	return nil
}

// notify appends to fns the notifications of the pod's waiters whose minimum time is not
// after timestamp, drops them and keeps the rest. The caller holds the lock and runs fns
// after releasing it.
func (c *Cache) notify(uid types.UID, timestamp time.Time, fns []func()) []func() {
	ws, ok := c.waiters[uid]
	if !ok {
		return fns
	}
	keep := ws[:0]
	for _, w := range ws {
		if timestamp.Before(w.minTime) {
			keep = append(keep, w)
			continue
		}
		fns = append(fns, w.notify)
	}
	if len(keep) == 0 {
		delete(c.waiters, uid)
		return fns
	}
	clear(ws[len(keep):])
	c.waiters[uid] = keep
	return fns
}

package results

import (
	"k8s.io/apimachinery/pkg/types"
)

// Result is a probe's outcome for a container.
type Result int

const (
	// Unknown: no probe has answered yet (a startup probe's initial value).
	Unknown Result = iota - 1
	// Success: the probe passed (a liveness probe's initial value).
	Success
	// Failure: the probe failed (a readiness probe's initial value).
	Failure
)

// String is upstream's rendering of a result.
func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "UNKNOWN"
}

// Update is a container whose result changed.
type Update struct {
	ContainerID string
	Result      Result
	PodUID      types.UID
}

// Manager holds one probe type's results, keyed by container ID (the CRI id, as in the
// pod status without its runtime prefix). Not safe for concurrent use: the probe workers
// write it and the pod syncs read it, all on the node's owner.
//
// Upstream sends each change on an unbuffered channel, so a probe worker waits until the sync
// loop takes it; here changes queue (Pop) and the notify hook wakes the sync loop, so a worker
// never waits.
type Manager struct {
	cache   map[string]Result
	updates []Update
	notify  func()
}

// NewManager returns an empty manager; notify (may be nil) is called after a change is
// queued, outside the manager's lock.
func NewManager(notify func()) *Manager {
	return &Manager{cache: map[string]Result{}, notify: notify}
}

// Get returns the container's result and whether it has one.
func (m *Manager) Get(containerID string) (Result, bool) {
	r, ok := m.cache[containerID]
	return r, ok
}

// Set records the container's result; a change is queued as an Update.
func (m *Manager) Set(containerID string, result Result, podUID types.UID) {
	prev, exists := m.cache[containerID]
	changed := !exists || prev != result
	if changed {
		m.cache[containerID] = result
		m.updates = append(m.updates, Update{ContainerID: containerID, Result: result, PodUID: podUID})
	}
	if changed && m.notify != nil {
		m.notify()
	}
}

// Remove forgets the container.
func (m *Manager) Remove(containerID string) {
	delete(m.cache, containerID)
}

// Pop removes and returns the oldest queued change; ok is false when none is queued.
func (m *Manager) Pop() (u Update, ok bool) {
	if len(m.updates) == 0 {
		return Update{}, false
	}
	u = m.updates[0]
	m.updates[0] = Update{}
	m.updates = m.updates[1:]
	return u, true
}

// Len is the number of queued changes.
func (m *Manager) Len() int {
	return len(m.updates)
}

// Cached is the number of containers with a result.
func (m *Manager) Cached() int {
	return len(m.cache)
}

package statuscache

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
)

var (
	t0  = time.Unix(1000, 0)
	uid = types.UID("pod-1")
)

func status(name string) *container.PodStatus {
	return &container.PodStatus{ID: uid, Name: name}
}

func TestGetUnknownPodIsEmptyStatus(t *testing.T) {
	c := New(Config{})
	got, err := c.Get(uid)
	if err != nil || got == nil || got.ID != uid || got.Name != "" {
		t.Fatalf("Get(unknown) = %+v, %v; want empty status with ID %q", got, err, uid)
	}
}

func TestSet(t *testing.T) {
	readErr := errors.New("boom")
	tests := []struct {
		name      string
		evented   bool
		first     time.Time
		second    time.Time
		wantStore bool
	}{
		{"generic: newer wins", false, t0, t0.Add(time.Second), true},
		{"generic: older still wins", false, t0, t0.Add(-time.Second), true},
		{"evented: newer wins", true, t0, t0.Add(time.Second), true},
		{"evented: equal wins", true, t0, t0, true},
		{"evented: older dropped", true, t0, t0.Add(-time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{EventedPLEG: tt.evented})
			if !c.Set(uid, status("first"), nil, tt.first) {
				t.Fatal("first Set was dropped")
			}
			stored := c.Set(uid, status("second"), readErr, tt.second)
			if stored != tt.wantStore {
				t.Fatalf("second Set stored = %v, want %v", stored, tt.wantStore)
			}
			got, err := c.Get(uid)
			wantName, wantErr := "first", error(nil)
			if tt.wantStore {
				wantName, wantErr = "second", readErr
			}
			if got.Name != wantName || !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
				t.Fatalf("Get = %q, %v; want %q, %v", got.Name, err, wantName, wantErr)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	c := New(Config{})
	c.Set(uid, status("x"), nil, t0)
	c.Delete(uid)
	if got, _ := c.Get(uid); got.Name != "" {
		t.Fatalf("after Delete, Get = %+v, want empty status", got)
	}
	if n := len(c.GetAll()); n != 0 {
		t.Fatalf("GetAll after Delete has %d entries", n)
	}
}

func TestGetIfNewerThan(t *testing.T) {
	tests := []struct {
		name       string
		evented    bool       // v1.30's EventedPLEG cache: UnknownPodFresh
		setAt      *time.Time // nil: pod not cached
		observedAt *time.Time // nil: no per-pod relist confirmed it
		clear      bool       // a relist request cleared the observation
		globalAt   *time.Time // nil: global timestamp never set
		minTime    time.Time
		wantOK     bool
		wantName   string
	}{
		{name: "nothing cached", minTime: t0, wantOK: false},
		// Upstream with the EventedPLEG gate: a pod with no runtime event is answered at
		// once, so a worker whose container creation failed is not stuck.
		{name: "evented: unknown pod answered at once", evented: true, minTime: t0, wantOK: true},
		{name: "evented: stale entry still waits", evented: true, setAt: ptr(t0.Add(-time.Hour)), minTime: t0, wantOK: false},
		{name: "evented: stale entry, global newer", evented: true, setAt: ptr(t0.Add(-time.Hour)), globalAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true, wantName: "x"},
		{name: "stale entry observed after minTime", setAt: ptr(t0.Add(-time.Hour)), observedAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true, wantName: "x"},
		// Inclusive, unlike a write: the pod relist at the sync's instant ran after it.
		{name: "stale entry observed at minTime is fresh", setAt: ptr(t0.Add(-time.Hour)), observedAt: ptr(t0), minTime: t0, wantOK: true, wantName: "x"},
		{name: "stale entry observed before minTime waits", setAt: ptr(t0.Add(-time.Hour)), observedAt: ptr(t0.Add(-time.Nanosecond)), minTime: t0, wantOK: false},
		// Only a cached pod can be observed: a per-pod relist of a pod the cache does not hold
		// leaves it waiting for the global timestamp.
		{name: "missing pod observed after minTime", observedAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: false},
		{name: "observation cleared by a relist request waits", setAt: ptr(t0.Add(-time.Hour)), observedAt: ptr(t0), clear: true, minTime: t0, wantOK: false},
		{name: "modified after minTime", setAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true, wantName: "x"},
		{name: "modified at minTime is not newer", setAt: ptr(t0), minTime: t0, wantOK: false},
		{name: "stale entry, global newer", setAt: ptr(t0.Add(-time.Hour)), globalAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true, wantName: "x"},
		{name: "missing pod, global newer gives empty status", globalAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true},
		{name: "missing pod, global at minTime", globalAt: ptr(t0), minTime: t0, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{EventedPLEG: tt.evented, UnknownPodFresh: tt.evented})
			if tt.setAt != nil {
				c.Set(uid, status("x"), nil, *tt.setAt)
			}
			if tt.observedAt != nil {
				c.SetObservedTime(uid, *tt.observedAt)
			}
			if tt.clear {
				c.ClearObservedTime(uid)
			}
			if tt.globalAt != nil {
				c.UpdateTime(*tt.globalAt)
			}
			got, ok, err := c.GetIfNewerThan(uid, tt.minTime)
			if ok != tt.wantOK || err != nil {
				t.Fatalf("GetIfNewerThan ok = %v, err = %v; want ok = %v", ok, err, tt.wantOK)
			}
			if ok && (got.ID != uid || got.Name != tt.wantName) {
				t.Fatalf("status = %+v, want ID %q name %q", got, uid, tt.wantName)
			}
			// NotifyWhenNewer answers at once exactly when GetIfNewerThan does, and only
			// registers a waiter otherwise.
			if fresh := c.NotifyWhenNewer(uid, tt.minTime, func() {}); fresh != tt.wantOK {
				t.Fatalf("NotifyWhenNewer = %v, want %v", fresh, tt.wantOK)
			}
			if want := map[bool]int{true: 0, false: 1}[tt.wantOK]; c.NumWaiters() != want {
				t.Fatalf("waiters = %d, want %d", c.NumWaiters(), want)
			}
		})
	}
}

func ptr(t time.Time) *time.Time { return &t }

// newWaiter registers a NotifyWhenNewer and counts its notifications.
func newWaiter(t *testing.T, c *Cache, minTime time.Time) *int {
	t.Helper()
	n := new(int)
	if c.NotifyWhenNewer(uid, minTime, func() { *n++ }) {
		t.Fatal("NotifyWhenNewer answered fresh; the test wants a waiter")
	}
	return n
}

func TestNotifyWhenNewerWakeups(t *testing.T) {
	minTime := t0
	tests := []struct {
		name     string
		act      func(c *Cache)
		wantWake bool
	}{
		{"Set after minTime wakes", func(c *Cache) { c.Set(uid, status("new"), nil, minTime.Add(time.Second)) }, true},
		{"Set at minTime wakes (inclusive, as upstream)", func(c *Cache) { c.Set(uid, status("eq"), nil, minTime) }, true},
		{"Set before minTime does not wake", func(c *Cache) { c.Set(uid, status("old"), nil, minTime.Add(-time.Second)) }, false},
		{"Set of another pod does not wake", func(c *Cache) { c.Set("other", status("o"), nil, minTime.Add(time.Second)) }, false},
		{"UpdateTime after minTime wakes", func(c *Cache) { c.UpdateTime(minTime.Add(time.Second)) }, true},
		{"UpdateTime before minTime does not wake", func(c *Cache) { c.UpdateTime(minTime.Add(-time.Second)) }, false},
		{"Delete does not wake", func(c *Cache) { c.Delete(uid) }, false},
		{"SetObservedTime at minTime wakes (a per-pod relist)", func(c *Cache) { c.SetObservedTime(uid, minTime) }, true},
		{"SetObservedTime before minTime does not wake", func(c *Cache) { c.SetObservedTime(uid, minTime.Add(-time.Second)) }, false},
		{"SetObservedTime of another pod does not wake", func(c *Cache) { c.SetObservedTime("other", minTime.Add(time.Second)) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{})
			n := newWaiter(t, c, minTime)
			tt.act(c)
			want, wantWaiters := 0, 1
			if tt.wantWake {
				want, wantWaiters = 1, 0
			}
			if *n != want || c.NumWaiters() != wantWaiters {
				t.Fatalf("notified %d times with %d waiters left, want %d and %d", *n, c.NumWaiters(), want, wantWaiters)
			}
			c.UpdateTime(minTime.Add(time.Hour)) // a waiter is notified at most once
			if *n != 1 {
				t.Fatalf("notified %d times in all, want exactly once", *n)
			}
		})
	}
}

// TestNotifyRunsOutsideTheLock: a notification may call back into the cache (the pod
// workers read it right away).
func TestNotifyRunsOutsideTheLock(t *testing.T) {
	c := New(Config{})
	var got *container.PodStatus
	c.NotifyWhenNewer(uid, t0, func() { got, _ = c.Get(uid) })
	c.Set(uid, status("s"), nil, t0.Add(time.Second))
	if got == nil || got.Name != "s" {
		t.Fatalf("Get from the notification = %+v", got)
	}
	c.NotifyWhenNewer(uid, t0.Add(time.Minute), func() { c.NotifyWhenNewer(uid, t0.Add(time.Hour), func() {}) })
	c.UpdateTime(t0.Add(time.Minute))
	if c.NumWaiters() != 1 {
		t.Fatalf("waiters = %d, want the one registered from the notification", c.NumWaiters())
	}
}

func TestNotifyWhenNewerWakesSelectively(t *testing.T) {
	c := New(Config{})
	early := newWaiter(t, c, t0)
	late := newWaiter(t, c, t0.Add(10*time.Second))
	c.Set(uid, status("s"), nil, t0.Add(time.Second))
	if *early != 1 || *late != 0 || c.NumWaiters() != 1 {
		t.Fatalf("early=%d late=%d waiters=%d, want 1 0 1", *early, *late, c.NumWaiters())
	}
	c.UpdateTime(t0.Add(10 * time.Second))
	if *late != 1 || c.NumWaiters() != 0 {
		t.Fatalf("late=%d waiters=%d, want 1 0", *late, c.NumWaiters())
	}
}

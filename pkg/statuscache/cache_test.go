package statuscache

import (
	"context"
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
		name     string
		evented  bool
		setAt    *time.Time // nil: pod not cached
		globalAt *time.Time // nil: global timestamp never set
		minTime  time.Time
		wantOK   bool
		wantName string
	}{
		{name: "nothing cached", minTime: t0, wantOK: false},
		// Upstream with the EventedPLEG gate: a pod with no runtime event is answered at
		// once, so a worker whose container creation failed is not stuck.
		{name: "evented: unknown pod answered at once", evented: true, minTime: t0, wantOK: true},
		{name: "evented: stale entry still waits", evented: true, setAt: ptr(t0.Add(-time.Hour)), minTime: t0, wantOK: false},
		{name: "evented: stale entry, global newer", evented: true, setAt: ptr(t0.Add(-time.Hour)), globalAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true, wantName: "x"},
		{name: "modified after minTime", setAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true, wantName: "x"},
		{name: "modified at minTime is not newer", setAt: ptr(t0), minTime: t0, wantOK: false},
		{name: "stale entry, global newer", setAt: ptr(t0.Add(-time.Hour)), globalAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true, wantName: "x"},
		{name: "missing pod, global newer gives empty status", globalAt: ptr(t0.Add(time.Second)), minTime: t0, wantOK: true},
		{name: "missing pod, global at minTime", globalAt: ptr(t0), minTime: t0, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{EventedPLEG: tt.evented})
			if tt.setAt != nil {
				c.Set(uid, status("x"), nil, *tt.setAt)
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
			// The blocking variant answers at once exactly when the polling one does.
			if ok {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if s, err := c.GetNewerThan(ctx, uid, tt.minTime); err != nil || s.Name != tt.wantName {
					t.Fatalf("GetNewerThan = %+v, %v; want immediate %q", s, err, tt.wantName)
				}
			}
		})
	}
}

func ptr(t time.Time) *time.Time { return &t }

type result struct {
	status *container.PodStatus
	err    error
}

// wait starts a GetNewerThan and returns once it has parked in the cache.
func wait(t *testing.T, ctx context.Context, c *Cache, minTime time.Time) <-chan result {
	t.Helper()
	before := c.NumWaiters()
	out := make(chan result, 1)
	go func() {
		s, err := c.GetNewerThan(ctx, uid, minTime)
		out <- result{s, err}
	}()
	for c.NumWaiters() == before {
		time.Sleep(time.Millisecond) // the goroutine has not parked yet
	}
	return out
}

func receive(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("GetNewerThan did not return")
		return result{}
	}
}

func TestGetNewerThanWakeups(t *testing.T) {
	minTime := t0
	tests := []struct {
		name     string
		act      func(c *Cache)
		wantWake bool
		wantName string
	}{
		{"Set after minTime wakes", func(c *Cache) { c.Set(uid, status("new"), nil, minTime.Add(time.Second)) }, true, "new"},
		{"Set at minTime wakes (inclusive, as upstream)", func(c *Cache) { c.Set(uid, status("eq"), nil, minTime) }, true, "eq"},
		{"Set before minTime does not wake", func(c *Cache) { c.Set(uid, status("old"), nil, minTime.Add(-time.Second)) }, false, ""},
		{"Set of another pod does not wake", func(c *Cache) { c.Set("other", status("o"), nil, minTime.Add(time.Second)) }, false, ""},
		{"UpdateTime after minTime wakes with empty status", func(c *Cache) { c.UpdateTime(minTime.Add(time.Second)) }, true, ""},
		{"UpdateTime before minTime does not wake", func(c *Cache) { c.UpdateTime(minTime.Add(-time.Second)) }, false, ""},
		{"Delete does not wake", func(c *Cache) { c.Delete(uid) }, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := wait(t, ctx, c, minTime)
			tt.act(c)
			if !tt.wantWake {
				if n := c.NumWaiters(); n != 1 {
					t.Fatalf("waiters = %d, want the waiter still parked", n)
				}
				cancel()
				if r := receive(t, ch); !errors.Is(r.err, context.Canceled) {
					t.Fatalf("after cancel got %+v, want context.Canceled", r)
				}
				return
			}
			r := receive(t, ch)
			if r.err != nil || r.status == nil || r.status.ID != uid || r.status.Name != tt.wantName {
				t.Fatalf("GetNewerThan = %+v, %v; want status %q", r.status, r.err, tt.wantName)
			}
			if n := c.NumWaiters(); n != 0 {
				t.Fatalf("waiters = %d after wake, want 0", n)
			}
		})
	}
}

func TestGetNewerThanContextEnds(t *testing.T) {
	c := New(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ch1 := wait(t, ctx, c, t0)
	ch2 := wait(t, context.Background(), c, t0) // an unrelated waiter on the same pod stays
	cancel()
	if r := receive(t, ch1); !errors.Is(r.err, context.Canceled) || r.status != nil {
		t.Fatalf("cancelled waiter got %+v", r)
	}
	if n := c.NumWaiters(); n != 1 {
		t.Fatalf("waiters = %d, want 1 (the cancelled one removed, the other kept)", n)
	}
	c.UpdateTime(t0.Add(time.Second))
	if r := receive(t, ch2); r.err != nil {
		t.Fatalf("remaining waiter got %v", r.err)
	}
}

func TestGetNewerThanManyWaitersWakeSelectively(t *testing.T) {
	c := New(Config{})
	early := wait(t, context.Background(), c, t0)
	late := wait(t, context.Background(), c, t0.Add(10*time.Second))
	c.Set(uid, status("s"), nil, t0.Add(time.Second))
	if r := receive(t, early); r.status.Name != "s" {
		t.Fatalf("early waiter got %+v", r.status)
	}
	if n := c.NumWaiters(); n != 1 {
		t.Fatalf("waiters = %d, want the late one still parked", n)
	}
	c.UpdateTime(t0.Add(10 * time.Second))
	if r := receive(t, late); r.status.Name != "s" {
		t.Fatalf("late waiter got %+v", r.status)
	}
}

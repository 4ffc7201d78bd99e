package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// storedEvent is an event as the node's store hands it to the sink: named once, its count
// the repeats the store folded.
func storedEvent(clk *testingclock.FakeClock, pod, reason, msg string, count int32) v1.Event {
	now := metav1.NewTime(clk.Now())
	return v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%s", pod, reason), Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod, Namespace: "default", UID: types.UID("uid-" + pod)},
		Reason:         reason, Message: msg, Count: count, Type: v1.EventTypeNormal,
		Source:         v1.EventSource{Component: "kubelet", Host: "n1"},
		FirstTimestamp: now, LastTimestamp: now,
	}
}

func apiEvents(t *testing.T, client *fake.Clientset) []v1.Event {
	t.Helper()
	list, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestEventSink: the occurrences the sink is given reach the API server as the kubelet's
// event broadcaster writes them, through client-go's correlator.
func TestEventSink(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s *EventSink, clk *testingclock.FakeClock, client *fake.Clientset)
	}{{
		name: "a repeat patches the count of what the API server has, and is created again when it is gone",
		run: func(t *testing.T, s *EventSink, clk *testingclock.FakeClock, client *fake.Clientset) {
			ev := storedEvent(clk, "web", "Pulling", `Pulling image "nginx"`, 1)
			s.record(ctx, &ev)
			clk.Step(time.Second)
			ev.Count, ev.LastTimestamp = 3, metav1.NewTime(clk.Now()) // the store folded two
			s.record(ctx, &ev)
			got := apiEvents(t, client)
			if len(got) != 1 || got[0].Name != "web.Pulling" || got[0].Count != 2 || !got[0].LastTimestamp.Equal(&ev.LastTimestamp) {
				t.Fatalf("API events %+v, want web.Pulling with count 2 (the occurrences sent) and the last timestamp", got)
			}
			if err := client.CoreV1().Events("default").Delete(ctx, "web.Pulling", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			s.record(ctx, &ev)
			if got := apiEvents(t, client); len(got) != 1 || got[0].Count != 3 {
				t.Errorf("after the API server lost it: %+v, want it created with count 3", got)
			}
		},
	}, {
		name: "an object's events past a burst of 25 are dropped, one more every 5 minutes",
		run: func(t *testing.T, s *EventSink, clk *testingclock.FakeClock, client *fake.Clientset) {
			for i := range 30 {
				ev := storedEvent(clk, "web", fmt.Sprintf("Reason%d", i), "m", 1)
				s.record(ctx, &ev)
			}
			if n := len(apiEvents(t, client)); n != 25 || s.Skipped() != 5 {
				t.Fatalf("%d events written, %d skipped; want 25 and 5", n, s.Skipped())
			}
			other := storedEvent(clk, "db", "Started", "m", 1)
			s.record(ctx, &other)
			clk.Step(299 * time.Second)
			late := storedEvent(clk, "web", "Late", "m", 1)
			s.record(ctx, &late)
			clk.Step(time.Second)
			later := storedEvent(clk, "web", "Later", "m", 1)
			s.record(ctx, &later)
			names := map[string]bool{}
			for _, ev := range apiEvents(t, client) {
				names[ev.Name] = true
			}
			if !names["db.Started"] || names["web.Late"] || !names["web.Later"] || len(names) != 27 {
				t.Errorf("events %v: want another object's written, none more of web's within 5 minutes, one after", names)
			}
		},
	}, {
		name: "from the tenth message of one reason in 10 minutes, they are combined",
		run: func(t *testing.T, s *EventSink, clk *testingclock.FakeClock, client *fake.Clientset) {
			for i := range 12 {
				ev := storedEvent(clk, "web", "BackOff", fmt.Sprintf("message %d", i), 1)
				ev.Name = fmt.Sprintf("web.%d", i)
				s.record(ctx, &ev)
				clk.Step(time.Second)
			}
			var combined []v1.Event
			for _, ev := range apiEvents(t, client) {
				if strings.HasPrefix(ev.Message, "(combined from similar events): ") {
					combined = append(combined, ev)
				}
			}
			if n := len(apiEvents(t, client)); n != 10 || len(combined) != 1 || combined[0].Count != 3 || combined[0].Message != "(combined from similar events): message 11" {
				t.Errorf("%d events, combined %+v; want 9 as sent and one combined event counted 3 times, with the last message", n, combined)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
			client := fake.NewClientset()
			tc.run(t, NewEventSink(client, clk), clk, client)
		})
	}
}

// TestEventSinkRetries: an event the API server could not be reached for is tried again
// after a wait on the node's clock, up to 12 times; one it rejected is not.
func TestEventSinkRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		failures  int32
		wantTries int32
		written   bool
	}{
		{name: "unreachable twice", err: errors.New("connection refused"), failures: 2, wantTries: 3, written: true},
		{name: "unreachable for good", err: errors.New("connection refused"), failures: 100, wantTries: eventTries},
		{name: "rejected", err: apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "web.1", errors.New("no")), failures: 100, wantTries: 1},
		{name: "namespace terminating", err: &apierrors.StatusError{ErrStatus: metav1.Status{Reason: metav1.StatusReasonForbidden, Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: v1.NamespaceTerminatingCause}}}}}, failures: 100, wantTries: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
			client := fake.NewClientset()
			var tries atomic.Int32
			client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tries.Add(1) <= tc.failures {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			s := NewEventSink(client, clk)
			ev := storedEvent(clk, "web", "Started", "m", 1)
			done := make(chan struct{})
			go func() { defer close(done); s.record(context.Background(), &ev) }()
			waitingOrDone := func() bool {
				select {
				case <-done:
					return true
				default:
					return clk.HasWaiters()
				}
			}
			for finished := false; !finished; {
				eventually.True(t, "the sink waits on the clock or is done", waitingOrDone)
				select {
				case <-done:
					finished = true
				default:
					clk.Step(eventRetryDelay)
				}
			}
			if got := tries.Load(); got != tc.wantTries {
				t.Errorf("%d tries, want %d", got, tc.wantTries)
			}
			if n := len(apiEvents(t, client)); (n == 1) != tc.written {
				t.Errorf("%d events in the API server, want written %v", n, tc.written)
			}
		})
	}
}

// TestEventSinkQueue: Queue never blocks; what does not fit is dropped and counted.
func TestEventSinkQueue(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	s := NewEventSink(fake.NewClientset(), clk)
	ev := storedEvent(clk, "web", "Started", "m", 1)
	for range EventQueueSize + 5 {
		s.Queue(ev)
	}
	if s.Dropped() != 5 {
		t.Errorf("dropped %d, want 5 beyond the queue's %d", s.Dropped(), EventQueueSize)
	}
}

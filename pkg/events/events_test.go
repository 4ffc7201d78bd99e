package events

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestStoreDedupesOrdersAndBounds(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(100, 0))
	s := NewStore(clk, "node", 3)
	node := NodeRef("node")
	s.Eventf(node, v1.EventTypeNormal, "NodeReady", "Node %s status is now: %s", "node", "NodeReady")
	clk.Step(time.Second)
	s.Eventf(node, v1.EventTypeNormal, "NodeNotReady", "Node node status is now: NodeNotReady")
	clk.Step(time.Second)
	s.Eventf(node, v1.EventTypeNormal, "NodeReady", "Node %s status is now: %s", "node", "NodeReady")

	got := s.List()
	if len(got) != 2 {
		t.Fatalf("len = %d, want 2 (repeat folded): %+v", len(got), got)
	}
	if got[1].Reason != "NodeReady" || got[1].Count != 2 || !got[1].LastTimestamp.Time.Equal(time.Unix(102, 0)) || !got[1].FirstTimestamp.Time.Equal(time.Unix(100, 0)) {
		t.Errorf("folded event = %+v, want NodeReady count 2 last at 102 first at 100, newest last", got[1])
	}
	if got[0].Message != "Node node status is now: NodeNotReady" || got[0].Source.Host != "node" {
		t.Errorf("first = %+v", got[0])
	}
	for i := 0; i < 5; i++ {
		s.Eventf(&v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, v1.EventTypeWarning, "Failed", "attempt %d", i)
	}
	got = s.List()
	if len(got) != 3 || got[2].Message != "attempt 4" || got[0].Message != "attempt 2" {
		t.Fatalf("bounded list = %v, want the 3 newest attempts", got)
	}
	// dedupe still works after trimming
	s.Eventf(&v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, v1.EventTypeWarning, "Failed", "attempt 3")
	got = s.List()
	if len(got) != 3 || got[2].Message != "attempt 3" || got[2].Count != 2 {
		t.Fatalf("after repeat = %+v", got)
	}
}

func TestStoreFoldsOnlyIdenticalEvents(t *testing.T) {
	pod := &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "u1"}
	for _, tc := range []struct {
		name     string
		second   *v1.ObjectReference
		typ      string
		reason   string
		message  string
		wantLen  int
		wantLast int32 // Count of the newest event
	}{
		{"identical", pod, v1.EventTypeNormal, "Started", "Started container c", 1, 2},
		{"other message", pod, v1.EventTypeNormal, "Started", "Started container d", 2, 1},
		{"other reason", pod, v1.EventTypeNormal, "Created", "Started container c", 2, 1},
		{"other type", pod, v1.EventTypeWarning, "Started", "Started container c", 2, 1},
		{"other pod UID (recreated pod)", &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "u2"}, v1.EventTypeNormal, "Started", "Started container c", 2, 1},
		{"other namespace", &v1.ObjectReference{Kind: "Pod", Namespace: "prod", Name: "web", UID: "u1"}, v1.EventTypeNormal, "Started", "Started container c", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(testingclock.NewFakeClock(time.Unix(0, 0)), "node", 10)
			s.Eventf(pod, v1.EventTypeNormal, "Started", "Started container %s", "c")
			s.Eventf(tc.second, tc.typ, tc.reason, "%s", tc.message)
			got := s.List()
			if len(got) != tc.wantLen || got[len(got)-1].Count != tc.wantLast {
				t.Fatalf("events = %+v, want %d with the newest counted %d", got, tc.wantLen, tc.wantLast)
			}
			if got[len(got)-1].Namespace != tc.second.Namespace {
				t.Errorf("event namespace %q, want the object's %q", got[len(got)-1].Namespace, tc.second.Namespace)
			}
		})
	}
}

func TestStoreSubscribeAndDefaults(t *testing.T) {
	s := NewStore(testingclock.NewFakeClock(time.Unix(0, 0)), "node", 0)
	var seen []v1.Event
	s.Subscribe(func(e v1.Event) { seen = append(seen, e) })
	node := NodeRef("node")
	s.Eventf(node, v1.EventTypeNormal, "NodeReady", "Node node status is now: NodeReady")
	s.Eventf(node, v1.EventTypeNormal, "NodeReady", "Node node status is now: NodeReady")
	if len(seen) != 2 || seen[1].Count != 2 {
		t.Fatalf("subscriber saw %+v, want both recordings, the second with Count 2", seen)
	}
	// Node events live in the default namespace, named after the object, from the kubelet.
	if e := seen[0]; e.Namespace != "default" || e.InvolvedObject.UID != "node" || e.Source.Component != "kubelet" || e.Source.Host != "node" {
		t.Errorf("node event = %+v", e)
	}
	for i := 0; i < DefaultCapacity+5; i++ {
		s.Eventf(node, v1.EventTypeNormal, "Tick", "tick %d", i)
	}
	if got := s.List(); len(got) != DefaultCapacity || got[len(got)-1].Message != fmt.Sprintf("tick %d", DefaultCapacity+4) {
		t.Fatalf("capacity 0 keeps %d events (newest %q), want DefaultCapacity %d", len(got), got[len(got)-1].Message, DefaultCapacity)
	}
}

// TestStoreNames: events are named as upstream's recorder names them, the object and the
// instant in hex, and stay unique when the clock has not moved between them.
func TestStoreNames(t *testing.T) {
	start := time.Unix(100, 0)
	clk := testingclock.NewFakeClock(start)
	s := NewStore(clk, "node", 0)
	pod := &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "u1"}
	s.Eventf(pod, v1.EventTypeNormal, "Pulled", "a")
	s.Eventf(pod, v1.EventTypeNormal, "Created", "b")
	s.Eventf(pod, v1.EventTypeNormal, "Pulled", "a") // a repeat keeps its name
	clk.Step(time.Second)
	s.Eventf(pod, v1.EventTypeNormal, "Started", "c")
	var names []string
	for _, ev := range s.List() {
		names = append(names, ev.Name)
	}
	n := start.UnixNano()
	want := []string{fmt.Sprintf("web.%x", n+1), fmt.Sprintf("web.%x", n), fmt.Sprintf("web.%x", n+int64(time.Second))}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("names %v, want %v", names, want)
	}
}

// An event reads back whole, every field of its object's reference and its times, though
// the store keeps it in parts (entry).
func TestStoreKeepsTheWholeEvent(t *testing.T) {
	start := time.Unix(100, 0)
	clk := testingclock.NewFakeClock(start)
	s := NewStore(clk, "node-1", 0)
	ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "web", UID: "u1",
		ResourceVersion: "42", FieldPath: "spec.containers{app}"}
	s.Eventf(ref, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", "app")
	clk.Step(3 * time.Second)
	s.Eventf(ref, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", "app")
	first, last := metav1.NewTime(start), metav1.NewTime(start.Add(3*time.Second))
	want := v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web.%x", start.UnixNano()), Namespace: "ns", CreationTimestamp: first},
		InvolvedObject: *ref,
		Reason:         "BackOff",
		Message:        "Back-off restarting failed container app",
		Source:         v1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: first,
		LastTimestamp:  last,
		Count:          2,
		Type:           v1.EventTypeWarning,
	}
	got := s.List()
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("List() = %+v\nwant [%+v]", got, want)
	}
}

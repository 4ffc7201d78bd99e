package events

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultCapacity is how many distinct events the store keeps before dropping the oldest.
const DefaultCapacity = 1000

// Recorder records events. Safe for concurrent use.
type Recorder interface {
	// Eventf records an event of eventtype (v1.EventTypeNormal or v1.EventTypeWarning) about obj.
	Eventf(obj *v1.ObjectReference, eventtype, reason, messageFmt string, args ...interface{})
}

// Store keeps the newest events in order, folding a repeat of the last identical event
// (same object, type, reason and message) into its Count as the apiserver's event
// aggregation does.
type Store struct {
	clock    clock.PassiveClock
	source   v1.EventSource
	capacity int

	mu     sync.Mutex
	events []v1.Event // oldest first
	seq    int
	index  map[string]int // dedupe key -> position in events
	subs   []func(v1.Event)
}

var _ Recorder = (*Store)(nil)

// NewStore returns a store that stamps events with clk and the node as source.
func NewStore(clk clock.PassiveClock, nodeName string, capacity int) *Store {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Store{clock: clk, source: v1.EventSource{Component: "kubelet", Host: nodeName}, capacity: capacity, index: map[string]int{}}
}

// Subscribe calls fn with every event recorded from now on (after the store is updated,
// outside its lock). Used by simulate mode's timeline.
func (s *Store) Subscribe(fn func(v1.Event)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, fn)
}

// Eventf implements Recorder.
func (s *Store) Eventf(obj *v1.ObjectReference, eventtype, reason, messageFmt string, args ...interface{}) {
	msg := messageFmt
	if len(args) > 0 {
		msg = fmt.Sprintf(messageFmt, args...)
	}
	now := metav1.NewTime(s.clock.Now())
	key := string(obj.UID) + "\x00" + obj.Kind + "\x00" + obj.Namespace + "\x00" + obj.Name + "\x00" + eventtype + "\x00" + reason + "\x00" + msg

	s.mu.Lock()
	var ev v1.Event
	if i, ok := s.index[key]; ok {
		e := &s.events[i]
		e.Count++
		e.LastTimestamp = now
		ev = *e
		// move to the end so the list stays ordered by last occurrence (newest last)
		s.events = append(append(s.events[:i:i], s.events[i+1:]...), ev)
		s.reindex(i)
	} else {
		s.seq++
		ev = v1.Event{
			ObjectMeta: metav1.ObjectMeta{
				Name:              fmt.Sprintf("%s.%x", obj.Name, s.seq),
				Namespace:         namespaceOf(obj),
				CreationTimestamp: now,
			},
			InvolvedObject: *obj,
			Reason:         reason,
			Message:        msg,
			Source:         s.source,
			FirstTimestamp: now,
			LastTimestamp:  now,
			Count:          1,
			Type:           eventtype,
		}
		s.events = append(s.events, ev)
		s.index[key] = len(s.events) - 1
		if len(s.events) > s.capacity {
			s.events = append(s.events[:0:0], s.events[len(s.events)-s.capacity:]...)
			s.reindex(0)
		}
	}
	subs := s.subs
	s.mu.Unlock()

	klog.V(2).InfoS("Event occurred", "object", klog.KRef(obj.Namespace, obj.Name), "kind", obj.Kind, "type", eventtype, "reason", reason, "message", msg)
	for _, fn := range subs {
		fn(ev)
	}
}

// reindex rebuilds the dedupe index from position from on (after a move or a trim).
func (s *Store) reindex(from int) {
	if from == 0 {
		s.index = make(map[string]int, len(s.events))
	}
	for i := from; i < len(s.events); i++ {
		e := &s.events[i]
		o := e.InvolvedObject
		s.index[string(o.UID)+"\x00"+o.Kind+"\x00"+o.Namespace+"\x00"+o.Name+"\x00"+e.Type+"\x00"+e.Reason+"\x00"+e.Message] = i
	}
}

// List returns a copy of the stored events, oldest first (newest last).
func (s *Store) List() []v1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]v1.Event, len(s.events))
	copy(out, s.events)
	return out
}

func namespaceOf(obj *v1.ObjectReference) string {
	if obj.Namespace != "" {
		return obj.Namespace
	}
	return metav1.NamespaceDefault
}

// PodRef returns the object reference events about pod use.
func PodRef(pod *v1.Pod) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

// NodeRef returns the object reference events about the node use (the kubelet uses the node
// name as UID for its node events).
func NodeRef(nodeName string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}
}

package events

import (
	"container/list"
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

// Store keeps the newest events in order, folding a repeat of an identical stored event
// (same object, type, reason and message) into its Count as the apiserver's event
// aggregation does. Recording is O(1): at capacity, with thousands of pods, every event
// evicts the oldest one.
type Store struct {
	clock    clock.PassiveClock
	source   v1.EventSource
	capacity int

	mu    sync.Mutex
	order *list.List // of *entry, least recently seen first
	index map[eventKey]*list.Element
	last  int64 // the last event's name's instant
	subs  []func(v1.Event)
}

// eventKey identifies events that are folded together.
type eventKey struct {
	uid                        types.UID
	kind, namespace, name      string
	eventType, reason, message string
}

// entry is a stored event in what it does not share with its key: the event is built
// from both when read. A v1.Event beside its key took 1,199 bytes a stored event, this 671,
// and a node keeps up to DefaultCapacity of them: with --node-count 1,000 and pods coming
// and going, 1.2 GB of events the nodes also sent to the API server, now 0.67 GB.
type entry struct {
	key eventKey
	// The object's reference beyond the key's fields.
	apiVersion, resourceVersion, fieldPath string
	name                                   string
	first, last                            metav1.Time
	count                                  int32
}

// event is the stored event as the recorder made it.
func (e *entry) event(source v1.EventSource) v1.Event {
	return v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: namespaceOf(e.key.namespace), CreationTimestamp: e.first},
		InvolvedObject: v1.ObjectReference{Kind: e.key.kind, Namespace: e.key.namespace, Name: e.key.name, UID: e.key.uid,
			APIVersion: e.apiVersion, ResourceVersion: e.resourceVersion, FieldPath: e.fieldPath},
		Reason:         e.key.reason,
		Message:        e.key.message,
		Source:         source,
		FirstTimestamp: e.first,
		LastTimestamp:  e.last,
		Count:          e.count,
		Type:           e.key.eventType,
	}
}

var _ Recorder = (*Store)(nil)

// NewStore returns a store that stamps events with clk and the node as source and keeps at
// most capacity events (DefaultCapacity if capacity <= 0).
func NewStore(clk clock.PassiveClock, nodeName string, capacity int) *Store {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Store{
		clock:    clk,
		source:   v1.EventSource{Component: "kubelet", Host: nodeName},
		capacity: capacity,
		order:    list.New(),
		index:    map[eventKey]*list.Element{},
	}
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
	key := eventKey{uid: obj.UID, kind: obj.Kind, namespace: obj.Namespace, name: obj.Name, eventType: eventtype, reason: reason, message: msg}

	s.mu.Lock()
	var e *entry
	if el, ok := s.index[key]; ok {
		e = el.Value.(*entry)
		e.count++
		e.last = now
		// The list stays ordered by last occurrence (newest last).
		s.order.MoveToBack(el)
	} else {
		// Named as upstream's recorder names an event, the object and the instant in hex,
		// which keeps names unique across restarts of the daemon; one instant later than the
		// last event's when a fake clock has not moved.
		s.last = max(s.last+1, now.UnixNano())
		e = &entry{key: key, apiVersion: obj.APIVersion, resourceVersion: obj.ResourceVersion, fieldPath: obj.FieldPath,
			name: fmt.Sprintf("%s.%x", obj.Name, s.last), first: now, last: now, count: 1}
		s.index[key] = s.order.PushBack(e)
		if s.order.Len() > s.capacity {
			oldest := s.order.Remove(s.order.Front()).(*entry)
			delete(s.index, oldest.key)
		}
	}
	subs := s.subs
	var ev v1.Event
	if len(subs) > 0 {
		ev = e.event(s.source) // under the lock: a later repeat changes e
	}
	s.mu.Unlock()

	klog.V(2).InfoS("Event occurred", "object", klog.KRef(obj.Namespace, obj.Name), "kind", obj.Kind, "type", eventtype, "reason", reason, "message", msg)
	for _, fn := range subs {
		fn(ev)
	}
}

// List returns a copy of the stored events, oldest first (newest last).
func (s *Store) List() []v1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]v1.Event, 0, s.order.Len())
	for el := s.order.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*entry).event(s.source))
	}
	return out
}

// namespaceOf is the namespace of an event about an object of namespace ns: a cluster
// object's (the Node's) are in default, as the kubelet's recorder puts them.
func namespaceOf(ns string) string {
	if ns != "" {
		return ns
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

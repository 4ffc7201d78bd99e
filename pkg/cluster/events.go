package cluster

import (
	"context"
	"encoding/json"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// EventQueueSize is how many events wait for the API server before new ones are dropped (as
// upstream's event broadcaster's queue).
const EventQueueSize = 1000

// EventSink writes the kubelet's events to the API server, as upstream's event broadcaster
// does: a new event is created in its object's namespace, a repeat (the store folded it
// into Count) patches count, last timestamp and message, and is created if the API server
// no longer has it. Queue never blocks the recorder; Run sends.
type EventSink struct {
	client  kubernetes.Interface
	queue   chan *v1.Event // pointers: a queue of 1,000 v1.Event values is 600 KB per node
	dropped atomic.Int64
}

// NewEventSink returns a sink of client.
func NewEventSink(client kubernetes.Interface) *EventSink {
	return &EventSink{client: client, queue: make(chan *v1.Event, EventQueueSize)}
}

// Queue hands over an event (events.Store.Subscribe): never blocks; an event that does not
// fit is dropped.
func (s *EventSink) Queue(ev v1.Event) {
	select {
	case s.queue <- &ev:
	default:
		s.dropped.Add(1)
	}
}

// Dropped is the number of events the full queue dropped.
func (s *EventSink) Dropped() int64 { return s.dropped.Load() }

// Run sends queued events until ctx ends. Run it in a goroutine of its own.
func (s *EventSink) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-s.queue:
			s.send(ctx, *ev)
		}
	}
}

func (s *EventSink) send(ctx context.Context, ev v1.Event) {
	events := s.client.CoreV1().Events(ev.Namespace)
	// A repeat is known by its count, as upstream's recordToSink knows it: no set of the
	// names sent, which grew for the life of the process (the store names every event once).
	if ev.Count > 1 {
		patch, err := json.Marshal(map[string]any{"count": ev.Count, "lastTimestamp": ev.LastTimestamp, "message": ev.Message})
		if err == nil {
			_, err = events.Patch(ctx, ev.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		}
		if err == nil || !apierrors.IsNotFound(err) {
			s.logErr(ctx, err, ev)
			return
		}
		// Gone (TTL): create it again.
	}
	fresh := ev.DeepCopy()
	fresh.ResourceVersion, fresh.UID = "", ""
	_, err := events.Create(ctx, fresh, metav1.CreateOptions{})
	s.logErr(ctx, err, ev)
}

func (s *EventSink) logErr(ctx context.Context, err error, ev v1.Event) {
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Server rejected event (will not retry!)", "event", klog.KRef(ev.Namespace, ev.Name), "reason", ev.Reason)
	}
}

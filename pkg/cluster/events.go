package cluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// EventQueueSize is how many events wait for the API server before new ones are dropped
	// (upstream's event broadcaster's queue, maxQueuedEvents).
	EventQueueSize = 1000
	// eventTries is how often an event the API server could not be reached for is sent
	// (upstream's maxTriesPerEvent), eventRetryDelay the wait between tries (its
	// defaultSleepDuration; the first wait is a random part of it).
	eventTries      = 12
	eventRetryDelay = 10 * time.Second
)

// EventSink writes the kubelet's events to the API server, as upstream's event broadcaster
// does (client-go's record.eventBroadcasterImpl.recordToSink): every occurrence goes
// through client-go's EventCorrelator, the kubelet's own, which drops an object's events
// past a burst of 25 (one more every 5 minutes), turns an object's events of one reason
// into "(combined from similar events): ..." from the tenth message in 10 minutes on, and
// counts repeats; a new event is created in its object's namespace, a repeat patches count,
// last timestamp and message and is created if the API server no longer has it; an event
// the API server could not be reached for is tried up to 12 times, 10 s apart; one it
// rejected is not tried again. Queue never blocks the recorder; Run sends, in order.
type EventSink struct {
	client     kubernetes.Interface
	clock      clock.Clock
	correlator *record.EventCorrelator
	queue      chan *v1.Event // pointers: a queue of 1,000 v1.Event values is 600 KB per node
	dropped    atomic.Int64
	skipped    atomic.Int64
}

// NewEventSink returns a sink of client whose spam filter, aggregation and retries run on clk.
func NewEventSink(client kubernetes.Interface, clk clock.Clock) *EventSink {
	return &EventSink{
		client:     client,
		clock:      clk,
		correlator: record.NewEventCorrelator(clk),
		queue:      make(chan *v1.Event, EventQueueSize),
	}
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

// Skipped is the number of events the spam filter dropped.
func (s *EventSink) Skipped() int64 { return s.skipped.Load() }

// Run sends queued events until ctx ends. Run it in a goroutine of its own.
func (s *EventSink) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-s.queue:
			s.record(ctx, ev)
		}
	}
}

// record is upstream's recordToSink for one occurrence of an event.
func (s *EventSink) record(ctx context.Context, ev *v1.Event) {
	result, err := s.correlator.EventCorrelate(occurrence(ev))
	if err != nil {
		klog.FromContext(ctx).Error(err, "Event correlation failed")
	}
	if result.Skip {
		s.skipped.Add(1)
		return
	}
	for tries := 1; ; tries++ {
		if s.write(ctx, result.Event, result.Patch) {
			return
		}
		if tries >= eventTries {
			klog.FromContext(ctx).Error(nil, "Unable to write event (retry limit exceeded!)", "event", klog.KRef(ev.Namespace, ev.Name), "reason", ev.Reason)
			return
		}
		// The first wait is random so that nodes cut off together do not all come back at once.
		delay := eventRetryDelay
		if tries == 1 {
			delay = time.Duration(float64(delay) * rand.Float64())
		}
		t := s.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// occurrence is the one occurrence the store's event stands for: the store counts repeats
// itself, the correlator counts what it is given (and names a repeat as its first).
func occurrence(stored *v1.Event) *v1.Event {
	ev := *stored
	ev.Count = 1
	ev.FirstTimestamp = ev.LastTimestamp
	ev.ResourceVersion, ev.UID = "", ""
	return &ev
}

// write is upstream's recordEvent: true when the event is written or not to be tried again.
func (s *EventSink) write(ctx context.Context, ev *v1.Event, patch []byte) bool {
	events := s.client.CoreV1().Events(ev.Namespace)
	var written *v1.Event
	var err error
	if ev.Count > 1 {
		written, err = events.Patch(ctx, ev.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
	// A repeat the API server no longer has (its TTL ended) is created again.
	if ev.Count <= 1 || apierrors.IsNotFound(err) {
		fresh := *ev
		fresh.ResourceVersion = ""
		written, err = events.Create(ctx, &fresh, metav1.CreateOptions{})
	}
	if err == nil {
		// The correlator learns the server's name and resource version of the event.
		s.correlator.UpdateState(written)
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	logger := klog.FromContext(ctx)
	ref := klog.KRef(ev.Namespace, ev.Name)
	var construction *restclient.RequestConstructionError
	var status *apierrors.StatusError
	switch {
	case errors.As(err, &construction):
		logger.Error(err, "Unable to construct event (will not retry!)", "event", ref, "reason", ev.Reason)
		return true
	case errors.As(err, &status):
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			logger.V(5).Info("Server rejected event (will not retry!)", "event", ref, "reason", ev.Reason, "err", err)
		} else {
			logger.Error(err, "Server rejected event (will not retry!)", "event", ref, "reason", ev.Reason)
		}
		return true
	}
	// The API server could not be reached, or answered with something that is not a status.
	logger.Error(err, "Unable to write event (may retry after sleeping)", "event", ref, "reason", ev.Reason)
	return false
}

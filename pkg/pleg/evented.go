package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

// EventStreamer is the runtime's CRI container event stream.
type EventStreamer interface {
	// GetContainerEvents connects the stream; notify is called when events arrive or the
	// stream breaks (see cri.RuntimeService).
	GetContainerEvents(ctx context.Context, notify func()) (cri.ContainerEventStream, error)
}

// EventedConfig configures an EventedPLEG. Zero values take the kubelet's defaults.
type EventedConfig struct {
	// Generic is the PLEG asked to relist a pod whose container stopped; its clock and
	// metrics are shared. Required.
	Generic *GenericPLEG
	// Runtime provides the event stream. Required.
	Runtime EventStreamer
	// MaxRetries is how many failed streams are tolerated before the watcher gives up;
	// eventedPlegMaxStreamRetries (5) by default.
	MaxRetries int
}

// EventedPLEG is v1.37's EventedPLEG (kubernetes#139262): only a CRI event watcher. On a
// CONTAINER_STOPPED event it asks the generic PLEG to relist the pod at once, the fast path
// for container exits; the generic PLEG stays the only writer of the cache and the only
// source of pod lifecycle events, relisting every second as without the gate. After
// MaxRetries failed streams it gives up for good and the exits are found by the relist. It
// has no health check and changes nothing of the generic PLEG.
//
// It is a loop of the node's loop table: Step connects the stream (as a task, since a
// connection can be held up by the runtime), handles every event that has arrived and
// reconnects after a broken stream.
type EventedPLEG struct {
	generic    *GenericPLEG
	runtime    EventStreamer
	metrics    *plegMetrics
	maxRetries int
	wake       *runner.Signal

	// The state below is the node's owner's, its one caller; watching is published for tests
	// and tools that look in, arrived is set by the stream's callback wherever the runtime
	// calls it from.
	watching atomic.Bool
	attempts int
	lastErr  error
	events   eventStream
}

// NewEventedPLEG validates cfg, fills its defaults and returns a stopped EventedPLEG.
func NewEventedPLEG(cfg EventedConfig) (*EventedPLEG, error) {
	if cfg.Generic == nil {
		return nil, errors.New("evented pleg config: generic PLEG is required")
	}
	if cfg.Runtime == nil {
		return nil, errors.New("evented pleg config: runtime is required")
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxStreamRetries
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("evented pleg config: maxRetries must be positive, got %d", cfg.MaxRetries)
	}
	e := &EventedPLEG{
		generic:    cfg.Generic,
		runtime:    cfg.Runtime,
		metrics:    cfg.Generic.metrics,
		maxRetries: cfg.MaxRetries,
		wake:       runner.NewSignal(),
	}
	e.events = eventStream{runtime: cfg.Runtime, wake: e.wake, wanted: e.watching.Load,
		handle: e.HandleEvent, failed: e.streamFailed, connected: e.metrics.conn.Inc}
	return e, nil
}

// Watching reports whether the watcher is on: started and not given up.
func (e *EventedPLEG) Watching() bool { return e.watching.Load() }

// ActiveType is TypeEvented while the container-exit fast path is on, else TypeGeneric
// (pleg_active: the relist alone finds exits).
func (e *EventedPLEG) ActiveType() string { return e.metrics.activeType() }

// Activate starts watching (upstream's Start, once); the loop then connects the stream. It
// reports false when it was already started. The kubelet calls it at start.
func (e *EventedPLEG) Activate(ctx context.Context) bool {
	if e.watching.Load() || e.attempts >= e.maxRetries {
		return false
	}
	e.watching.Store(true)
	e.metrics.switchTo(klog.FromContext(ctx), TypeEvented, "EventedPLEG started")
	e.wake.Notify()
	return true
}

// Due is now when there is work: connecting, handling events that arrived or a broken
// stream, going on with a connection attempt that got its answer; zero otherwise (waiting
// for events, or given up).
func (e *EventedPLEG) Due(now time.Time) time.Time {
	if !e.watching.Load() {
		return time.Time{}
	}
	if e.events.due() {
		return now
	}
	return time.Time{}
}

// Wake is notified when events arrive, the stream breaks or a connection attempt ends.
func (e *EventedPLEG) Wake() *runner.Signal { return e.wake }

// Step does what is due: a connection attempt (or its resumption), and every event that has
// arrived (or the broken stream's error).
func (e *EventedPLEG) Step(ctx context.Context) {
	if !e.watching.Load() {
		return
	}
	e.events.step(ctx)
}

// streamFailed counts one failed or ended stream; after MaxRetries it gives up with
// upstream's error log, and the next Step does nothing. Unlike v1.30 it forces no relist:
// the generic PLEG relists every second regardless.
func (e *EventedPLEG) streamFailed(ctx context.Context, err error) {
	logger := klog.FromContext(ctx)
	e.metrics.connErr.Inc()
	e.attempts++
	e.lastErr = err
	logger.V(4).Info("Evented PLEG: failed to get container events, retrying", "err", err)
	if e.attempts < e.maxRetries {
		return
	}
	logger.Error(e.lastErr, "Evented PLEG: disabling container-termination fast path after exhausting event stream retries", "retries", e.attempts)
	e.disable(ctx, "event stream retries exhausted")
}

func (e *EventedPLEG) disable(ctx context.Context, reason string) {
	if !e.watching.Load() {
		return
	}
	e.watching.Store(false)
	e.events.closeStream()
	e.metrics.switchTo(klog.FromContext(ctx), TypeGeneric, reason)
}

// Stop disconnects the stream and abandons a connection attempt (daemon shutdown).
// Idempotent.
func (e *EventedPLEG) Stop() {
	e.watching.Store(false)
	e.events.stop()
}

// HandleEvent handles one container event: its latency is observed, and a
// CONTAINER_STOPPED event asks the generic PLEG to relist the pod. Every other event is
// ignored: the relist finds starts, creations and removals.
func (e *EventedPLEG) HandleEvent(ctx context.Context, ev *cri.ContainerEventResponse) {
	logger := klog.FromContext(ctx)
	// A sandbox deleted before the runtime built the event leaves no pod to attach it to;
	// the sandbox's own event or a relist covers it.
	if ev == nil || ev.PodSandboxStatus == nil || ev.PodSandboxStatus.Metadata.UID == "" {
		logger.Error(nil, "Evented PLEG: received ContainerEventResponse with nil PodSandboxStatus or PodSandboxStatus.Metadata", "containerEventResponse", ev)
		return
	}
	e.metrics.connLatency.Observe(e.generic.clock.Since(time.Unix(0, ev.CreatedAt)).Seconds())
	if ev.ContainerEventType != cri.ContainerStoppedEvent {
		return
	}
	pid := types.UID(ev.PodSandboxStatus.Metadata.UID)
	e.generic.RequestRelist(ctx, pid)
	if v := logger.V(4); v.Enabled() {
		v.Info("Evented PLEG: requested pod relist after container termination", "podUID", pid, "containerID", ev.ContainerID, "eventType", ev.ContainerEventType)
	}
}

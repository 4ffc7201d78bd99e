package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
)

// EventStreamer is the runtime's CRI container event stream.
type EventStreamer interface {
	// GetContainerEvents streams events into ch until ctx ends or the stream breaks and
	// returns why it ended.
	GetContainerEvents(ctx context.Context, ch chan<- *cri.ContainerEventResponse) error
}

// errStreamClosed stands for a stream that ended without an error: for the kubelet's CRI
// client that is an EOF, which counts as a failure like any other.
var errStreamClosed = errors.New("container event stream closed")

// EventedConfig configures an EventedPLEG. Zero values take the kubelet's defaults.
type EventedConfig struct {
	// Generic is the relisting PLEG the evented one slows down, forces relists on and falls
	// back to. Its channel, cache, clock and metrics are shared. Required.
	Generic *GenericPLEG
	// Runtime provides the event stream. Required.
	Runtime EventStreamer
	// MaxRetries is how many failed streams are tolerated before falling back; 5 by default.
	MaxRetries int
	// GlobalCacheUpdatePeriod is how often the cache's global time is bumped; 5s by default.
	GlobalCacheUpdatePeriod time.Duration
	// EventedRelistPeriod and EventedRelistThreshold are the generic PLEG's cadence while
	// the stream is in charge: 300s and 10m by default.
	EventedRelistPeriod    time.Duration
	EventedRelistThreshold time.Duration
	// GenericRelistPeriod and GenericRelistThreshold are restored on fallback: 1s and 3m.
	GenericRelistPeriod    time.Duration
	GenericRelistThreshold time.Duration
}

// EventedPLEG turns the runtime's container events into pod lifecycle events, with the
// generic PLEG relisting slowly as a safety net. After MaxRetries failed streams it stops
// and hands over to the generic PLEG at its normal cadence.
type EventedPLEG struct {
	generic         *GenericPLEG
	runtime         EventStreamer
	cache           container.Cache
	clock           clock.Clock
	eventCh         chan *PodLifecycleEvent
	metrics         *plegMetrics
	maxRetries      int
	globalPeriod    time.Duration
	eventedDuration RelistDuration
	genericDuration RelistDuration

	// connected says the current stream connection has been counted as established.
	connected atomic.Bool

	// mu guards the state below; it is never held while calling the generic PLEG.
	mu       sync.Mutex
	inUse    bool
	attempts int
	cancel   context.CancelFunc // ends the current loops without waiting

	// runMu serializes Start and Stop; group is the current loops.
	runMu sync.Mutex
	group *runner.Group
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
	if cfg.GlobalCacheUpdatePeriod == 0 {
		cfg.GlobalCacheUpdatePeriod = DefaultGlobalCacheUpdatePeriod
	}
	if cfg.GlobalCacheUpdatePeriod < 0 {
		return nil, fmt.Errorf("evented pleg config: globalCacheUpdatePeriod must be positive, got %v", cfg.GlobalCacheUpdatePeriod)
	}
	evented := RelistDuration{orDefault(cfg.EventedRelistPeriod, DefaultEventedRelistPeriod), orDefault(cfg.EventedRelistThreshold, DefaultEventedRelistThreshold)}
	generic := RelistDuration{orDefault(cfg.GenericRelistPeriod, DefaultRelistPeriod), orDefault(cfg.GenericRelistThreshold, DefaultRelistThreshold)}
	if err := validateDuration(evented); err != nil {
		return nil, fmt.Errorf("evented pleg config: evented %w", err)
	}
	if err := validateDuration(generic); err != nil {
		return nil, fmt.Errorf("evented pleg config: generic %w", err)
	}
	g := cfg.Generic
	return &EventedPLEG{
		generic:         g,
		runtime:         cfg.Runtime,
		cache:           g.cache,
		clock:           g.clock,
		eventCh:         g.eventCh,
		metrics:         g.metrics,
		maxRetries:      cfg.MaxRetries,
		globalPeriod:    cfg.GlobalCacheUpdatePeriod,
		eventedDuration: evented,
		genericDuration: generic,
	}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Name is the health check's name, as the kubelet registers it.
func (e *EventedPLEG) Name() string { return "EventedPLEG" }

// Watch returns the event channel, the same as the generic PLEG's.
func (e *EventedPLEG) Watch() chan *PodLifecycleEvent { return e.eventCh }

// Relist relists with the generic PLEG.
func (e *EventedPLEG) Relist(ctx context.Context) { e.generic.Relist(ctx) }

// Update changes the generic PLEG's cadence.
func (e *EventedPLEG) Update(d RelistDuration) { e.generic.Update(d) }

// InUse reports whether the event stream is in charge.
func (e *EventedPLEG) InUse() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.inUse
}

// ActiveType is TypeEvented while the event stream is in charge, else TypeGeneric.
func (e *EventedPLEG) ActiveType() string { return e.metrics.activeType() }

// Healthy is upstream's check: unhealthy only when the event channel is full; otherwise it
// sets pleg_last_seen_seconds to now. (Upstream quirk kept on purpose: with the gate on,
// this check keeps pleg_last_seen_seconds fresh even if relisting has stalled.)
func (e *EventedPLEG) Healthy() (bool, error) {
	if n := len(e.eventCh); n == cap(e.eventCh) {
		return false, fmt.Errorf("EventedPLEG: pleg event channel capacity is full with %v events", n)
	}
	e.metrics.lastSeen.Set(float64(e.clock.Now().Unix()))
	return true, nil
}

// Activate puts the event stream in charge: the generic PLEG slows to the evented cadence
// and the switch is logged and exported. It is the state change of Start, without loops, for
// simulate mode. It reports false when the stream was already in charge.
func (e *EventedPLEG) Activate(ctx context.Context) bool {
	e.mu.Lock()
	if e.inUse {
		e.mu.Unlock()
		return false
	}
	e.inUse = true
	e.attempts = 0
	e.mu.Unlock()
	e.generic.eventedInUse.Store(true)
	e.generic.Update(e.eventedDuration)
	e.metrics.switchTo(klog.FromContext(ctx), TypeEvented, "EventedPLEG started")
	return true
}

// Start activates the stream and runs its loops until ctx ends, Stop, or the fallback: one
// reading the stream and reconnecting, one handling the events, one bumping the cache's
// global time. A Start while running does nothing; a Start after a fallback tries again.
func (e *EventedPLEG) Start(ctx context.Context) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	if e.group != nil {
		if e.InUse() {
			return
		}
		e.group.Stop() // the loops a fallback ended; reap them
		e.group = nil
	}
	e.Activate(ctx)
	loopCtx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.cancel = cancel
	e.mu.Unlock()
	e.group = runner.NewGroup(loopCtx)
	ch := make(chan *cri.ContainerEventResponse, cap(e.eventCh))
	e.group.Go("evented-pleg-stream", func(ctx context.Context) { e.watchStream(ctx, ch) })
	e.group.Go("evented-pleg-events", func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-ch:
				if e.connected.CompareAndSwap(false, true) {
					e.ConnectionEstablished()
				}
				e.HandleEvent(ctx, ev)
			}
		}
	})
	e.group.Go("evented-pleg-global-cache", func(ctx context.Context) {
		runner.Every(ctx, e.clock, runner.Fixed(e.globalPeriod), func(context.Context) { e.UpdateGlobalCache() })
	})
}

// Stop ends the loops and waits for them; the stream is then no longer in use. It leaves
// the generic PLEG's cadence alone, as upstream. Idempotent.
func (e *EventedPLEG) Stop() {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	if e.group != nil {
		e.group.Stop()
		e.group = nil
	}
	e.mu.Lock()
	e.inUse = false
	e.cancel = nil
	e.mu.Unlock()
	e.generic.eventedInUse.Store(false)
}

// watchStream (re)connects to the event stream until ctx ends or the fallback.
func (e *EventedPLEG) watchStream(ctx context.Context, ch chan<- *cri.ContainerEventResponse) {
	for ctx.Err() == nil {
		e.connected.Store(false)
		err := e.runtime.GetContainerEvents(ctx, ch)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errStreamClosed
		}
		if e.HandleStreamError(ctx, err) {
			return
		}
	}
}

// ConnectionEstablished counts a stream connection in evented_pleg_connection_success_count.
// The runner calls it when a connection delivers its first event (the CRI interface has no
// connect callback); simulate mode calls it when it opens a stream.
func (e *EventedPLEG) ConnectionEstablished() { e.metrics.conn.Inc() }

// HandleStreamError handles one failed or ended stream: it counts the error, forces a
// relist so no change is missed, and after MaxRetries failures falls back to the generic
// PLEG. It reports whether it fell back (the caller must then stop reconnecting).
func (e *EventedPLEG) HandleStreamError(ctx context.Context, err error) bool {
	logger := klog.FromContext(ctx)
	e.metrics.connErr.Inc()
	e.mu.Lock()
	e.attempts++
	attempts, inUse := e.attempts, e.inUse
	e.mu.Unlock()
	e.generic.Relist(ctx) // the latest container states, since events may have been lost
	if v := logger.V(4); v.Enabled() {
		v.Info("Evented PLEG: Failed to get container events, retrying", "err", err, "attempt", attempts, "maxRetries", e.maxRetries)
	}
	if attempts < e.maxRetries || !inUse {
		return false
	}
	e.fallback(ctx)
	return true
}

// fallback stops the evented loops (without waiting: it runs on one of them) and restores
// the generic PLEG's normal cadence at once.
func (e *EventedPLEG) fallback(ctx context.Context) {
	e.mu.Lock()
	inUse, cancel := e.inUse, e.cancel
	e.mu.Unlock()
	if !inUse {
		return
	}
	if cancel != nil {
		cancel()
	}
	// The generic PLEG is in charge at its normal cadence before InUse reports false, so
	// whoever sees the switch sees all of it. Repeating these steps is harmless.
	e.generic.eventedInUse.Store(false)
	e.generic.Update(e.genericDuration)
	e.metrics.switchTo(klog.FromContext(ctx), TypeGeneric, "Fall back to Generic PLEG relisting since Evented PLEG is not working")
	e.mu.Lock()
	e.inUse = false
	e.mu.Unlock()
	e.generic.restartIfRunning()
}

// UpdateGlobalCache bumps the cache's global time to now, so pod workers waiting for newer
// data cannot stay stuck if an event was lost. The runner calls it every
// GlobalCacheUpdatePeriod.
func (e *EventedPLEG) UpdateGlobalCache() { e.cache.UpdateTime(e.clock.Now()) }

// HandleEvent turns one container event into a cache update and pod lifecycle events.
func (e *EventedPLEG) HandleEvent(ctx context.Context, ev *cri.ContainerEventResponse) {
	logger := klog.FromContext(ctx)
	// A sandbox deleted before the runtime built the event leaves no pod to attach it to;
	// the sandbox's own event or a relist covers it.
	if ev == nil || ev.PodSandboxStatus == nil || ev.PodSandboxStatus.Metadata.UID == "" {
		logger.Error(nil, "Evented PLEG: received ContainerEventResponse with nil PodSandboxStatus or PodSandboxStatus.Metadata", "containerEventResponse", ev)
		return
	}
	pid := types.UID(ev.PodSandboxStatus.Metadata.UID)
	eventTime := time.Unix(0, ev.CreatedAt)
	status := podStatusFromEvent(ev, eventTime)
	if v := logger.V(4); v.Enabled() {
		v.Info("Evented PLEG: Generated pod status from the received event", "podUID", pid)
	}
	status.IPs = podIPs(e.cache, pid, status)
	e.metrics.connLatency.Observe(e.clock.Since(eventTime).Seconds())

	send := false
	if ev.ContainerEventType == cri.ContainerDeletedEvent {
		for _, s := range status.SandboxStatuses {
			if s.ID == ev.ContainerID {
				// The runtime removed the sandbox: the kubelet forgets the pod too.
				e.cache.Delete(pid)
			}
		}
		send = true
	} else {
		send = e.cache.Set(pid, status, nil, eventTime)
	}
	if !send {
		return
	}
	var msg string
	switch ev.ContainerEventType {
	case cri.ContainerStoppedEvent:
		e.send(logger, &PodLifecycleEvent{ID: pid, Type: ContainerDied, Data: ev.ContainerID})
		msg = "Received Container Stopped Event"
	case cri.ContainerCreatedEvent:
		// Only the status changes; the generic PLEG ignores creation too.
		msg = "Received Container Created Event"
	case cri.ContainerStartedEvent:
		e.send(logger, &PodLifecycleEvent{ID: pid, Type: ContainerStarted, Data: ev.ContainerID})
		msg = "Received Container Started Event"
	case cri.ContainerDeletedEvent:
		// Died then Removed, like the generic PLEG for a container that vanished.
		e.send(logger, &PodLifecycleEvent{ID: pid, Type: ContainerDied, Data: ev.ContainerID})
		e.send(logger, &PodLifecycleEvent{ID: pid, Type: ContainerRemoved, Data: ev.ContainerID})
		msg = "Received Container Deleted Event"
	}
	if v := logger.V(4); v.Enabled() && msg != "" {
		v.Info(msg, "podUID", pid, "containerID", ev.ContainerID, "eventType", ev.ContainerEventType)
	}
}

func (e *EventedPLEG) send(logger klog.Logger, ev *PodLifecycleEvent) {
	select {
	case e.eventCh <- ev:
	default:
		e.metrics.discardEvents.Inc()
		logger.Error(nil, "Evented PLEG: Event channel is full, discarded pod lifecycle event")
	}
}

// podStatusFromEvent builds the pod status an event carries (the kubelet's
// GeneratePodStatus): the sandbox and the containers, newest first, ordered as a status
// read from the runtime is.
func podStatusFromEvent(ev *cri.ContainerEventResponse, at time.Time) *container.PodStatus {
	sb := ev.PodSandboxStatus
	st := &container.PodStatus{
		ID:              types.UID(sb.Metadata.UID),
		Name:            sb.Metadata.Name,
		Namespace:       sb.Metadata.Namespace,
		SandboxStatuses: []*cri.PodSandboxStatus{sb},
		TimeStamp:       at,
	}
	if sb.IP != "" {
		st.IPs = []string{sb.IP}
	}
	statuses := make([]container.ContainerStatus, 0, len(ev.ContainersStatuses))
	for _, c := range ev.ContainersStatuses {
		if c != nil {
			statuses = append(statuses, view.ContainerStatusFromCRI(c))
		}
	}
	st.ContainerStatuses = view.NewestFirst(statuses)
	return st
}

package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
)

// LegacyEventedConfig configures a LegacyEventedPLEG. Zero values take the kubelet's defaults.
type LegacyEventedConfig struct {
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
	// AdjustRunningContainers adds deltas (by container state) to running_containers as
	// events arrive, as upstream's updateRunningContainerMetric. Optional.
	AdjustRunningContainers func(deltas map[container.State]int)
}

// LegacyEventedPLEG is v1.30-v1.36's EventedPLEG, kept for an emulated older kubelet (the
// kubelet selects it with its LegacyEventedPLEG option; v1.37's is EventedPLEG). It turns the
// runtime's container events into pod lifecycle events, with the
// generic PLEG relisting slowly as a safety net. After MaxRetries failed streams it stops
// and hands over to the generic PLEG at its normal cadence.
//
// It is a loop of the node's loop table: Step connects the stream (as a task, since a
// connection can be held up by the runtime), handles every event that has arrived, reconnects
// after a broken stream, and bumps the cache's global time every GlobalCacheUpdatePeriod.
type LegacyEventedPLEG struct {
	adjustRunning   func(map[container.State]int)
	generic         *GenericPLEG
	runtime         EventStreamer
	cache           container.Cache
	clock           clock.PassiveClock
	eventCh         chan *PodLifecycleEvent
	metrics         *plegMetrics
	maxRetries      int
	globalPeriod    time.Duration
	eventedDuration RelistDuration
	genericDuration RelistDuration
	wake            *runner.Signal

	// The state below is the node's owner's, its one caller. inUse is published for tests
	// and tools that look in.
	inUse    atomic.Bool
	attempts int
	events   eventStream
	nextBump time.Time // when the global cache time is bumped next
}

// NewLegacyEventedPLEG validates cfg, fills its defaults and returns a stopped EventedPLEG.
func NewLegacyEventedPLEG(cfg LegacyEventedConfig) (*LegacyEventedPLEG, error) {
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
	e := &LegacyEventedPLEG{
		generic:         g,
		runtime:         cfg.Runtime,
		cache:           g.cache,
		clock:           g.clock,
		eventCh:         g.eventCh,
		metrics:         g.metrics,
		maxRetries:      cfg.MaxRetries,
		adjustRunning:   cfg.AdjustRunningContainers,
		globalPeriod:    cfg.GlobalCacheUpdatePeriod,
		eventedDuration: evented,
		genericDuration: generic,
		wake:            runner.NewSignal(),
	}
	e.events = eventStream{runtime: cfg.Runtime, wake: e.wake, wanted: e.inUse.Load,
		handle: e.HandleEvent, connected: e.ConnectionEstablished,
		failed: func(ctx context.Context, err error) { e.HandleStreamError(ctx, err) }}
	return e, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Name is the health check's name, as the kubelet registers it.
func (e *LegacyEventedPLEG) Name() string { return "EventedPLEG" }

// Watch returns the event channel, the same as the generic PLEG's.
func (e *LegacyEventedPLEG) Watch() chan *PodLifecycleEvent { return e.eventCh }

// Update changes the generic PLEG's cadence.
func (e *LegacyEventedPLEG) Update(d RelistDuration) { e.generic.Update(d) }

// InUse reports whether the event stream is in charge.
func (e *LegacyEventedPLEG) InUse() bool {
	return e.inUse.Load()
}

// ActiveType is TypeEvented while the event stream is in charge, else TypeGeneric.
func (e *LegacyEventedPLEG) ActiveType() string { return e.metrics.activeType() }

// Healthy is upstream's check: unhealthy only when the event channel is full; otherwise it
// sets pleg_last_seen_seconds to now. (Upstream quirk kept on purpose: with the gate on,
// this check keeps pleg_last_seen_seconds fresh even if relisting has stalled.)
func (e *LegacyEventedPLEG) Healthy() (bool, error) {
	if n := len(e.eventCh); n == cap(e.eventCh) {
		return false, fmt.Errorf("EventedPLEG: pleg event channel capacity is full with %v events", n)
	}
	e.metrics.lastSeen.Set(float64(e.clock.Now().Unix()))
	return true, nil
}

// Activate puts the event stream in charge: the generic PLEG slows to the evented cadence
// and the switch is logged and exported; the loop then connects the stream. It reports false
// when the stream was already in charge. The kubelet calls it at start (upstream's Start).
func (e *LegacyEventedPLEG) Activate(ctx context.Context) bool {
	if e.inUse.Load() {
		return false
	}
	e.inUse.Store(true)
	e.attempts = 0
	e.nextBump = e.clock.Now().Add(e.globalPeriod)
	e.generic.eventedInUse.Store(true)
	e.generic.Update(e.eventedDuration)
	e.metrics.switchTo(klog.FromContext(ctx), TypeEvented, "EventedPLEG started")
	e.wake.Notify()
	return true
}

// Due is when the evented loop next has work: now to connect, to reconnect, to handle events
// that arrived or to go on with a connection attempt that got its answer; else the next
// global cache bump; zero once it fell back (or before Activate).
func (e *LegacyEventedPLEG) Due(now time.Time) time.Time {
	if !e.inUse.Load() {
		return time.Time{}
	}
	if e.events.due() {
		return now
	}
	return e.nextBump
}

// Wake is notified when events arrive, the stream breaks or a connection attempt ends.
func (e *LegacyEventedPLEG) Wake() *runner.Signal { return e.wake }

// Step does what is due: the global cache bump, a connection attempt (or its resumption),
// and every event that has arrived (or the broken stream's error).
func (e *LegacyEventedPLEG) Step(ctx context.Context) {
	now := e.clock.Now()
	if !e.inUse.Load() {
		return
	}
	if !now.Before(e.nextBump) {
		e.nextBump = now.Add(e.globalPeriod)
		e.UpdateGlobalCache()
	}
	e.events.step(ctx)
}

// Stop disconnects the stream and abandons a connection attempt; the stream is then no
// longer in use. It leaves the generic PLEG's cadence alone, as upstream. Idempotent.
func (e *LegacyEventedPLEG) Stop() {
	e.inUse.Store(false)
	e.events.stop()
	e.generic.eventedInUse.Store(false)
}

// ConnectionEstablished counts a stream connection in evented_pleg_connection_success_count.
func (e *LegacyEventedPLEG) ConnectionEstablished() { e.metrics.conn.Inc() }

// HandleStreamError handles one failed or ended stream: it counts the error, forces a
// relist so no change is missed, and after MaxRetries failures falls back to the generic
// PLEG. It reports whether it fell back (the caller must then stop reconnecting).
func (e *LegacyEventedPLEG) HandleStreamError(ctx context.Context, err error) bool {
	logger := klog.FromContext(ctx)
	e.metrics.connErr.Inc()
	e.attempts++
	attempts, inUse := e.attempts, e.inUse.Load()
	e.generic.Restart() // relist at once: events may have been lost
	if v := logger.V(4); v.Enabled() {
		// upstream's message, trailing ": " included
		v.Info("Evented PLEG: Failed to get container events, retrying: ", "err", err, "attempt", attempts, "maxRetries", e.maxRetries)
	}
	if attempts < e.maxRetries || !inUse {
		return false
	}
	e.fallback(ctx)
	return true
}

// fallback stops using the stream and restores the generic PLEG's normal cadence at once,
// as upstream's Stop, Update and Start of the generic PLEG.
func (e *LegacyEventedPLEG) fallback(ctx context.Context) {
	if !e.inUse.Load() {
		return
	}
	e.inUse.Store(false)
	e.events.closeStream()
	klog.FromContext(ctx).V(4).Info("Fall back to Generic PLEG relisting since Evented PLEG is not working")
	// The generic PLEG is in charge at its normal cadence before InUse reports false to
	// anyone, so whoever sees the switch sees all of it.
	e.generic.eventedInUse.Store(false)
	e.generic.Update(e.genericDuration)
	e.generic.Restart()
	e.metrics.switchTo(klog.FromContext(ctx), TypeGeneric, "Fall back to Generic PLEG relisting since Evented PLEG is not working")
}

// UpdateGlobalCache bumps the cache's global time to now, so pod workers waiting for newer
// data cannot stay stuck if an event was lost. Step calls it every GlobalCacheUpdatePeriod.
func (e *LegacyEventedPLEG) UpdateGlobalCache() { e.cache.UpdateTime(e.clock.Now()) }

// HandleEvent turns one container event into a cache update and pod lifecycle events.
func (e *LegacyEventedPLEG) HandleEvent(ctx context.Context, ev *cri.ContainerEventResponse) {
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
	e.updateRunningContainers(status)
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

// updateRunningContainers moves running_containers by the difference between the cached
// status's container states and the event's, as upstream does for every event (all of the
// event's containers on a cache miss). running_pods is left to the relist: upstream's
// evented update looks for the sandbox among the containers, never finds it running, and
// so never moves the gauge.
func (e *LegacyEventedPLEG) updateRunningContainers(status *container.PodStatus) {
	if e.adjustRunning == nil {
		return
	}
	deltas := map[container.State]int{}
	for _, c := range status.ContainerStatuses {
		deltas[c.State]++
	}
	if cached, _ := e.cache.Get(status.ID); cached != nil && len(cached.SandboxStatuses) > 0 {
		for _, c := range cached.ContainerStatuses {
			deltas[c.State]--
		}
	}
	e.adjustRunning(deltas)
}

func (e *LegacyEventedPLEG) send(logger klog.Logger, ev *PodLifecycleEvent) {
	select {
	case e.eventCh <- ev:
		e.generic.sent()
	default:
		e.metrics.discard()
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

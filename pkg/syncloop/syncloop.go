package syncloop

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/pleg"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

// Defaults and constants, as upstream's kubelet.go.
const (
	// DefaultSyncPeriod is the sync ticker: how often pods whose worker is due are synced.
	DefaultSyncPeriod = time.Second
	// DefaultHousekeepingPeriod is the housekeeping ticker.
	DefaultHousekeepingPeriod = 2 * time.Second
	// DefaultResyncInterval is the kubelet's syncFrequency; the health check allows twice it.
	DefaultResyncInterval = time.Minute
	// HousekeepingWarningDuration: a longer housekeeping is logged as an error.
	HousekeepingWarningDuration = time.Second
	// Back-off while the runtime reports errors: 100ms doubling up to 5s, reset on success.
	BackoffBase   = 100 * time.Millisecond
	BackoffMax    = 5 * time.Second
	backoffFactor = 2
	// minHealthWindow is the floor of the health check's staleness window.
	minHealthWindow = 5 * time.Minute
)

// ErrSyncLoopStalled is the syncloop health check's error (upstream's exact text).
var ErrSyncLoopStalled = errors.New("sync Loop took longer than expected")

// Handler receives the work the loop dispatches: upstream's SyncHandler, implemented by the
// piece that wires the kubelet together. The loop calls it from one goroutine at a time.
type Handler interface {
	// HandlePodAdditions gets new pods (config ADD); it admits and starts them.
	HandlePodAdditions(pods []*v1.Pod)
	// HandlePodUpdates gets changed pods (config UPDATE and DELETE).
	HandlePodUpdates(pods []*v1.Pod)
	// HandlePodRemoves gets pods their source no longer has (config REMOVE).
	HandlePodRemoves(pods []*v1.Pod)
	// HandlePodReconcile gets pods whose status alone changed (config RECONCILE).
	HandlePodReconcile(pods []*v1.Pod)
	// HandlePodSyncs gets pods to sync now (a PLEG event, or due workers on the sync tick).
	HandlePodSyncs(pods []*v1.Pod)
	// HandlePodCleanups is housekeeping: kill what no source wants, drop finished workers.
	HandlePodCleanups(ctx context.Context) error
}

// Config configures a SyncLoop. Only ConfigCh and Handler are required.
type Config struct {
	// Clock times the ticks and the back-off and stamps the monitor. Default: real clock.
	Clock clock.PassiveClock
	// ConfigCh carries the merged pod updates; its closing ends the loop.
	ConfigCh <-chan kubetypes.PodUpdate
	// PLEGCh carries pod lifecycle events. Nil: no PLEG.
	PLEGCh <-chan *pleg.PodLifecycleEvent
	// SyncPeriod of the sync ticker. Default DefaultSyncPeriod.
	SyncPeriod time.Duration
	// HousekeepingPeriod of the housekeeping ticker. Default DefaultHousekeepingPeriod.
	HousekeepingPeriod time.Duration
	// ResyncInterval is the kubelet's syncFrequency; SyncLoopHealthy fails when the loop has
	// not been entered for max(2 x ResyncInterval, 5m). Default DefaultResyncInterval.
	ResyncInterval time.Duration
	// RuntimeErrors gates each iteration: while it returns an error the loop backs off.
	// Nil: the runtime is always fine.
	RuntimeErrors func() error
	// GetPodsToSync returns the pods whose worker is due, on every sync tick. Nil: none.
	GetPodsToSync func() []*v1.Pod
	// GetPodByUID finds the pod a PLEG event is about (the pod manager). Required with PLEGCh.
	GetPodByUID func(uid types.UID) (*v1.Pod, bool)
	// CleanUpContainersInPod is called on every ContainerDied event. Optional.
	CleanUpContainersInPod func(podUID types.UID, containerID string)
	// SourcesReady says whether housekeeping may run, given the sources the loop has seen an
	// update from (Merger.SeenAllSources fits). Nil: always ready.
	SourcesReady func(seen sets.Set[string]) bool
	// Handler receives the dispatched work. Required.
	Handler Handler
	// Liveness, Readiness and Startup are the prober's results (optional): their changes are
	// inputs of the loop, after the sync tick and before housekeeping, as upstream's select
	// lists them. Each change syncs its pod (a liveness failure: the container is killed).
	Liveness, Readiness, Startup *results.Manager
	// Registry receives sync_loop_iterations_total{kind} and housekeeping_duration_seconds. Optional.
	Registry *metrics.Registry
}

// SyncLoop is the kubelet's syncLoop as a loop of the node's loop table: Due says when the
// next iteration has work (an update or PLEG event waiting, the sync or housekeeping tick, the
// end of a runtime back-off), and Step is one syncLoopIteration: it checks the runtime
// (backing off while it reports errors) and handles one ready input. Producers of updates and
// events notify Wake. It is not safe for concurrent use: its node's owner is its one caller,
// except SyncLoopHealthy and LatestLoopEntryTime, which /healthz reads from the time the
// loop publishes at each entry.
type SyncLoop struct {
	cfg    Config
	plegCh <-chan *pleg.PodLifecycleEvent // nil once closed, so a closed channel cannot spin the loop
	wake   *runner.Signal

	monitor atomic.Pointer[time.Time]

	started      bool
	stopped      bool
	nextSync     time.Time // the sync tick
	nextHK       time.Time // the housekeeping tick
	backoffUntil time.Time // no iteration before this while the runtime reports errors
	backoff      time.Duration
	sourcesSeen  sets.Set[string]
	iterations   *prometheus.CounterVec
	housekeeping prometheus.Histogram
}

// New validates cfg, fills its defaults and registers the loop's metrics. The tickers start
// at the first iteration, as upstream's start at syncLoop entry.
func New(cfg Config) (*SyncLoop, error) {
	if cfg.ConfigCh == nil {
		return nil, errors.New("invalid sync loop config: configCh is required")
	}
	if cfg.Handler == nil {
		return nil, errors.New("invalid sync loop config: handler is required")
	}
	if cfg.PLEGCh != nil && cfg.GetPodByUID == nil {
		return nil, errors.New("invalid sync loop config: getPodByUID is required with a PLEG channel")
	}
	if cfg.SyncPeriod < 0 || cfg.HousekeepingPeriod < 0 || cfg.ResyncInterval < 0 {
		return nil, fmt.Errorf("invalid sync loop config: periods must not be negative (syncPeriod %v, housekeepingPeriod %v, resyncInterval %v)",
			cfg.SyncPeriod, cfg.HousekeepingPeriod, cfg.ResyncInterval)
	}
	if cfg.Clock == nil {
		// No silent real clock: every loop must be able to run on a fake one.
		return nil, errors.New("sync loop: Config.Clock is required")
	}
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.HousekeepingPeriod == 0 {
		cfg.HousekeepingPeriod = DefaultHousekeepingPeriod
	}
	if cfg.ResyncInterval == 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	iterName, hkName := metrics.SyncLoopIterations, metrics.HousekeepingDuration
	if cfg.Registry != nil {
		iterName, hkName = cfg.Registry.Name(iterName), cfg.Registry.Name(hkName)
	}
	l := &SyncLoop{
		cfg:         cfg,
		plegCh:      cfg.PLEGCh,
		backoff:     BackoffBase,
		wake:        runner.NewSignal(),
		sourcesSeen: sets.New[string](),
		iterations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: iterName,
			Help: "Sync loop iterations that did work, by what woke the loop: config, pleg, sync, housekeeping.",
		}, []string{"kind"}),
		housekeeping: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    hkName,
			Help:    "Duration in seconds of the sync loop's housekeeping (HandlePodCleanups).",
			Buckets: prometheus.DefBuckets,
		}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(l.iterations, l.housekeeping)
	}
	return l, nil
}

// Wake is notified by whoever sends on the config or PLEG channel, so the daemon's loop
// goroutine looks at them.
func (l *SyncLoop) Wake() *runner.Signal { return l.wake }

// Due is when the loop next has work: at once before its first iteration and while an update
// or a PLEG event waits; else the next tick; after a failed runtime check, the back-off's end. Zero after
// Stop or once the config channel closed.
func (l *SyncLoop) Due(now time.Time) time.Time {
	switch {
	case l.stopped:
		return time.Time{}
	case !l.started:
		return now
	case l.backoff > BackoffBase || now.Before(l.backoffUntil):
		// The last runtime check failed: check again when the back-off ends, work or not,
		// as upstream's loop sleeps and checks again.
		if now.Before(l.backoffUntil) {
			return l.backoffUntil
		}
		return now
	case len(l.cfg.ConfigCh) > 0, l.plegCh != nil && len(l.plegCh) > 0, l.probesPending():
		return now
	}
	if l.nextHK.Before(l.nextSync) {
		return l.nextHK
	}
	return l.nextSync
}

// Step is one syncLoopIteration. The first starts the ticks (as upstream's tickers start at
// syncLoop entry) and logs the loop's start. Each checks the runtime first: while it
// reports errors the iteration is skipped and the next is due after the back-off. Otherwise
// it handles one ready input, checked in a fixed order (config, PLEG, sync tick,
// housekeeping tick) so runs replay identically; upstream's select picks at random.
func (l *SyncLoop) Step(ctx context.Context) {
	now := l.cfg.Clock.Now()
	if l.stopped {
		return
	}
	if !l.started {
		l.started = true
		l.nextSync = now.Add(l.cfg.SyncPeriod)
		l.nextHK = now.Add(l.cfg.HousekeepingPeriod)
		klog.FromContext(ctx).Info("Starting kubelet main sync loop")
	}
	if now.Before(l.backoffUntil) {
		return
	}
	if wait, ok := l.CheckRuntime(ctx); !ok {
		l.backoffUntil = now.Add(wait)
		return
	}
	l.iterate(ctx, now)
}

// CheckRuntime is the check before an iteration. When RuntimeErrors reports an error it logs
// "Skipping pod synchronization" and returns ok false with how long to wait before the next
// check (100ms, 200ms, ... capped at 5s); otherwise it resets the back-off and returns true.
func (l *SyncLoop) CheckRuntime(ctx context.Context) (wait time.Duration, ok bool) {
	var err error
	if l.cfg.RuntimeErrors != nil {
		err = l.cfg.RuntimeErrors()
	}
	if err == nil {
		l.backoff = BackoffBase
		return 0, true
	}
	klog.FromContext(ctx).Error(err, "Skipping pod synchronization")
	wait = l.backoff
	l.backoff = min(BackoffMax, backoffFactor*l.backoff)
	return wait, false
}

// iterate handles one ready input.
func (l *SyncLoop) iterate(ctx context.Context, now time.Time) {
	l.touch()
	cont := true
	select {
	case u, open := <-l.cfg.ConfigCh:
		cont = l.handleConfig(ctx, u, open)
	default:
		select {
		case e, open := <-l.plegCh:
			cont = l.handlePLEG(ctx, e, open)
		default:
			switch {
			case l.syncDue(now):
				l.dueTick(now)
				cont = l.handleSync(ctx)
			case l.handleProbe(ctx):
			default:
				switch l.dueTick(now) {
				case tickHousekeeping:
					cont = l.handleHousekeeping(ctx)
				case tickSync:
					cont = l.handleSync(ctx)
				default:
					return
				}
			}
		}
	}
	if !cont {
		l.Stop()
		return
	}
	l.touch()
}

type tick int

const (
	tickNone tick = iota
	tickSync
	tickHousekeeping
)

// dueTick consumes the tick due at now, sync before housekeeping. Like a time.Ticker's, the
// next tick stays on the period's grid and ticks missed meanwhile are dropped.
func (l *SyncLoop) dueTick(now time.Time) tick {
	switch {
	case !now.Before(l.nextSync):
		l.nextSync = nextOnGrid(l.nextSync, l.cfg.SyncPeriod, now)
		return tickSync
	case !now.Before(l.nextHK):
		l.nextHK = nextOnGrid(l.nextHK, l.cfg.HousekeepingPeriod, now)
		return tickHousekeeping
	}
	return tickNone
}

// syncDue reports whether the sync tick is due at now.
func (l *SyncLoop) syncDue(now time.Time) bool {
	return !now.Before(l.nextSync)
}

// probesPending reports whether a probe result change waits.
func (l *SyncLoop) probesPending() bool {
	for _, m := range []*results.Manager{l.cfg.Liveness, l.cfg.Readiness, l.cfg.Startup} {
		if m != nil && m.Len() > 0 {
			return true
		}
	}
	return false
}

// handleProbe handles one probe result change, liveness first, as upstream's select cases:
// a liveness failure, any readiness change and any startup change sync the pod. It reports
// whether there was one.
func (l *SyncLoop) handleProbe(ctx context.Context) bool {
	for _, p := range []struct {
		m    *results.Manager
		name string
	}{{l.cfg.Liveness, "liveness"}, {l.cfg.Readiness, "readiness"}, {l.cfg.Startup, "startup"}} {
		if p.m == nil {
			continue
		}
		u, ok := p.m.Pop()
		if !ok {
			continue
		}
		l.iterations.WithLabelValues("probe").Inc()
		var status string
		switch p.name {
		case "liveness":
			if u.Result != results.Failure {
				return true
			}
			status = "unhealthy"
		case "readiness":
			if u.Result == results.Success {
				status = "ready"
			}
		case "startup":
			status = "unhealthy"
			if u.Result == results.Success {
				status = "started"
			}
		}
		pod, ok := l.cfg.GetPodByUID(u.PodUID)
		if !ok {
			return true // the pod is gone
		}
		klog.FromContext(ctx).V(1).Info("SyncLoop (probe)", "probe", p.name, "status", status, "pod", klog.KObj(pod))
		l.cfg.Handler.HandlePodSyncs([]*v1.Pod{pod})
		return true
	}
	return false
}

// nextOnGrid is the first tick after now on the grid of period through last.
func nextOnGrid(last time.Time, period time.Duration, now time.Time) time.Time {
	n := now.Sub(last)/period + 1
	return last.Add(n * period)
}

func (l *SyncLoop) handleConfig(ctx context.Context, u kubetypes.PodUpdate, open bool) bool {
	logger := klog.FromContext(ctx)
	if !open {
		logger.Error(nil, "Update channel is closed, exiting the sync loop")
		return false
	}
	l.iterations.WithLabelValues("config").Inc()
	h := l.cfg.Handler
	switch u.Op {
	case kubetypes.ADD:
		logger.V(2).Info("SyncLoop ADD", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
		// After a restart every existing pod comes back as an ADD and is admitted again.
		h.HandlePodAdditions(u.Pods)
	case kubetypes.UPDATE:
		logger.V(2).Info("SyncLoop UPDATE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
		h.HandlePodUpdates(u.Pods)
	case kubetypes.REMOVE:
		logger.V(2).Info("SyncLoop REMOVE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
		h.HandlePodRemoves(u.Pods)
	case kubetypes.RECONCILE:
		logger.V(4).Info("SyncLoop RECONCILE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
		h.HandlePodReconcile(u.Pods)
	case kubetypes.DELETE:
		logger.V(2).Info("SyncLoop DELETE", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
		// DELETE is handled as an UPDATE: graceful deletion.
		h.HandlePodUpdates(u.Pods)
	case kubetypes.SET:
		logger.Error(nil, "Kubelet does not support snapshot update")
	default:
		logger.Error(nil, "Invalid operation type received", "operation", u.Op)
	}
	l.sourcesSeen.Insert(u.Source)
	return true
}

func (l *SyncLoop) handlePLEG(ctx context.Context, e *pleg.PodLifecycleEvent, open bool) bool {
	logger := klog.FromContext(ctx)
	if !open {
		// Upstream's PLEG channel never closes; if ours does, stop selecting on it.
		logger.Error(nil, "PLEG channel is closed, no more pod lifecycle events")
		l.plegCh = nil
		return true
	}
	if e == nil {
		return true
	}
	l.iterations.WithLabelValues("pleg").Inc()
	if e.Type != pleg.ContainerRemoved { // isSyncPodWorthy
		if pod, ok := l.cfg.GetPodByUID(e.ID); ok {
			logger.V(2).Info("SyncLoop (PLEG): event for pod", "pod", klog.KObj(pod), "event", e)
			l.cfg.Handler.HandlePodSyncs([]*v1.Pod{pod})
		} else {
			logger.V(4).Info("SyncLoop (PLEG): pod does not exist, ignore irrelevant event", "event", e)
		}
	}
	if e.Type == pleg.ContainerDied && l.cfg.CleanUpContainersInPod != nil {
		if containerID, ok := e.Data.(string); ok {
			l.cfg.CleanUpContainersInPod(e.ID, containerID)
		}
	}
	return true
}

func (l *SyncLoop) handleSync(ctx context.Context) bool {
	l.iterations.WithLabelValues("sync").Inc()
	if l.cfg.GetPodsToSync == nil {
		return true
	}
	pods := l.cfg.GetPodsToSync()
	if len(pods) == 0 {
		return true
	}
	klog.FromContext(ctx).V(4).Info("SyncLoop (SYNC) pods", "total", len(pods), "pods", klog.KObjSlice(pods))
	l.cfg.Handler.HandlePodSyncs(pods)
	return true
}

func (l *SyncLoop) handleHousekeeping(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	l.iterations.WithLabelValues("housekeeping").Inc()
	if !l.sourcesReady() {
		// Housekeeping could kill pods of a source that has not reported yet.
		logger.V(4).Info("SyncLoop (housekeeping, skipped): sources aren't ready yet")
		return true
	}
	start := l.cfg.Clock.Now()
	logger.V(4).Info("SyncLoop (housekeeping)")
	if err := l.cfg.Handler.HandlePodCleanups(ctx); err != nil && ctx.Err() == nil {
		logger.Error(err, "Failed cleaning pods")
	}
	d := l.cfg.Clock.Since(start)
	l.housekeeping.Observe(d.Seconds())
	if d > HousekeepingWarningDuration {
		logger.Error(errors.New("housekeeping took too long"), "Housekeeping took longer than expected",
			"expected", HousekeepingWarningDuration, "actual", d.Round(time.Millisecond))
	}
	logger.V(4).Info("SyncLoop (housekeeping) end", "duration", d.Round(time.Millisecond))
	return true
}

func (l *SyncLoop) sourcesReady() bool {
	if l.cfg.SourcesReady == nil {
		return true
	}
	return l.cfg.SourcesReady(l.SourcesSeen())
}

// SourcesSeen returns a copy of the sources the loop has had a config update from.
func (l *SyncLoop) SourcesSeen() sets.Set[string] {
	return l.sourcesSeen.Clone()
}

// Stop ends the loop: Due turns zero and Step does nothing. Safe to call twice.
func (l *SyncLoop) Stop() {
	l.stopped = true
}

func (l *SyncLoop) touch() {
	now := l.cfg.Clock.Now()
	l.monitor.Store(&now)
}

// LatestLoopEntryTime is when the loop last started or finished an iteration; zero before
// the first.
func (l *SyncLoop) LatestLoopEntryTime() time.Time {
	if t := l.monitor.Load(); t != nil {
		return *t
	}
	return time.Time{}
}

// SyncLoopHealthy is the /healthz "syncloop" check: ErrSyncLoopStalled when the loop has not
// been entered for max(2 x ResyncInterval, 5m); nil before the loop first ran.
func (l *SyncLoop) SyncLoopHealthy() error {
	window := max(2*l.cfg.ResyncInterval, minHealthWindow)
	entered := l.LatestLoopEntryTime()
	if !entered.IsZero() && l.cfg.Clock.Now().After(entered.Add(window)) {
		return ErrSyncLoopStalled
	}
	return nil
}

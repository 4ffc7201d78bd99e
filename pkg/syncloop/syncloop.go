package syncloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	// Clock makes the tickers and the back-off timer and stamps the monitor. Default: real clock.
	Clock clock.WithTicker
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
	// Registry receives sync_loop_iterations_total{kind} and housekeeping_duration_seconds. Optional.
	Registry *metrics.Registry
}

// SyncLoop is the kubelet's syncLoop. Iterate (blocking) and TryIterate (polling) are the
// step, one syncLoopIteration each; CheckRuntime is the back-off step before it; Run is the
// runner. The steps must be called from one goroutine at a time; LatestLoopEntryTime,
// SyncLoopHealthy and SourcesSeen are safe from any goroutine.
type SyncLoop struct {
	cfg    Config
	plegCh <-chan *pleg.PodLifecycleEvent // nil once closed, so a closed channel cannot spin the loop

	monitor atomic.Pointer[time.Time]

	mu           sync.Mutex
	syncTicker   clock.Ticker
	hkTicker     clock.Ticker
	stopped      bool
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
		cfg.Clock = clock.RealClock{}
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

// Run is the runner: the kubelet's syncLoop. Before each iteration it checks the runtime
// and waits out the back-off on the clock; it returns when ctx ends or the config channel
// closes, after stopping the tickers.
func (l *SyncLoop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Starting kubelet main sync loop")
	defer l.Stop()
	for ctx.Err() == nil {
		if wait, ok := l.CheckRuntime(ctx); !ok {
			t := l.cfg.Clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			continue
		}
		if !l.Iterate(ctx) {
			return
		}
	}
}

// CheckRuntime is the step before an iteration. When RuntimeErrors reports an error it logs
// "Skipping pod synchronization" and returns ok false with how long to wait before the next
// check (100ms, 200ms, ... capped at 5s); otherwise it resets the back-off and returns true.
func (l *SyncLoop) CheckRuntime(ctx context.Context) (wait time.Duration, ok bool) {
	var err error
	if l.cfg.RuntimeErrors != nil {
		err = l.cfg.RuntimeErrors()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.backoff = BackoffBase
		return 0, true
	}
	klog.FromContext(ctx).Error(err, "Skipping pod synchronization")
	wait = l.backoff
	l.backoff = min(BackoffMax, backoffFactor*l.backoff)
	return wait, false
}

// Iterate is one syncLoopIteration: it blocks until the config channel, the PLEG channel, the
// sync ticker or the housekeeping ticker has something (the first ready one, picked at random
// as Go's select does), dispatches it, and returns true; false when the config channel is
// closed, ctx ended or the loop was stopped.
func (l *SyncLoop) Iterate(ctx context.Context) bool {
	syncC, hkC, ok := l.tickers()
	if !ok {
		return false
	}
	l.touch()
	var cont bool
	select {
	case <-ctx.Done():
		return false
	case u, open := <-l.cfg.ConfigCh:
		cont = l.handleConfig(ctx, u, open)
	case e, open := <-l.plegCh:
		cont = l.handlePLEG(ctx, e, open)
	case <-syncC:
		cont = l.handleSync(ctx)
	case <-hkC:
		cont = l.handleHousekeeping(ctx)
	}
	if cont {
		l.touch()
	}
	return cont
}

// TryIterate is Iterate without blocking, for a scheduler on a virtual clock: it handles one
// ready input if there is one, checking them in a fixed order (config, PLEG, sync tick,
// housekeeping tick) so runs replay identically. progressed says whether something was
// handled; ok is false when the loop must end (config channel closed, ctx ended, stopped).
func (l *SyncLoop) TryIterate(ctx context.Context) (progressed, ok bool) {
	syncC, hkC, ok := l.tickers()
	if !ok || ctx.Err() != nil {
		return false, false
	}
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
			select {
			case <-syncC:
				cont = l.handleSync(ctx)
			default:
				select {
				case <-hkC:
					cont = l.handleHousekeeping(ctx)
				default:
					return false, true
				}
			}
		}
	}
	if cont {
		l.touch()
	}
	return true, cont
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
	l.mu.Lock()
	l.sourcesSeen.Insert(u.Source)
	l.mu.Unlock()
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
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sourcesSeen.Clone()
}

// tickers starts the tickers on first use and returns their channels; ok is false after Stop.
func (l *SyncLoop) tickers() (syncC, hkC <-chan time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return nil, nil, false
	}
	if l.syncTicker == nil {
		l.syncTicker = l.cfg.Clock.NewTicker(l.cfg.SyncPeriod)
		l.hkTicker = l.cfg.Clock.NewTicker(l.cfg.HousekeepingPeriod)
	}
	return l.syncTicker.C(), l.hkTicker.C(), true
}

// Stop stops the tickers; later iterations return false. Safe to call twice. It does not
// wait for a running Iterate: cancel Run's context for that.
func (l *SyncLoop) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	if l.syncTicker != nil {
		l.syncTicker.Stop()
		l.hkTicker.Stop()
	}
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

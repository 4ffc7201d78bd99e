package podworkers

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/scratch"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// Defaults, as the kubelet's.
const (
	// DefaultResyncInterval is the kubelet's syncFrequency: a healthy pod is synced again
	// this long (plus up to 50% jitter) after its last sync.
	DefaultResyncInterval = time.Minute
	// DefaultBackOffPeriod is the retry delay (plus up to 50% jitter) after a failed sync.
	DefaultBackOffPeriod = 10 * time.Second
	// jitterFactor is wait.Jitter's maxFactor for both delays.
	jitterFactor = 0.5
)

// Config configures PodWorkers.
type Config struct {
	// Handler runs the syncs. Required.
	Handler SyncHandler
	// Cache is the pod status cache the PLEG writes. Required.
	Cache container.Cache
	// Clock drives the work queue and durations. Required.
	Clock clock.Clock
	// Recorder receives FailedSync events. Nil drops them.
	Recorder events.Recorder
	// Registry receives pod_worker_duration_seconds. Nil keeps it unregistered.
	Registry *metrics.Registry
	// ResyncInterval is syncFrequency (default 1m); BackOffPeriod the error retry (10s).
	ResyncInterval time.Duration
	BackOffPeriod  time.Duration
	// JitterSeed seeds the requeue jitter so runs are reproducible (0 means 1).
	JitterSeed int64
}

// PodWorkers owns one worker per pod UID: its state machine, its pending update and the sync
// in flight. It is a synchronous core: Step runs the syncs that can make progress now and
// returns; a sync that waits for the runtime is a task (package task) resumed by a later Step
// when what it waits for completes. The daemon runs Step from one goroutine (the loop
// table's "pod-workers" entry) woken by Wake; simulate mode steps it on a virtual clock.
// It is not safe for concurrent use: its node's owner (runner.Owner in the daemon, simulate's
// goroutine) is its one caller, so it keeps no locks. A sync's task runs as a coroutine of
// that goroutine, and what a sync waits for completes there too.
type PodWorkers struct {
	handler  SyncHandler
	cache    container.Cache
	clock    clock.PassiveClock
	recorder events.Recorder
	resync   time.Duration
	backOff  time.Duration
	duration *prometheus.HistogramVec
	wake     *runner.Signal

	rand *rand.Rand

	stopped    bool
	podsSynced bool
	statuses   map[types.UID]*podSyncStatus
	// ready holds the pods a Step should look at: a pending update, a finished wait;
	// readyOrder lists them in the order they became ready (it may also hold pods since
	// taken out of ready, which Step skips).
	ready      map[types.UID]struct{}
	readyOrder []types.UID
	// carried is what a Step left of its batch when its time slice ran out, the next pod last: the
	// next Step starts there, after any pod that became ready since.
	carried []types.UID
	// becameReady is Step's scratch list of the pods that became ready, kept for its array.
	becameReady []types.UID
	queue       map[types.UID]time.Time
	// static pods with the same full name start one at a time, in arrival order
	startedStaticPodsByFullname        map[string]types.UID
	waitingToStartStaticPodsByFullname map[string][]types.UID
	// SyncKnownPods' answer, reused from one housekeeping to the next
	syncs map[types.UID]PodWorkerSync
}

// New validates cfg, fills defaults and returns the pod workers. Call Stop to abandon the
// syncs in flight.
func New(cfg Config) (*PodWorkers, error) {
	switch {
	case cfg.Handler == nil:
		return nil, errors.New("podworkers config: Handler is required")
	case cfg.Cache == nil:
		return nil, errors.New("podworkers config: Cache is required")
	case cfg.Clock == nil:
		return nil, errors.New("podworkers config: Clock is required")
	case cfg.ResyncInterval < 0:
		return nil, fmt.Errorf("podworkers config: ResyncInterval must not be negative, got %v", cfg.ResyncInterval)
	case cfg.BackOffPeriod < 0:
		return nil, fmt.Errorf("podworkers config: BackOffPeriod must not be negative, got %v", cfg.BackOffPeriod)
	}
	if cfg.ResyncInterval == 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.BackOffPeriod == 0 {
		cfg.BackOffPeriod = DefaultBackOffPeriod
	}
	if cfg.JitterSeed == 0 {
		cfg.JitterSeed = 1
	}
	if cfg.Recorder == nil {
		cfg.Recorder = events.Discard{}
	}
	name := metrics.PodWorkerDuration
	if cfg.Registry != nil {
		name = cfg.Registry.Name(name)
	}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    name,
		Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
		Buckets: prometheus.DefBuckets,
	}, []string{"operation_type"})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(duration)
	}
	p := &PodWorkers{
		handler:                            cfg.Handler,
		cache:                              cfg.Cache,
		clock:                              cfg.Clock,
		recorder:                           cfg.Recorder,
		resync:                             cfg.ResyncInterval,
		backOff:                            cfg.BackOffPeriod,
		duration:                           duration,
		wake:                               runner.NewSignal(),
		rand:                               rand.New(rand.NewSource(cfg.JitterSeed)),
		statuses:                           map[types.UID]*podSyncStatus{},
		ready:                              map[types.UID]struct{}{},
		queue:                              map[types.UID]time.Time{},
		startedStaticPodsByFullname:        map[string]types.UID{},
		waitingToStartStaticPodsByFullname: map[string][]types.UID{},
	}
	return p, nil
}

// Stop cancels and abandons every sync in flight (its task ends before Stop returns); later
// updates are ignored. The caller must have stopped calling Step. Safe to call more than once.
func (p *PodWorkers) Stop() {
	p.stopped = true
	var tasks []*task.Task
	for _, s := range p.statuses {
		if s.task != nil {
			if s.cancelFn != nil {
				s.cancelFn()
			}
			tasks = append(tasks, s.task)
			s.task = nil
		}
	}
	for _, t := range tasks {
		t.Stop()
	}
}

// SyncsInFlight is the number of syncs that have started and wait for the runtime.
func (p *PodWorkers) SyncsInFlight() int {
	n := 0
	for _, s := range p.statuses {
		if s.task != nil {
			n++
		}
	}
	return n
}

// podSyncStatus tracks one pod through setup, termination and cleanup.
type podSyncStatus struct {
	// task is the sync in flight, nil between syncs.
	task *task.Task
	// staticOf is the pod whose static-ness static holds: housekeeping asks for it of every
	// pod every 2 s, and the pod object rarely changes.
	staticOf *v1.Pod
	static   bool
	// syncCtx is the context of the sync in flight; cancelFn cancels it (set only while one
	// runs). A cancelled sync waiting for the runtime is resumed at once to see it.
	syncCtx  context.Context
	cancelFn context.CancelFunc
	// resumedCancelled: the sync in flight was resumed once after its cancellation; from
	// then on it is resumed only when what it waits for completes.
	resumedCancelled bool
	// waitingForCache: a cache notification is registered (the pending update needs data
	// newer than lastSyncTime).
	waitingForCache bool
	// startDeferred: the pending update is a static pod's start that must wait for another
	// pod of its full name; it is retried at the next update (the sync loop's back-off
	// resync), not at once.
	startDeferred bool
	fullname      string
	// hasWorker: a worker exists for the pod.
	hasWorker bool
	// working: an update is pending or being synced.
	working bool
	// pendingUpdate is the newest update not yet picked up; newer ones replace it.
	pendingUpdate *UpdatePodOptions
	// activeUpdate is the last update a sync used, replayed for synthetic requeues.
	activeUpdate *UpdatePodOptions
	// lastSyncTime is when the last sync ended: the next waits for newer cache data.
	lastSyncTime time.Time

	syncedAt      time.Time
	startedAt     time.Time
	terminatingAt time.Time
	terminatedAt  time.Time
	// gracePeriod is the effective grace period once terminating; it only shrinks.
	gracePeriod          int64
	abnormalTerminations []KillPodOptions
	startedTerminating   bool
	deleted              bool
	evicted              bool
	finished             bool
	restartRequested     bool
	observedRuntime      bool
}

func (s *podSyncStatus) IsTerminationRequested() bool { return !s.terminatingAt.IsZero() }
func (s *podSyncStatus) IsTerminated() bool           { return !s.terminatedAt.IsZero() }
func (s *podSyncStatus) IsStarted() bool              { return !s.startedAt.IsZero() }

func (s *podSyncStatus) WorkType() PodWorkerState {
	if s.IsTerminated() {
		return TerminatedPodState
	}
	if s.IsTerminationRequested() {
		return TerminatingPodState
	}
	return SyncPodState
}

// mergeLastUpdate keeps the newest pod (a runtime-only pod never replaces a real one) and
// accumulates kill options.
func (s *podSyncStatus) mergeLastUpdate(other UpdatePodOptions) {
	opts := s.activeUpdate
	if opts == nil {
		opts = &UpdatePodOptions{}
		s.activeUpdate = opts
	}
	if opts.Pod == nil || other.RunningPod == nil {
		opts.Pod = other.Pod
	}
	opts.RunningPod = other.RunningPod
	opts.UpdateType = other.UpdateType
	if other.KillPodOptions != nil {
		ko := &KillPodOptions{Evict: other.KillPodOptions.Evict, PodStatusFunc: other.KillPodOptions.PodStatusFunc}
		if o := other.KillPodOptions.PodTerminationGracePeriodSecondsOverride; o != nil {
			v := *o
			ko.PodTerminationGracePeriodSecondsOverride = &v
		}
		opts.KillPodOptions = ko
	}
}

// --- queries other loops use ---

// IsPodKnownTerminated: the pod's containers are known stopped.
func (p *PodWorkers) IsPodKnownTerminated(uid types.UID) bool {
	if s, ok := p.statuses[uid]; ok {
		return s.IsTerminated()
	}
	return false
}

// CouldHaveRunningContainers is true until the pod's termination completed; for an unknown
// pod it is true only until the first SyncKnownPods.
func (p *PodWorkers) CouldHaveRunningContainers(uid types.UID) bool {
	if s, ok := p.statuses[uid]; ok {
		return !s.IsTerminated()
	}
	return !p.podsSynced
}

// ShouldPodBeFinished: SyncTerminatedPod completed (or the pod is unknown after sync).
func (p *PodWorkers) ShouldPodBeFinished(uid types.UID) bool {
	if s, ok := p.statuses[uid]; ok {
		return s.finished
	}
	return p.podsSynced
}

// IsPodTerminationRequested: termination was requested and not yet forgotten.
func (p *PodWorkers) IsPodTerminationRequested(uid types.UID) bool {
	if s, ok := p.statuses[uid]; ok {
		return s.IsTerminationRequested()
	}
	return false
}

// ShouldPodContainersBeTerminating: the worker has begun terminating (no new container will
// start), or the pod is unknown after sync.
func (p *PodWorkers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	if s, ok := p.statuses[uid]; ok {
		return s.startedTerminating
	}
	return p.podsSynced
}

// ShouldPodRuntimeBeRemoved: every container is stopped, or the pod is unknown after sync.
func (p *PodWorkers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	if s, ok := p.statuses[uid]; ok {
		return s.IsTerminated()
	}
	return p.podsSynced
}

// ShouldPodContentBeRemoved: the pod was evicted, or deleted and stopped, or is unknown after
// sync; its containers and sandboxes may all be removed.
func (p *PodWorkers) ShouldPodContentBeRemoved(uid types.UID) bool {
	if s, ok := p.statuses[uid]; ok {
		return s.evicted || (s.deleted && s.IsTerminated())
	}
	return p.podsSynced
}

// UnfinishedTerminations is the number of pods whose termination was requested and whose
// worker has not finished them yet (containers maybe still stopping, or the terminated
// pod's cleanup not yet run). The daemon's shutdown waits for it to reach 0.
func (p *PodWorkers) UnfinishedTerminations() int {
	n := 0
	for _, s := range p.statuses {
		if s.IsTerminationRequested() && !s.finished {
			n++
		}
	}
	return n
}

// State returns the pod's lifecycle state and whether the workers know it.
func (p *PodWorkers) State(uid types.UID) (PodWorkerState, bool) {
	if s, ok := p.statuses[uid]; ok {
		return s.WorkType(), true
	}
	return SyncPodState, false
}

// --- the work queue ---

// PodsToSync removes and returns (sorted) the pods whose requeue time is due at now: the
// sync loop's sync tick feeds them back as sync updates.
func (p *PodWorkers) PodsToSync(now time.Time) []types.UID {
	var out []types.UID
	for uid, t := range p.queue {
		if !t.After(now) {
			out = append(out, uid)
			delete(p.queue, uid)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// NextRequeue returns the earliest requeue time, for a scheduler that wants to jump there.
func (p *PodWorkers) NextRequeue() (time.Time, bool) {
	var next time.Time
	for _, t := range p.queue {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next, !next.IsZero()
}

// jitter is wait.Jitter(d, 0.5) with the seeded source.
func (p *PodWorkers) jitter(d time.Duration) time.Duration {
	f := p.rand.Float64()
	return d + time.Duration(f*jitterFactor*float64(d))
}

// --- UpdatePod ---

// UpdatePod hands an update to the pod's worker, starting one if needed. It never blocks on
// a sync: a newer update replaces a pending one (keeping the oldest StartTime). Once a pod is
// terminating every update is a kill whose grace period can only shrink, so a pending kill is
// never turned back into a sync; a terminated pod ignores updates until it is forgotten.
func (p *PodWorkers) UpdatePod(options UpdatePodOptions) {
	var isRuntimePod bool
	var uid types.UID
	var ns, name string
	switch {
	case options.RunningPod != nil && options.Pod == nil:
		if options.UpdateType != kubetypes.SyncPodKill {
			klog.InfoS("Pod update is ignored, runtime pods can only be killed", "pod", klog.KRef(options.RunningPod.Namespace, options.RunningPod.Name), "podUID", options.RunningPod.ID, "updateType", options.UpdateType)
			return
		}
		uid, ns, name = options.RunningPod.ID, options.RunningPod.Namespace, options.RunningPod.Name
		isRuntimePod = true
	case options.Pod != nil:
		options.RunningPod = nil
		uid, ns, name = options.Pod.UID, options.Pod.Namespace, options.Pod.Name
	default:
		klog.ErrorS(nil, "Pod update has neither Pod nor RunningPod, ignored", "updateType", options.UpdateType)
		return
	}

	// Kill operations this update completes are completed once the lock is released:
	// their callbacks may call back into the pod workers.
	var completed []*task.Op
	defer func() {
		for _, op := range completed {
			op.Complete(nil)
		}
	}()
	if p.stopped {
		klog.V(4).InfoS("Pod workers stopped, update ignored", "pod", klog.KRef(ns, name), "podUID", uid)
		return
	}
	now := p.clock.Now()
	if options.StartTime.IsZero() {
		options.StartTime = now
	}
	if options.KillPodOptions != nil {
		ko := *options.KillPodOptions // never write into the caller's struct
		options.KillPodOptions = &ko
	}

	firstTime := false
	status, ok := p.statuses[uid]
	if !ok {
		klog.V(4).InfoS("Pod is being synced for the first time", "pod", klog.KRef(ns, name), "podUID", uid, "updateType", options.UpdateType)
		firstTime = true
		status = &podSyncStatus{syncedAt: now, fullname: fullName(name, ns)}
		// A pod already terminal in its source and stopped in the runtime (a restart of the
		// kubelet) goes straight to terminated so it is not counted as active.
		if options.Pod != nil && isTerminalPhase(options.Pod.Status.Phase) {
			if cached, err := p.cache.Get(uid); err == nil && isPodStatusCacheTerminal(cached) {
				status = &podSyncStatus{terminatedAt: now, terminatingAt: now, syncedAt: now, startedTerminating: true, fullname: fullName(name, ns)}
			}
		}
		p.statuses[uid] = status
	}

	pod := options.Pod
	if isRuntimePod {
		status.observedRuntime = true
		switch {
		case status.pendingUpdate != nil && status.pendingUpdate.Pod != nil:
			pod = status.pendingUpdate.Pod
			options.Pod, options.RunningPod = pod, nil
		case status.activeUpdate != nil && status.activeUpdate.Pod != nil:
			pod = status.activeUpdate.Pod
			options.Pod, options.RunningPod = pod, nil
		default:
			pod = options.RunningPod.ToAPIPod()
		}
	}

	// The same UID created again while terminating (a static pod with a fixed UID): restart
	// it once the old one is fully gone.
	if !firstTime && status.IsTerminationRequested() && options.UpdateType == kubetypes.SyncPodCreate {
		status.restartRequested = true
		klog.V(4).InfoS("Pod is terminating but has been requested to restart with same UID, will be reconciled later", "pod", klog.KRef(ns, name), "podUID", uid)
		return
	}
	if status.finished {
		klog.V(4).InfoS("Pod is finished processing, no further updates", "pod", klog.KRef(ns, name), "podUID", uid, "updateType", options.UpdateType)
		return
	}

	becameTerminating := false
	if !status.IsTerminationRequested() {
		switch {
		case isRuntimePod:
			klog.V(4).InfoS("Pod is orphaned and must be torn down", "pod", klog.KRef(ns, name), "podUID", uid)
			status.deleted = true
			status.terminatingAt, becameTerminating = now, true
		case pod.DeletionTimestamp != nil:
			klog.V(4).InfoS("Pod is marked for graceful deletion, begin teardown", "pod", klog.KRef(ns, name), "podUID", uid)
			status.deleted = true
			status.terminatingAt, becameTerminating = now, true
		case isTerminalPhase(pod.Status.Phase):
			klog.V(4).InfoS("Pod is in a terminal phase (success/failed), begin teardown", "pod", klog.KRef(ns, name), "podUID", uid)
			status.terminatingAt, becameTerminating = now, true
		case options.UpdateType == kubetypes.SyncPodKill:
			if options.KillPodOptions != nil && options.KillPodOptions.Evict {
				klog.V(4).InfoS("Pod is being evicted by the kubelet, begin teardown", "pod", klog.KRef(ns, name), "podUID", uid)
				status.evicted = true
			} else {
				klog.V(4).InfoS("Pod is being removed by the kubelet, begin teardown", "pod", klog.KRef(ns, name), "podUID", uid)
			}
			status.terminatingAt, becameTerminating = now, true
		}
	}

	shortened := false
	switch {
	case status.IsTerminated():
		if isRuntimePod {
			klog.V(3).InfoS("Pod is waiting for termination, ignoring runtime-only kill until after pod worker is fully terminated", "pod", klog.KRef(ns, name), "podUID", uid)
			return
		}
		completed = takeCompleted(completed, options.KillPodOptions)
		options.KillPodOptions = nil
	case status.IsTerminationRequested():
		grace, sh := calculateEffectiveGracePeriod(status, pod, options.KillPodOptions)
		shortened = sh
		status.gracePeriod = grace
		if options.KillPodOptions != nil {
			status.abnormalTerminations = append(status.abnormalTerminations, *options.KillPodOptions)
		} else {
			options.KillPodOptions = &KillPodOptions{}
		}
		options.KillPodOptions.PodTerminationGracePeriodSecondsOverride = &grace
		options.UpdateType = kubetypes.SyncPodKill
	default:
		completed = takeCompleted(completed, options.KillPodOptions)
		options.KillPodOptions = nil
	}

	if !status.hasWorker {
		status.hasWorker = true
		if kubetypes.IsStaticPod(pod) {
			p.waitingToStartStaticPodsByFullname[status.fullname] = append(p.waitingToStartStaticPodsByFullname[status.fullname], uid)
		}
	}

	if status.pendingUpdate != nil && !status.pendingUpdate.StartTime.IsZero() && status.pendingUpdate.StartTime.Before(options.StartTime) {
		options.StartTime = status.pendingUpdate.StartTime
	}
	status.pendingUpdate = &options
	status.startDeferred = false
	status.working = true
	if v := klog.V(4); v.Enabled() { // hot path: skip building the arguments
		v.InfoS("Notifying pod of pending update", "pod", klog.KRef(ns, name), "podUID", uid, "workType", status.WorkType())
	}
	p.notify(uid)

	if (becameTerminating || shortened) && status.cancelFn != nil {
		klog.V(3).InfoS("Cancelling current pod sync", "pod", klog.KRef(ns, name), "podUID", uid, "workType", status.WorkType())
		status.cancelFn()
	}
}

// takeCompleted appends o's Completed operation, if any, to ops and clears it: the caller
// completes ops once its state is consistent (completing runs the waiters' callbacks).
func takeCompleted(ops []*task.Op, o *KillPodOptions) []*task.Op {
	if o != nil && o.Completed != nil {
		ops = append(ops, o.Completed)
		o.Completed = nil
	}
	return ops
}

// notify marks the pod for the next Step and wakes the loop; it never blocks.
func (p *PodWorkers) notify(uid types.UID) {
	if _, ok := p.ready[uid]; ok {
		return
	}
	p.ready[uid] = struct{}{}
	p.readyOrder = append(p.readyOrder, uid)
	p.wake.Notify()
}

// calculateEffectiveGracePeriod: the deletion grace period and any override may only lower
// the grace period already in effect; without either, the pod's
// terminationGracePeriodSeconds applies (30s, the API default, when unset); never below 1s.
func calculateEffectiveGracePeriod(status *podSyncStatus, pod *v1.Pod, options *KillPodOptions) (int64, bool) {
	grace := status.gracePeriod
	overridden := false
	if o := pod.DeletionGracePeriodSeconds; o != nil && (grace == 0 || *o < grace) {
		grace, overridden = *o, true
	}
	if options != nil {
		if o := options.PodTerminationGracePeriodSecondsOverride; o != nil && (grace == 0 || *o < grace) {
			grace, overridden = *o, true
		}
	}
	if !overridden && grace == 0 {
		if t := pod.Spec.TerminationGracePeriodSeconds; t != nil {
			grace = *t
		} else {
			grace = v1.DefaultTerminationGracePeriodSeconds
		}
	}
	if grace < 1 {
		grace = 1
	}
	return grace, status.gracePeriod != 0 && status.gracePeriod != grace
}

// allowPodStart lets a static pod start only when no other pod with its full name runs and
// it is next in line; otherwise it is retried after the back-off period.
func (p *PodWorkers) allowPodStart(pod *v1.Pod) (canStart, canEverStart bool) {
	if !kubetypes.IsStaticPod(pod) {
		return true, true
	}
	status, ok := p.statuses[pod.UID]
	if !ok {
		return false, false
	}
	if status.IsTerminationRequested() {
		return false, false
	}
	if !p.allowStaticPodStart(status.fullname, pod.UID) {
		p.queue[pod.UID] = p.clock.Now().Add(p.jitter(p.backOff))
		return false, true
	}
	return true, true
}

func (p *PodWorkers) allowStaticPodStart(fullname string, uid types.UID) bool {
	if started, ok := p.startedStaticPodsByFullname[fullname]; ok {
		return started == uid
	}
	waiting := p.waitingToStartStaticPodsByFullname[fullname]
	for i, w := range waiting {
		s, ok := p.statuses[w]
		if !ok || s.IsTerminationRequested() || s.IsTerminated() {
			continue
		}
		if w != uid {
			p.waitingToStartStaticPodsByFullname[fullname] = waiting[i:]
			return false
		}
		waiting = waiting[i+1:]
		break
	}
	if len(waiting) != 0 {
		p.waitingToStartStaticPodsByFullname[fullname] = waiting
	} else {
		delete(p.waitingToStartStaticPodsByFullname, fullname)
	}
	p.startedStaticPodsByFullname[fullname] = uid
	return true
}

// cleanupUnstartedPod finishes a pod terminated before it ever started.
func (p *PodWorkers) cleanupUnstartedPod(pod *v1.Pod, status *podSyncStatus) {
	p.cleanupPodUpdates(pod.UID)
	status.finished = true
	status.working = false
	status.terminatedAt = p.clock.Now()
	if p.startedStaticPodsByFullname[status.fullname] == pod.UID {
		delete(p.startedStaticPodsByFullname, status.fullname)
	}
}

// podWork is one unit a worker runs.
type podWork struct {
	WorkType PodWorkerState
	Options  UpdatePodOptions
}

// startPodSync consumes the pending update: it returns the sync's context, the work, the
// last sync time, whether the pod may start now and ever, and ok=false if there was nothing.
func (p *PodWorkers) startPodSync(parent context.Context, uid types.UID) (ctx context.Context, update podWork, lastSync time.Time, canStart, canEverStart, ok bool) {
	status, ok := p.statuses[uid]
	if !ok {
		klog.V(4).InfoS("Pod worker no longer has status, worker should exit", "podUID", uid)
		return nil, update, lastSync, false, false, false
	}
	if status.pendingUpdate == nil {
		status.working = false
		return nil, update, lastSync, false, false, false
	}
	update.WorkType = status.WorkType()
	update.Options = *status.pendingUpdate
	status.pendingUpdate = nil
	lastSync = status.lastSyncTime
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(parent)
	status.syncCtx, status.cancelFn = ctx, cancel

	if status.IsStarted() {
		status.mergeLastUpdate(update.Options)
		return ctx, update, lastSync, true, true, true
	}
	if update.Options.RunningPod != nil && update.WorkType == TerminatingPodState {
		status.mergeLastUpdate(update.Options)
		return ctx, update, lastSync, true, true, true
	}
	if update.Options.Pod == nil {
		status.mergeLastUpdate(update.Options)
		return ctx, update, lastSync, false, false, true
	}
	canStart, canEverStart = p.allowPodStart(update.Options.Pod)
	switch {
	case !canEverStart:
		p.cleanupUnstartedPod(update.Options.Pod, status)
		status.cancelFn = nil
		cancel()
		p.observe("terminated", update.Options.StartTime)
		klog.V(4).InfoS("Pod cannot start ever", "pod", klog.KObj(update.Options.Pod), "podUID", uid, "updateType", update.WorkType)
		return ctx, update, lastSync, canStart, canEverStart, true
	case !canStart:
		status.pendingUpdate = &update.Options
		status.startDeferred = true
		status.working = false
		status.cancelFn = nil
		cancel()
		klog.V(4).InfoS("Pod cannot start yet", "pod", klog.KObj(update.Options.Pod), "podUID", uid)
		return ctx, update, lastSync, canStart, canEverStart, true
	}
	status.startedAt = p.clock.Now()
	status.mergeLastUpdate(update.Options)
	return ctx, update, lastSync, true, true, true
}

// statusReader reads the pod's runtime status for a sync (blocking or not).
type statusReader func(ctx context.Context, uid types.UID, minTime time.Time) (*container.PodStatus, error)

// processOne is THE step of a pod worker: take the pending update and run one sync of the
// pod's state machine. didWork is false when there was nothing (or nothing yet) to run;
// exit is true once the worker is done with the pod.
func (p *PodWorkers) processOne(parent context.Context, uid types.UID, read statusReader) (didWork, exit bool) {
	ctx, update, lastSync, canStart, canEverStart, ok := p.startPodSync(parent, uid)
	if !ok {
		return false, false
	}
	if !canEverStart {
		return true, true
	}
	if !canStart {
		return false, false
	}
	logger := klog.FromContext(parent)
	podUID, podRef := uidAndRef(update.Options)
	verbose := logger.V(4).Enabled()
	if verbose {
		logger.V(4).Info("Processing pod event", "pod", podRef, "podUID", podUID, "updateType", update.WorkType)
	}

	var isTerminal bool
	err := func() error {
		var status *container.PodStatus
		var err error
		if update.Options.RunningPod == nil {
			// wait for the PLEG to refresh the cache past our last sync, so this sync sees
			// the result of the previous one
			status, err = read(ctx, update.Options.Pod.UID, lastSync)
			if err != nil {
				if ctx.Err() == nil {
					p.recorder.Eventf(podObjectRef(update.Options.Pod), v1.EventTypeWarning, "FailedSync", "error determining status: %v", err)
				}
				return fmt.Errorf("read status of pod %q: %w", podRef.String(), err)
			}
		}
		switch update.WorkType {
		case TerminatedPodState:
			err = p.handler.SyncTerminatedPod(ctx, update.Options.Pod, status)
		case TerminatingPodState:
			var grace *int64
			if o := update.Options.KillPodOptions; o != nil {
				grace = o.PodTerminationGracePeriodSecondsOverride
			}
			statusFn := p.acknowledgeTerminating(podUID)
			if update.Options.RunningPod != nil {
				err = p.handler.SyncTerminatingRuntimePod(ctx, update.Options.RunningPod)
			} else {
				err = p.handler.SyncTerminatingPod(ctx, update.Options.Pod, status, grace, statusFn)
			}
		default:
			isTerminal, err = p.handler.SyncPod(ctx, update.Options.UpdateType, update.Options.Pod, status)
		}
		if s, ok := p.statuses[podUID]; ok {
			s.lastSyncTime = p.clock.Now()
		}
		return err
	}()
	cancelled := ctx.Err() != nil
	p.finishSync(podUID)

	phaseTransition := false
	switch {
	case err != nil && cancelled && parent.Err() == nil:
		// cancelled by UpdatePod (termination or a shorter grace period): the next update
		// is already pending
		logger.V(2).Info("Sync exited with context cancellation error", "pod", podRef, "podUID", podUID, "updateType", update.WorkType)
	case err != nil && cancelled:
		// the workers are stopping (daemon shutdown): an interrupted sync is expected
		logger.V(4).Info("Sync interrupted by shutdown", "pod", podRef, "podUID", podUID, "updateType", update.WorkType, "err", err)
	case err != nil:
		logger.Error(err, "Error syncing pod, skipping", "pod", podRef, "podUID", podUID)
	case update.WorkType == TerminatedPodState:
		p.completeTerminated(podUID)
		p.observe("terminated", update.Options.StartTime)
		logger.V(4).Info("Processing pod event done", "pod", podRef, "podUID", podUID, "updateType", update.WorkType)
		return true, true
	case update.WorkType == TerminatingPodState:
		if update.Options.RunningPod != nil {
			p.completeTerminatingRuntimePod(podUID)
			p.observe(update.Options.UpdateType.String(), update.Options.StartTime)
			return true, true
		}
		p.completeTerminating(podUID)
		phaseTransition = true
	case isTerminal:
		logger.V(4).Info("Pod is terminal", "pod", podRef, "podUID", podUID, "updateType", update.WorkType)
		p.completeSync(podUID)
		phaseTransition = true
	}

	if parent.Err() != nil {
		return true, true // shutting down
	}
	p.completeWork(podUID, phaseTransition, err)
	p.observe(update.Options.UpdateType.String(), update.Options.StartTime)
	if verbose {
		logger.V(4).Info("Processing pod event done", "pod", podRef, "podUID", podUID, "updateType", update.WorkType)
	}
	return true, false
}

func (p *PodWorkers) observe(op string, start time.Time) {
	if !start.IsZero() {
		p.duration.WithLabelValues(op).Observe(p.clock.Since(start).Seconds())
	}
}

// finishSync releases the sync's context.
func (p *PodWorkers) finishSync(uid types.UID) {
	if s, ok := p.statuses[uid]; ok && s.cancelFn != nil {
		s.cancelFn()
		s.syncCtx, s.cancelFn = nil, nil
	}
}

// acknowledgeTerminating records that the worker saw the termination (no container will
// start any more) and returns the newest abnormal termination's status function.
func (p *PodWorkers) acknowledgeTerminating(uid types.UID) func(*v1.PodStatus) {
	s, ok := p.statuses[uid]
	if !ok {
		return nil
	}
	if !s.terminatingAt.IsZero() && !s.startedTerminating {
		klog.V(4).InfoS("Pod worker has observed request to terminate", "podUID", uid)
		s.startedTerminating = true
	}
	for i := len(s.abnormalTerminations) - 1; i >= 0; i-- {
		if fn := s.abnormalTerminations[i].PodStatusFunc; fn != nil {
			return fn
		}
	}
	return nil
}

// completeSync: SyncPod reported the pod terminal; move to terminating now.
func (p *PodWorkers) completeSync(uid types.UID) {
	s, ok := p.statuses[uid]
	if !ok {
		return
	}
	if s.terminatingAt.IsZero() {
		s.terminatingAt = p.clock.Now()
	}
	s.startedTerminating = true
	if s.activeUpdate != nil && s.activeUpdate.Pod != nil {
		s.gracePeriod, _ = calculateEffectiveGracePeriod(s, s.activeUpdate.Pod, nil)
	}
	p.requeueLastPodUpdate(uid, s)
}

// completeTerminating: every container stopped; move to terminated now.
func (p *PodWorkers) completeTerminating(uid types.UID) {
	var completed []*task.Op
	if s, ok := p.statuses[uid]; ok {
		s.terminatedAt = p.clock.Now()
		for i := range s.abnormalTerminations {
			completed = takeCompleted(completed, &s.abnormalTerminations[i])
		}
		p.requeueLastPodUpdate(uid, s)
	}
	for _, op := range completed {
		op.Complete(nil)
	}
}

// completeTerminatingRuntimePod: an orphan is stopped; forget it entirely.
func (p *PodWorkers) completeTerminatingRuntimePod(uid types.UID) {
	p.cleanupPodUpdates(uid)
	s, ok := p.statuses[uid]
	if !ok {
		return
	}
	s.terminatedAt = p.clock.Now()
	s.finished = true
	s.working = false
	if p.startedStaticPodsByFullname[s.fullname] == uid {
		delete(p.startedStaticPodsByFullname, s.fullname)
	}
	delete(p.statuses, uid)
	delete(p.queue, uid)
}

// completeTerminated: the pod is finished; its worker exits and SyncKnownPods forgets it
// once no source wants it.
func (p *PodWorkers) completeTerminated(uid types.UID) {
	p.cleanupPodUpdates(uid)
	s, ok := p.statuses[uid]
	if !ok {
		return
	}
	s.finished = true
	s.working = false
	delete(p.queue, uid)
	if p.startedStaticPodsByFullname[s.fullname] == uid {
		delete(p.startedStaticPodsByFullname, s.fullname)
	}
}

// RetryAfterError is a sync error whose pod should be synced again after After rather
// than after the back-off period: what upstream waits for inside a sync (a volume's mount)
// is retried by the next one here.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// BackOffError is a sync error of a container in crash-loop back-off until Until (upstream's
// BackoffError): the pod is synced again when the back-off ends (with the usual jitter,
// at most the resync interval later), not after the error back-off period.
type BackOffError struct {
	Until time.Time
	Err   error
}

func (e *BackOffError) Error() string { return e.Err.Error() }
func (e *BackOffError) Unwrap() error { return e.Err }

// completeWork requeues the pod (at once after a phase change, after the resync interval on
// success, when a BackOffError's back-off ends, after the back-off period on other errors,
// all with jitter, or after a RetryAfterError's delay) and wakes the worker when an update
// is pending.
func (p *PodWorkers) completeWork(uid types.UID, phaseTransition bool, syncErr error) {
	var delay time.Duration
	var retry *RetryAfterError
	var backOff *BackOffError
	switch {
	case phaseTransition:
		delay = 0
	case syncErr == nil:
		delay = p.jitter(p.resync)
	case errors.As(syncErr, &retry):
		delay = retry.After
	case errors.As(syncErr, &backOff):
		// As upstream since v1.33 (kubernetes#123602): at the back-off's end, not a whole
		// error back-off period later.
		delay = p.jitter(min(max(backOff.Until.Sub(p.clock.Now()), 0), p.resync))
	default:
		delay = p.jitter(p.backOff)
	}
	s, ok := p.statuses[uid]
	if !ok {
		return
	}
	p.queue[uid] = p.clock.Now().Add(delay)
	if s.pendingUpdate != nil {
		p.notify(uid)
	} else {
		s.working = false
	}
}

// requeueLastPodUpdate replays the last update when nothing is pending.
func (p *PodWorkers) requeueLastPodUpdate(uid types.UID, s *podSyncStatus) {
	if s.pendingUpdate != nil || s.activeUpdate == nil {
		return
	}
	copied := *s.activeUpdate
	if s.IsTerminationRequested() {
		g := s.gracePeriod
		if g == 0 {
			g = 1
		}
		ko := KillPodOptions{PodTerminationGracePeriodSecondsOverride: &g}
		if copied.KillPodOptions != nil {
			ko.Evict, ko.PodStatusFunc = copied.KillPodOptions.Evict, copied.KillPodOptions.PodStatusFunc
		}
		copied.KillPodOptions = &ko
		copied.UpdateType = kubetypes.SyncPodKill
	}
	copied.StartTime = p.clock.Now()
	s.pendingUpdate = &copied
	s.startDeferred = false
	s.working = true
	p.notify(uid)
}

// cleanupPodUpdates retires the pod's worker.
func (p *PodWorkers) cleanupPodUpdates(uid types.UID) {
	delete(p.ready, uid)
	if s, ok := p.statuses[uid]; ok {
		s.hasWorker = false
	}
}

// SyncKnownPods reconciles the workers with the desired pods: a finished worker whose pod is
// no longer desired (or was re-created with the same UID) is forgotten; a running one whose
// pod is gone starts terminating. It returns the remaining workers, in a map that is the
// workers' own until the next call (housekeeping, its one caller, reads and adds to it
// within one pass). After the first call an unknown pod is treated as not running (see the
// Should* queries).
//
// Upstream takes the desired pods as a slice and builds the set of their UIDs; housekeeping
// builds that set anyway (statuses, probes), so it is taken here as the set.
func (p *PodWorkers) SyncKnownPods(desired map[types.UID]bool) map[types.UID]PodWorkerSync {
	p.podsSynced = true
	p.syncs = scratch.Map(p.syncs, len(p.statuses))
	out := p.syncs
	for uid, s := range p.statuses {
		orphan := !desired[uid]
		if s.restartRequested || orphan {
			if p.removeTerminatedWorker(uid, s, orphan) {
				continue
			}
		}
		sync := PodWorkerSync{State: s.WorkType(), Orphan: orphan}
		switch {
		case s.activeUpdate != nil && s.activeUpdate.Pod != nil:
			sync.HasConfig, sync.Static = true, s.isStatic(s.activeUpdate.Pod)
		case s.pendingUpdate != nil && s.pendingUpdate.Pod != nil:
			sync.HasConfig, sync.Static = true, s.isStatic(s.pendingUpdate.Pod)
		}
		out[uid] = sync
	}
	return out
}

// Len is how many pods the workers keep state for, and how many of them wait in the
// resync queue: after a pod is forgotten neither counts it (leak checks use this).
func (p *PodWorkers) Len() (pods, queued int) {
	return len(p.statuses), len(p.queue)
}

// isStatic is kubetypes.IsStaticPod(pod), remembered for the last pod asked about.
func (s *podSyncStatus) isStatic(pod *v1.Pod) bool {
	if s.staticOf != pod {
		s.staticOf, s.static = pod, kubetypes.IsStaticPod(pod)
	}
	return s.static
}

// removeTerminatedWorker forgets a finished pod, or drives an orphan towards termination;
// it reports whether the pod was forgotten.
func (p *PodWorkers) removeTerminatedWorker(uid types.UID, s *podSyncStatus, orphaned bool) bool {
	if !s.finished {
		if !orphaned {
			return false
		}
		s.deleted = true
		switch {
		case !s.IsStarted() && !s.observedRuntime:
			// never started: the worker cleans it up without a sync
			klog.V(4).InfoS("Pod is orphaned and has not been started", "podUID", uid)
		case !s.IsTerminationRequested():
			s.terminatingAt = p.clock.Now()
			if s.activeUpdate != nil && s.activeUpdate.Pod != nil {
				s.gracePeriod, _ = calculateEffectiveGracePeriod(s, s.activeUpdate.Pod, nil)
			} else {
				s.gracePeriod = 1
			}
			p.requeueLastPodUpdate(uid, s)
			klog.V(4).InfoS("Pod is orphaned and still running, began terminating", "podUID", uid)
			return false
		default:
			p.requeueLastPodUpdate(uid, s)
			klog.V(4).InfoS("Pod is orphaned and still terminating, notified the pod worker", "podUID", uid)
			return false
		}
	}
	if s.restartRequested {
		klog.V(4).InfoS("Pod has been terminated but another pod with the same UID was created, remove history to allow restart", "podUID", uid)
	} else {
		klog.V(4).InfoS("Pod has been terminated and is no longer known to the kubelet, remove all history", "podUID", uid)
	}
	delete(p.statuses, uid)
	delete(p.queue, uid)
	p.cleanupPodUpdates(uid)
	if p.startedStaticPodsByFullname[s.fullname] == uid {
		delete(p.startedStaticPodsByFullname, s.fullname)
	}
	return true
}

// --- the step ---

// Due is the pod workers' next due time: now while a pod can make progress (an update to
// sync, a sync whose wait is over), else zero (idle until Wake).
func (p *PodWorkers) Due(now time.Time) time.Time {
	if (len(p.ready) > 0 || len(p.carried) > 0) && !p.stopped {
		return now
	}
	return time.Time{}
}

// StepSlice is how much of its clock a Step may use before it leaves the rest of its batch to
// the next (see Step).
const StepSlice = 500 * time.Microsecond

// Wake is notified when a pod becomes ready to make progress.
func (p *PodWorkers) Wake() *runner.Signal { return p.wake }

// Step advances every pod that can make progress now, in the order they became ready: it
// starts a sync for a pending update once the status cache holds data newer than the pod's
// last sync (else it asks the cache to tell it), and resumes a sync whose wait for the
// runtime is over or whose context was cancelled. It never waits; a sync that has to wait is
// resumed by a later Step.
//
// Upstream runs each worker in its own goroutine, which Go's scheduler runs roughly in the
// order they were woken, the latest woken first. Here they share one loop: pods go in the
// order they became ready, and pods that become ready while a Step runs go before the rest of
// its batch, so hundreds of pods released at once (the cache's global time moving on) do
// not hold up another pod's fresh event. The order is deterministic whenever the readiness
// order is (simulate mode).
//
// A Step also ends once StepSlice of its clock has passed, leaving the rest of its batch to
// the next: the node's other loops run in between, so a batch of hundreds of pods (about
// 0.1 ms each) does not hold up for tens of milliseconds a container's exit, which the
// runtime and the PLEG must step to report. No time passes during a step on simulate's
// virtual clock, so there a Step still runs its whole batch.
func (p *PodWorkers) Step(ctx context.Context) {
	// batch holds the pods still to step, the next one last: pods that become ready during
	// the Step go before the rest by an append, not by copying the rest (a batch can hold
	// every pod of the node).
	batch := p.carried
	p.carried = nil
	start := p.clock.Now()
	for {
		if p.stopped {
			return
		}
		if len(batch) > 0 && p.clock.Since(start) >= StepSlice {
			p.carried = batch
			return
		}
		if len(p.ready) > 0 {
			fresh := p.becameReady[:0]
			for _, uid := range p.readyOrder {
				if _, ok := p.ready[uid]; ok {
					delete(p.ready, uid)
					fresh = append(fresh, uid)
				}
			}
			for i := len(fresh) - 1; i >= 0; i-- {
				batch = append(batch, fresh[i])
			}
			clear(fresh)
			p.becameReady = fresh[:0]
		}
		clear(p.readyOrder)
		p.readyOrder = p.readyOrder[:0]
		if len(batch) == 0 || ctx.Err() != nil {
			return
		}
		uid := batch[len(batch)-1]
		batch = batch[:len(batch)-1]
		p.stepPod(ctx, uid)
	}
}

// stepPod starts or resumes one pod's sync.
func (p *PodWorkers) stepPod(ctx context.Context, uid types.UID) {
	s, ok := p.statuses[uid]
	if !ok || p.stopped {
		return
	}
	t := s.task
	switch {
	case t != nil:
		if !t.Ready() && (s.syncCtx == nil || s.syncCtx.Err() == nil || s.resumedCancelled) {
			return // spurious: still waiting
		}
	case s.pendingUpdate == nil:
		s.working = false
		return
	default:
		// Wait for the PLEG to refresh the cache past the last sync, so this sync sees the
		// result of the previous one. An orphan's kill needs no status.
		if s.pendingUpdate.RunningPod == nil && !p.fresh(uid, s) {
			return
		}
		t = task.New(ctx, func(ctx context.Context) { p.processOne(ctx, uid, p.readCache) })
		s.task, s.resumedCancelled = t, false
	}

	finished := t.Resume()

	if finished {
		if s.task == t {
			s.task = nil
		}
		if s.pendingUpdate != nil && !s.startDeferred && p.statuses[uid] == s {
			p.notify(uid)
		}
		return
	}
	// Resume once more to let the sync see its cancellation; if it still waits after that
	// (it awaits with a context that outlives the sync's), wait for its operation rather
	// than resuming it at every step.
	cancelled := s.syncCtx != nil && s.syncCtx.Err() != nil && !s.resumedCancelled
	if cancelled {
		s.resumedCancelled = true
	}
	if cancelled {
		p.notify(uid)
		return
	}
	t.Waiting().OnDone(func() { p.notify(uid) })
}

// fresh reports whether the cache holds data for the pod newer than its last sync; if
// not, it asks the cache to notify when it does (once).
func (p *PodWorkers) fresh(uid types.UID, s *podSyncStatus) bool {
	if s.waitingForCache {
		return false
	}
	fresh := p.cache.NotifyWhenNewer(uid, s.lastSyncTime, func() {
		s.waitingForCache = false
		if p.statuses[uid] == s {
			p.notify(uid)
		}
	})
	s.waitingForCache = !fresh
	return fresh
}

// readCache is how a sync reads the pod's runtime status: Step only starts a sync once the
// cache is fresh enough, so the current entry is the one to use.
func (p *PodWorkers) readCache(_ context.Context, uid types.UID, _ time.Time) (*container.PodStatus, error) {
	return p.cache.Get(uid)
}

// --- helpers ---

func isTerminalPhase(p v1.PodPhase) bool { return p == v1.PodFailed || p == v1.PodSucceeded }

// isPodStatusCacheTerminal: nothing of the pod runs in the runtime.
func isPodStatusCacheTerminal(s *container.PodStatus) bool {
	if s == nil {
		return true
	}
	for _, c := range s.ContainerStatuses {
		if c.State == container.ContainerStateRunning {
			return false
		}
	}
	for _, sb := range s.SandboxStatuses {
		if sb.State == cri.SandboxReady {
			return false
		}
	}
	return true
}

func fullName(name, ns string) string { return name + "_" + ns }

func uidAndRef(u UpdatePodOptions) (types.UID, klog.ObjectRef) {
	if u.RunningPod != nil {
		return u.RunningPod.ID, klog.KRef(u.RunningPod.Namespace, u.RunningPod.Name)
	}
	return u.Pod.UID, klog.KObj(u.Pod)
}

func podObjectRef(pod *v1.Pod) *v1.ObjectReference {
	return events.PodRef(pod)
}

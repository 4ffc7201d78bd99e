package nodeshutdown

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/events"
)

// Reasons and messages, as upstream pkg/kubelet/nodeshutdown (v1.30).
const (
	// PodReason and PodMessage go into the status of every pod the shutdown terminates.
	PodReason  = "Terminated"
	PodMessage = "Pod was terminated in response to imminent node shutdown."
	// NotAdmittedReason and NotAdmittedMessage reject a pod that arrives while the node is
	// shutting down.
	NotAdmittedReason  = "NodeShutdown"
	NotAdmittedMessage = "Pod was rejected as the node is shutting down."
	// EventReason is the reason of the node event recorded when a shutdown starts
	// (upstream kubelet events.NodeShutdown).
	EventReason = "Shutdown"
	// EventMessage is that event's message.
	EventMessage = "Shutdown manager detected shutdown event"

	// SystemCriticalPriority is the lowest priority of the critical group: the priority of
	// the system-cluster-critical class (system-node-critical is 2000001000). Upstream
	// scheduling.SystemCriticalPriority.
	SystemCriticalPriority int32 = 2000000000
	// defaultPriority is the priority of the ordinary group and of a pod without
	// spec.priority (upstream scheduling.DefaultPriorityWhenNoDefaultClassExists).
	defaultPriority int32 = 0
)

// ErrShuttingDown is what ShutdownStatus reports once a shutdown started; the node's Ready
// condition carries its text.
var ErrShuttingDown = errors.New("node is shutting down")

// KillPodFunc terminates pod with gracePeriodSeconds (it can only shorten a termination
// already under way) and applies status to the status written when termination starts.
// It must request the termination even when ctx is already done: ctx bounds only the
// wait, as upstream lets a kill go on in the pod workers after its group timed out. It
// returns nil once the pod's containers are stopped, ctx's error when ctx ended first,
// or why the kill could not be requested.
type KillPodFunc func(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, status func(*v1.PodStatus)) error

// Config configures a Manager.
type Config struct {
	// Clock times the groups and stamps the DisruptionTarget condition. Default: real clock.
	Clock clock.Clock
	// ShutdownGracePeriod is the kubelet's shutdownGracePeriod: the whole time pods get.
	ShutdownGracePeriod time.Duration
	// ShutdownGracePeriodCriticalPods is the kubelet's shutdownGracePeriodCriticalPods: the
	// last part of ShutdownGracePeriod, kept for critical pods. At most ShutdownGracePeriod.
	ShutdownGracePeriodCriticalPods time.Duration
	// Enabled is the GracefulNodeShutdown gate AND ShutdownGracePeriod > 0. Disabled, the
	// manager admits everything, reports no error and Shutdown kills nothing.
	Enabled bool
	// GetPods returns the active pods (admitted, not yet terminal). Required when Enabled.
	GetPods func() []*v1.Pod
	// KillPod terminates one pod. Required when Enabled.
	KillPod KillPodFunc
	// Recorder receives the node event. Default: none.
	Recorder events.Recorder
	// NodeName names the node in its event.
	NodeName string
	// SyncNodeStatus is called once the node is marked shutting down, so the Ready
	// condition goes False without waiting for the next status update (upstream
	// syncNodeStatus). Optional; called synchronously from the step, so it must not block
	// for long.
	SyncNodeStatus func()
	// Logger logs the manager's configuration at construction. Default: klog.Background().
	// Shutdown and Step log through klog.FromContext(ctx).
	Logger klog.Logger
}

// Group is one priority group of a shutdown: the pods whose priority is at least Priority
// (and below the next group's), terminated together with at most
// ShutdownGracePeriodSeconds each and waited for at most that long.
type Group struct {
	Priority                   int32
	ShutdownGracePeriodSeconds int64
	Pods                       []*v1.Pod
}

// priorityGracePeriod is upstream's ShutdownGracePeriodByPodPriority, kept for the
// "Creating node shutdown manager" log line so it reads as upstream's.
type priorityGracePeriod struct {
	Priority                   int32
	ShutdownGracePeriodSeconds int64
}

type state int

const (
	stateIdle state = iota
	stateRunning
	stateDone
)

// Manager is the graceful node shutdown manager. Step is the step (one advance of a
// shutdown, never blocking) and Shutdown its runner for the daemon. Admit, ShutdownStatus,
// ShuttingDown, Plan, NextDeadline, Changed and Done are safe for concurrent use; Step
// must not be called concurrently with itself or with Shutdown.
type Manager struct {
	cfg     Config
	periods []priorityGracePeriod // sorted by priority, low to high; nil when disabled

	shuttingDown atomic.Bool
	runnerActive atomic.Bool

	stepMu sync.Mutex // serializes Step and Stop

	mu       sync.Mutex
	state    state
	plan     []Group
	phase    int // index into plan of the group being terminated
	deadline time.Time
	pending  map[types.UID]*v1.Pod // pods of the current group whose kill has not returned
	cancel   context.CancelFunc    // ends the current group's waits

	wg      sync.WaitGroup // kill goroutines
	changed chan struct{}  // a kill returned (capacity 1, never blocks a sender)
	done    chan struct{}  // closed when the shutdown finished or was aborted
}

// NewManager validates cfg, fills defaults and returns a manager. A disabled manager
// needs nothing but the flag; an enabled one needs GetPods and KillPod and consistent
// grace periods.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Recorder == nil {
		cfg.Recorder = discardRecorder{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = klog.Background()
	}
	m := &Manager{cfg: cfg, phase: -1, changed: make(chan struct{}, 1), done: make(chan struct{})}
	if !cfg.Enabled {
		// Upstream logs one of these at construction. The simulator's config validation
		// rejects a positive shutdownGracePeriod with the gate off, so a zero period is the
		// usual case; a positive one here can only mean the gate is off.
		if cfg.ShutdownGracePeriod > 0 {
			cfg.Logger.Info("Node graceful shutdown feature is disabled, node shutdown will be immediate")
		} else {
			cfg.Logger.Info("No graceful configuration specified, node shutdown will be immediate")
		}
		return m, nil
	}

	var errs []error
	if cfg.ShutdownGracePeriod <= 0 {
		errs = append(errs, fmt.Errorf("shutdownGracePeriod %s: must be greater than 0 when graceful node shutdown is enabled", cfg.ShutdownGracePeriod))
	}
	if cfg.ShutdownGracePeriodCriticalPods < 0 {
		errs = append(errs, fmt.Errorf("shutdownGracePeriodCriticalPods %s: must not be negative", cfg.ShutdownGracePeriodCriticalPods))
	} else if cfg.ShutdownGracePeriodCriticalPods > cfg.ShutdownGracePeriod {
		errs = append(errs, fmt.Errorf("shutdownGracePeriodCriticalPods %s: must be <= shutdownGracePeriod %s", cfg.ShutdownGracePeriodCriticalPods, cfg.ShutdownGracePeriod))
	}
	if cfg.GetPods == nil {
		errs = append(errs, errors.New("GetPods: required when graceful node shutdown is enabled"))
	}
	if cfg.KillPod == nil {
		errs = append(errs, errors.New("KillPod: required when graceful node shutdown is enabled"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("create node shutdown manager: %w", errors.Join(errs...))
	}

	// Upstream (since v1.24) turns the two durations into two priority groups, each in
	// whole seconds: ordinary pods get shutdownGracePeriod - shutdownGracePeriodCriticalPods,
	// pods at or above SystemCriticalPriority get shutdownGracePeriodCriticalPods.
	m.periods = []priorityGracePeriod{
		{Priority: defaultPriority, ShutdownGracePeriodSeconds: int64((cfg.ShutdownGracePeriod - cfg.ShutdownGracePeriodCriticalPods) / time.Second)},
		{Priority: SystemCriticalPriority, ShutdownGracePeriodSeconds: int64(cfg.ShutdownGracePeriodCriticalPods / time.Second)},
	}
	cfg.Logger.Info("Creating node shutdown manager",
		"shutdownGracePeriodRequested", cfg.ShutdownGracePeriod,
		"shutdownGracePeriodCriticalPods", cfg.ShutdownGracePeriodCriticalPods,
		"shutdownGracePeriodByPodPriority", m.periods)
	return m, nil
}

// Enabled reports whether a shutdown terminates pods.
func (m *Manager) Enabled() bool { return m.cfg.Enabled }

// Admit rejects every pod once the node is shutting down (upstream's admit handler).
func (m *Manager) Admit(*v1.Pod) admission.Result {
	if m.ShuttingDown() {
		return admission.Result{Admit: false, Reason: NotAdmittedReason, Message: NotAdmittedMessage}
	}
	return admission.Result{Admit: true}
}

// ShutdownStatus returns ErrShuttingDown once a shutdown started, nil before. It is the
// shutdown error source of the node's Ready condition.
func (m *Manager) ShutdownStatus() error {
	if m.ShuttingDown() {
		return ErrShuttingDown
	}
	return nil
}

// ShuttingDown reports whether a shutdown started. It stays true after the shutdown
// completed: the node is going away.
func (m *Manager) ShuttingDown() bool { return m.shuttingDown.Load() }

// Plan splits pods into the manager's priority groups, lowest priority first, as
// upstream's groupByPriority does: a pod's priority is spec.priority (0 when unset); it
// joins the group with the highest Priority not above its own, and a pod below every
// group joins the first. Only spec.priority counts: a priorityClassName the apiserver has
// not resolved, and being a static pod, do not make a pod critical here (upstream
// kubernetes#113940). Empty groups are kept. Nil when the manager is disabled.
func (m *Manager) Plan(pods []*v1.Pod) []Group {
	if len(m.periods) == 0 {
		return nil
	}
	groups := make([]Group, len(m.periods))
	for i, p := range m.periods {
		groups[i] = Group{Priority: p.Priority, ShutdownGracePeriodSeconds: p.ShutdownGracePeriodSeconds}
	}
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		var priority int32
		if pod.Spec.Priority != nil {
			priority = *pod.Spec.Priority
		}
		// The last group whose Priority <= priority, or the first group.
		i := sort.Search(len(groups), func(i int) bool { return groups[i].Priority > priority }) - 1
		if i < 0 {
			i = 0
		}
		groups[i].Pods = append(groups[i].Pods, pod)
	}
	return groups
}

// NextDeadline is when the group being terminated times out; false when no group is.
func (m *Manager) NextDeadline() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != stateRunning {
		return time.Time{}, false
	}
	return m.deadline, true
}

// Changed receives after a kill returned, so a simulate runner can poll it (without
// blocking) to know when another Step may make progress. Spurious wake-ups happen.
func (m *Manager) Changed() <-chan struct{} { return m.changed }

// Done is closed once a shutdown finished (or was aborted by Stop or its context).
func (m *Manager) Done() <-chan struct{} { return m.done }

// Step advances the shutdown without blocking and reports whether it is complete. The
// first call starts it: the node is marked shutting down (Admit rejects, ShutdownStatus
// errs), the event is recorded, SyncNodeStatus is called, the active pods are grouped by
// Plan and the first non-empty group's kills start, each in its own goroutine. Later
// calls move on to the next group once every kill of the current one returned or its
// time (ShutdownGracePeriodSeconds after it started) is up; the kills still running are
// then logged and stop being waited for. ctx bounds the waits of the kills this call
// starts. Disabled, the first call completes the shutdown without touching any pod.
func (m *Manager) Step(ctx context.Context) bool {
	m.stepMu.Lock()
	defer m.stepMu.Unlock()

	m.mu.Lock()
	st := m.state
	m.mu.Unlock()
	switch st {
	case stateDone:
		return true
	case stateIdle:
		if !m.cfg.Enabled {
			m.mu.Lock()
			m.finishLocked()
			m.mu.Unlock()
			return true
		}
		m.begin(ctx)
	case stateRunning:
		if !m.groupOver(ctx) {
			return false
		}
	}
	return m.nextGroup(ctx)
}

// begin marks the node shutting down and plans the groups.
func (m *Manager) begin(ctx context.Context) {
	logger := klog.FromContext(ctx)
	// Upstream logs these at V(1); a simulator user stopping the daemon wants to see the
	// shutdown at the default verbosity, and it happens once per process.
	logger.Info("Shutdown manager detected new shutdown event, isNodeShuttingDownNow", "event", true)
	logger.Info("Shutdown manager detected new shutdown event", "event", "shutdown")
	m.cfg.Recorder.Eventf(events.NodeRef(m.cfg.NodeName), v1.EventTypeNormal, EventReason, EventMessage)
	m.shuttingDown.Store(true)
	if m.cfg.SyncNodeStatus != nil {
		m.cfg.SyncNodeStatus()
	}
	logger.Info("Shutdown manager processing shutdown event")
	plan := m.Plan(m.cfg.GetPods())

	m.mu.Lock()
	m.state, m.plan, m.phase = stateRunning, plan, -1
	m.mu.Unlock()
}

// groupOver reports whether the current group is finished: every kill returned, or its
// time is up (then the remaining kills are named and their waits cancelled).
func (m *Manager) groupOver(ctx context.Context) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) > 0 {
		if m.cfg.Clock.Now().Before(m.deadline) {
			return false
		}
		g := m.plan[m.phase]
		klog.FromContext(ctx).Info("Shutdown manager pod killing time out",
			"gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority, "pods", podRefs(m.pending))
	}
	m.endGroupLocked()
	return true
}

// nextGroup starts the kills of the next non-empty group, or completes the shutdown.
func (m *Manager) nextGroup(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.phase+1 < len(m.plan) {
		m.phase++
		g := m.plan[m.phase]
		// As upstream, a group without pods is not waited for.
		if len(g.Pods) == 0 {
			continue
		}
		groupCtx, cancel := context.WithCancel(ctx)
		m.cancel = cancel
		m.deadline = m.cfg.Clock.Now().Add(time.Duration(g.ShutdownGracePeriodSeconds) * time.Second)
		m.pending = make(map[types.UID]*v1.Pod, len(g.Pods))
		for _, pod := range g.Pods {
			m.pending[pod.UID] = pod
		}
		for _, pod := range g.Pods {
			grace := g.ShutdownGracePeriodSeconds
			// A pod asking for less than its group's period gets what it asked for.
			if tgp := pod.Spec.TerminationGracePeriodSeconds; tgp != nil && *tgp <= grace {
				grace = *tgp
			}
			logger.V(1).Info("Shutdown manager killing pod with gracePeriod", "pod", klog.KObj(pod), "gracePeriod", grace)
			m.wg.Add(1)
			go m.kill(groupCtx, m.phase, pod, grace)
		}
		return false
	}
	logger.Info("Shutdown manager completed processing shutdown event, node will shutdown shortly")
	m.finishLocked()
	return true
}

// kill runs one pod's kill and reports its return.
func (m *Manager) kill(ctx context.Context, phase int, pod *v1.Pod, grace int64) {
	defer m.wg.Done()
	logger := klog.FromContext(ctx)
	err := m.cfg.KillPod(ctx, pod, grace, m.podStatusFunc)
	// Out of the group before logging, so a pod logged as finished is never also named by
	// the group's time-out line.
	m.mu.Lock()
	if m.phase == phase {
		delete(m.pending, pod.UID)
	}
	m.mu.Unlock()
	switch {
	case err == nil:
		logger.V(1).Info("Shutdown manager finished killing pod", "pod", klog.KObj(pod))
	case ctx.Err() != nil:
		// The group's time was up (already logged with the pod) or the shutdown was aborted.
		logger.V(4).Info("Stopped waiting for pod to be killed", "pod", klog.KObj(pod), "err", err)
	default:
		logger.V(1).Info("Shutdown manager failed killing pod", "pod", klog.KObj(pod), "err", err)
	}
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// podStatusFunc is the status a shutdown gives a pod it terminates, as upstream: Failed
// (unless it already Succeeded), reason Terminated, and the DisruptionTarget condition
// (upstream behind PodDisruptionConditions, beta and on in v1.30, GA in v1.31).
func (m *Manager) podStatusFunc(status *v1.PodStatus) {
	if status.Phase != v1.PodSucceeded {
		status.Phase = v1.PodFailed
	}
	status.Reason = PodReason
	status.Message = PodMessage
	updatePodCondition(status, v1.PodCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		Reason:             v1.PodReasonTerminationByKubelet,
		Message:            PodMessage,
		LastTransitionTime: metav1.NewTime(m.cfg.Clock.Now()),
	})
}

// updatePodCondition sets cond in status, keeping the old transition time when the
// condition's status did not change (upstream podutil.UpdatePodCondition).
func updatePodCondition(status *v1.PodStatus, cond v1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type != cond.Type {
			continue
		}
		if status.Conditions[i].Status == cond.Status {
			cond.LastTransitionTime = status.Conditions[i].LastTransitionTime
		}
		status.Conditions[i] = cond
		return
	}
	status.Conditions = append(status.Conditions, cond)
}

// Shutdown runs a whole shutdown (the daemon's runner of Step): it returns nil once every
// group's pods were killed or had their time, so within ShutdownGracePeriod, with every
// kill goroutine gone; at once when the manager is disabled. If ctx ends first the
// shutdown is aborted (the node stays marked shutting down) and ctx's error returned.
// A second call waits for the first.
func (m *Manager) Shutdown(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("graceful node shutdown: %w", err)
	}
	if !m.runnerActive.CompareAndSwap(false, true) {
		select {
		case <-m.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("wait for graceful node shutdown: %w", ctx.Err())
		}
	}
	for !m.Step(ctx) {
		deadline, ok := m.NextDeadline()
		if !ok {
			continue
		}
		d := deadline.Sub(m.cfg.Clock.Now())
		if d <= 0 {
			// A zero-second group, or time passed during the step: Step times it out now.
			select {
			case <-ctx.Done():
				m.Stop()
				return fmt.Errorf("graceful node shutdown: %w", ctx.Err())
			default:
			}
			continue
		}
		t := m.cfg.Clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			m.Stop()
			return fmt.Errorf("graceful node shutdown: %w", ctx.Err())
		case <-m.changed:
			t.Stop()
		case <-t.C():
		}
	}
	m.wg.Wait()
	return nil
}

// Stop aborts a shutdown under way: the kills still waited for are cancelled (the
// terminations they requested go on in the pod workers) and Stop returns once every kill
// goroutine is gone. The node stays marked shutting down. Safe to call more than once
// and when no shutdown ran.
func (m *Manager) Stop() {
	m.stepMu.Lock()
	m.mu.Lock()
	if m.state == stateRunning {
		m.endGroupLocked()
		m.finishLocked()
	}
	m.mu.Unlock()
	m.stepMu.Unlock()
	m.wg.Wait()
}

// endGroupLocked cancels the current group's waits.
func (m *Manager) endGroupLocked() {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
	m.pending = nil
}

func (m *Manager) finishLocked() {
	if m.state != stateDone {
		m.state = stateDone
		close(m.done)
	}
}

// podRefs names pods as namespace/name, sorted, for a stable and readable log line.
func podRefs(pods map[types.UID]*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, klog.KObj(p).String())
	}
	sort.Strings(out)
	return out
}

type discardRecorder struct{}

func (discardRecorder) Eventf(*v1.ObjectReference, string, string, string, ...interface{}) {}

var _ events.Recorder = discardRecorder{}

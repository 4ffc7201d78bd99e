package nodeshutdown

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// Reasons and messages, as upstream pkg/kubelet/nodeshutdown (v1.37).
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

// KillPodFunc asks for pod to be terminated with gracePeriodSeconds (it can only shorten a
// termination already under way), applying status to the status written when termination
// starts, and returns at once: the operation completes once the pod's containers are
// stopped. An error means the kill could not be requested. As upstream, a kill goes on in the
// pod workers after its group timed out; the manager only stops waiting for it.
type KillPodFunc func(pod *v1.Pod, gracePeriodSeconds int64, status func(*v1.PodStatus)) (*task.Op, error)

// Config configures a Manager.
type Config struct {
	// Clock times the groups and stamps the DisruptionTarget condition. Default: real clock.
	Clock clock.PassiveClock
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
	// syncNodeStatus). Optional; called from the step, so it must not wait.
	SyncNodeStatus func()
	// Logger logs the manager's configuration and the kills' outcomes. Default:
	// klog.Background(). Step logs through klog.FromContext(ctx).
	Logger klog.Logger
	// PodObservedGenerationTracking is the gate of that name: the DisruptionTarget
	// condition carries the pod's generation (upstream v1.37, where it is GA and locked on).
	PodObservedGenerationTracking bool
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

// Manager is the graceful node shutdown manager, a loop of the node's loop table: Start
// (the shutdown signal) makes it due, and each Step advances the shutdown without waiting:
// it starts a group's kills, and moves on once they completed or the group's time is up.
// It is not safe for concurrent use: its node's owner is its one caller (the shutdown signal
// comes through the owner too); ShuttingDown is published for any goroutine.
type Manager struct {
	cfg     Config
	periods []priorityGracePeriod // sorted by priority, low to high; nil when disabled
	wake    *runner.Signal

	shuttingDown atomic.Bool

	requested bool
	state     state
	plan      []Group
	phase     int // index into plan of the group being terminated
	deadline  time.Time
	pending   map[types.UID]*v1.Pod // pods of the current group whose kill has not completed
	done      chan struct{}         // closed when the shutdown finished or was aborted
}

// NewManager validates cfg, fills defaults and returns a manager. A disabled manager
// needs nothing but the flag; an enabled one needs GetPods and KillPod and consistent
// grace periods.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Clock == nil {
		// No silent real clock: every loop must be able to run on a fake one.
		return nil, errors.New("node shutdown manager: Config.Clock is required")
	}
	if cfg.Recorder == nil {
		cfg.Recorder = events.Discard{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = klog.Background()
	}
	m := &Manager{cfg: cfg, phase: -1, wake: runner.NewSignal(), done: make(chan struct{})}
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

// Start is the shutdown signal (SIGTERM to the daemon, a scenario's shutdown step): the
// manager's next Step begins the shutdown. Later calls do nothing.
func (m *Manager) Start() {
	m.requested = true
	m.wake.Notify()
}

// Due is when the shutdown next needs a step: now once requested and while a group is
// over (every kill completed) or its time is up, else the group's deadline; zero when no
// shutdown is requested or it is done.
func (m *Manager) Due(now time.Time) time.Time {
	switch {
	case !m.requested || m.state == stateDone:
		return time.Time{}
	case m.state == stateIdle, len(m.pending) == 0:
		return now
	}
	return m.deadline
}

// Wake is notified by Start and when a kill completes.
func (m *Manager) Wake() *runner.Signal { return m.wake }

// NextDeadline is when the group being terminated times out; false when no group is.
func (m *Manager) NextDeadline() (time.Time, bool) {
	if m.state != stateRunning {
		return time.Time{}, false
	}
	return m.deadline, true
}

// Done is closed once a shutdown finished (or was aborted by Stop).
func (m *Manager) Done() <-chan struct{} { return m.done }

// Step advances a requested shutdown without waiting and reports whether it is complete.
// The first step begins it: the node is marked shutting down (Admit rejects, ShutdownStatus
// errs), the event is recorded, SyncNodeStatus is called, the active pods are grouped by
// Plan and the first non-empty group's kills are requested. Later steps move on to the next
// group once every kill of the current one completed or its time (ShutdownGracePeriodSeconds
// after it started) is up; the kills still going on are then logged and no longer waited
// for. Disabled, the first step completes the shutdown without touching any pod.
func (m *Manager) Step(ctx context.Context) bool {
	st, requested := m.state, m.requested
	switch {
	case st == stateDone:
		return true
	case !requested:
		return false
	case st == stateIdle:
		if !m.cfg.Enabled {
			m.finish()
			return true
		}
		m.begin(ctx)
	case st == stateRunning:
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

	m.state, m.plan, m.phase = stateRunning, plan, -1
}

// groupOver reports whether the current group is finished: every kill returned, or its
// time is up (then the remaining kills are named and their waits cancelled).
func (m *Manager) groupOver(ctx context.Context) bool {
	if len(m.pending) > 0 {
		if m.cfg.Clock.Now().Before(m.deadline) {
			return false
		}
		g := m.plan[m.phase]
		klog.FromContext(ctx).Info("Shutdown manager pod killing time out",
			"gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority, "pods", podRefs(m.pending))
	} else if m.phase >= 0 && m.phase < len(m.plan) {
		g := m.plan[m.phase]
		klog.FromContext(ctx).V(1).Info("Done waiting for all pods in group to terminate", "gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority)
	}
	m.pending = nil
	return true
}

// nextGroup starts the kills of the next non-empty group, or completes the shutdown.
func (m *Manager) nextGroup(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	for m.phase+1 < len(m.plan) {
		m.phase++
		g := m.plan[m.phase]
		// As upstream, a group without pods is not waited for.
		if len(g.Pods) == 0 {
			continue
		}
		phase := m.phase
		m.deadline = m.cfg.Clock.Now().Add(time.Duration(g.ShutdownGracePeriodSeconds) * time.Second)
		m.pending = make(map[types.UID]*v1.Pod, len(g.Pods))
		for _, pod := range g.Pods {
			m.pending[pod.UID] = pod
		}
		// A kill that completes at once runs its completion callback now, which takes the
		// pod out of pending: the plan's state is complete before the first kill.
		for _, pod := range g.Pods {
			grace := g.ShutdownGracePeriodSeconds
			// A pod asking for less than its group's period gets what it asked for.
			if tgp := pod.Spec.TerminationGracePeriodSeconds; tgp != nil && *tgp <= grace {
				grace = *tgp
			}
			logger.V(1).Info("Shutdown manager killing pod with gracePeriod", "pod", klog.KObj(pod), "gracePeriod", grace)
			m.kill(phase, pod, grace)
		}
		return false
	}
	m.finish()
	logger.Info("Shutdown manager completed processing shutdown event, node will shutdown shortly")
	return true
}

// kill requests one pod's termination and, once it completes, takes the pod out of its
// group.
func (m *Manager) kill(phase int, pod *v1.Pod, grace int64) {
	op, err := m.cfg.KillPod(pod, grace, func(status *v1.PodStatus) { m.podStatusFunc(pod, status) })
	if err != nil {
		if m.phase == phase {
			delete(m.pending, pod.UID)
		}
		m.cfg.Logger.V(1).Info("Shutdown manager failed killing pod", "pod", klog.KObj(pod), "err", err)
		m.wake.Notify()
		return
	}
	// Runs when the pod workers complete the kill, or right away if it already is.
	op.OnDone(func() {
		inGroup := m.phase == phase && m.pending[pod.UID] != nil
		if inGroup {
			delete(m.pending, pod.UID)
		}
		switch {
		case !inGroup:
			// Cut off at its group's deadline (already logged as a time out) or aborted.
		case op.Err() != nil:
			m.cfg.Logger.V(1).Info("Shutdown manager failed killing pod", "pod", klog.KObj(pod), "err", op.Err())
		default:
			m.cfg.Logger.V(1).Info("Shutdown manager finished killing pod", "pod", klog.KObj(pod))
		}
		m.wake.Notify()
	})
}

// podStatusFunc is the status a shutdown gives pod when it terminates it, as upstream
// (nodeshutdown_manager.go:162-172): Failed (unless it already Succeeded), reason
// Terminated, and the DisruptionTarget condition (always written since
// PodDisruptionConditions went GA in v1.31), whose observedGeneration is the pod's
// generation as upstream's CalculatePodConditionObservedGeneration gives it.
func (m *Manager) podStatusFunc(pod *v1.Pod, status *v1.PodStatus) {
	if status.Phase != v1.PodSucceeded {
		status.Phase = v1.PodFailed
	}
	status.Reason = PodReason
	status.Message = PodMessage
	updatePodCondition(status, v1.PodCondition{
		Type:               v1.DisruptionTarget,
		ObservedGeneration: podstatus.ConditionObservedGeneration(status, pod.Generation, v1.DisruptionTarget, m.cfg.PodObservedGenerationTracking),
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

// Stop aborts a shutdown under way: the kills still waited for are no longer waited for
// (the terminations they requested go on in the pod workers). The node stays marked shutting
// down. Safe to call more than once and when no shutdown ran.
func (m *Manager) Stop() {
	if m.state == stateRunning {
		m.pending = nil
		m.finish()
	}
}

func (m *Manager) finish() {
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

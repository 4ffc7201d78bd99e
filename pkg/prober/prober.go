package prober

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/release"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// ProbeType is the kind of a probe.
type ProbeType int

// The probe types.
const (
	Liveness ProbeType = iota
	Readiness
	Startup
)

// String is upstream's name of the probe type, as events and metrics show it.
func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	}
	return "Startup"
}

// Reasons of the probe events, as upstream's.
const (
	EventUnhealthy    = "Unhealthy"
	EventProbeWarning = "ProbeWarning"
)

// probeUnknown is upstream's probe.Unknown, the result of a probe that could not run.
const probeUnknown = "unknown"

// StatusGetter gives the pod status the kubelet last generated (the status manager).
type StatusGetter interface {
	GetPodStatus(uid types.UID) (v1.PodStatus, bool)
}

// ExecRunner runs exec probes in containers (the CRI's ExecSync).
type ExecRunner interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*cri.ExecSyncResponse, error)
}

// Config configures a Manager.
type Config struct {
	// ContainerRestartRules is the gate: a terminated container's own restartPolicy and
	// restartPolicyRules decide whether its workers wait for it to come back.
	ContainerRestartRules bool
	// RestartAllContainers is the RestartAllContainersOnContainerExits gate (it needs
	// ContainerRestartRules): the worker of a terminated container of a pod restarting all
	// its containers keeps waiting for the next instance.
	RestartAllContainers bool
	// ChangeContainerStatusOnKubeletRestart is the deprecated gate (off by default since
	// v1.35). On, a restarted kubelet takes every container from the probes' initial
	// results again, as v1.30 did: not started until its startup probe passes, not ready
	// until its readiness probe does. Off, a container that was running before the kubelet
	// started keeps started from its previous status and, until its readiness probe has a
	// result, is as ready as its pod was, so a kubelet restart does not flap readiness.
	ChangeContainerStatusOnKubeletRestart bool

	Clock   clock.PassiveClock
	Status  StatusGetter
	Runtime ExecRunner
	// Liveness, Readiness and Startup receive the results; required.
	Liveness, Readiness, Startup *results.Manager
	Recorder                     events.Recorder
	// Registry receives prober_probe_total and prober_probe_duration_seconds (the kubelet
	// serves them on /metrics/probes, without its metric prefix). Optional.
	Registry *metrics.Registry
	// Seed seeds the random initial delay of probes started soon after the kubelet.
	Seed int64
	// Network is the pod network: httpGet, tcpSocket and grpc probes of a container that
	// runs a simulated program reach its servers through it. Nil: they pass (scripted).
	Network *simnet.Network
	// Release is the kubelet release whose major.minor the User-Agent of HTTP probes
	// carries ("kube-probe/1.37"); the zero value is the newest.
	Release release.Release
}

// Manager owns a worker per probe of every admitted pod's containers. It is one loop of the
// node's loop table: Due is the earliest probe due (or a probe in flight that can go on),
// Step runs them. A probe that waits (an exec probe's ExecSync, a slow endpoint) runs as a
// task. Not safe for concurrent use: the node's owner is its one caller.
type Manager struct {
	cfg   Config
	start time.Time // when the manager was made: the kubelet's start
	wake  *runner.Signal

	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec

	rand    *rand.Rand
	workers map[workerKey]*worker
	timers  []timer // probe answers pending on the clock (http, tcp, grpc)
	stopped bool
	// userAgent is HTTP probes' User-Agent: "kube-probe/" and the kubelet's major.minor.
	userAgent string
}

type workerKey struct {
	uid       types.UID
	container string
	probeType ProbeType
}

type timer struct {
	at time.Time
	op *task.Op
}

// NewManager validates cfg and returns a manager with no workers.
func NewManager(cfg Config) (*Manager, error) {
	switch {
	case cfg.Clock == nil:
		return nil, errors.New("prober config: Clock is required")
	case cfg.Status == nil:
		return nil, errors.New("prober config: Status is required")
	case cfg.Runtime == nil:
		return nil, errors.New("prober config: Runtime is required")
	case cfg.Liveness == nil || cfg.Readiness == nil || cfg.Startup == nil:
		return nil, errors.New("prober config: Liveness, Readiness and Startup results are required")
	}
	if cfg.Recorder == nil {
		cfg.Recorder = events.Discard{}
	}
	if cfg.Release.IsZero() {
		cfg.Release = release.Newest()
	}
	m := &Manager{cfg: cfg, start: cfg.Clock.Now(), wake: runner.NewSignal(), workers: map[workerKey]*worker{},
		rand: rand.New(rand.NewSource(cfg.Seed + 1)), userAgent: "kube-probe/" + cfg.Release.String()}
	m.total = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "prober_probe_total",
		Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "prober_probe_duration_seconds",
		Help:    "Duration in seconds for a probe response.",
		Buckets: prometheus.DefBuckets,
	}, []string{"probe_type", "container", "pod", "namespace"})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(m.total, m.duration)
	}
	return m, nil
}

// Wake is notified when a probe was added or one in flight can go on.
func (m *Manager) Wake() *runner.Signal { return m.wake }

// AddPod starts a worker for each probe of the pod's containers (and sidecars) that has none.
func (m *Manager) AddPod(pod *v1.Pod) {
	if m.stopped {
		return
	}
	now := m.cfg.Clock.Now()
	add := func(c v1.Container) {
		for _, p := range []struct {
			t    ProbeType
			spec *v1.Probe
		}{{Startup, c.StartupProbe}, {Readiness, c.ReadinessProbe}, {Liveness, c.LivenessProbe}} {
			if p.spec == nil {
				continue
			}
			key := workerKey{pod.UID, c.Name, p.t}
			if _, ok := m.workers[key]; ok {
				// Every sync adds the pod again (upstream logs this at -v=8 only).
				klog.V(8).ErrorS(nil, "Probe already exists for container", "pod", klog.KObj(pod), "containerName", c.Name, "probeType", p.t)
				continue
			}
			m.workers[key] = m.newWorker(pod, c, p.t, p.spec, now)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for _, c := range pod.Spec.Containers {
		add(c)
	}
	m.wake.Notify()
}

// RemovePod stops the pod's workers.
func (m *Manager) RemovePod(pod *v1.Pod) {
	var stop []*worker
	for k, w := range m.workers {
		if k.uid == pod.UID {
			stop = append(stop, w)
		}
	}
	for _, w := range stop {
		m.removeWorker(w)
	}
}

// StopLivenessAndStartup stops the pod's liveness and startup workers (the pod is
// terminating: its readiness keeps being probed).
func (m *Manager) StopLivenessAndStartup(pod *v1.Pod) {
	var stop []*worker
	for k, w := range m.workers {
		if k.uid == pod.UID && (k.probeType == Liveness || k.probeType == Startup) {
			stop = append(stop, w)
		}
	}
	for _, w := range stop {
		m.removeWorker(w)
	}
}

// CleanupPods stops the workers of pods not in desired.
func (m *Manager) CleanupPods(desired map[types.UID]bool) {
	var stop []*worker
	for k, w := range m.workers {
		if !desired[k.uid] {
			stop = append(stop, w)
		}
	}
	for _, w := range stop {
		m.removeWorker(w)
	}
}

// Workers is the number of probe workers.
func (m *Manager) Workers() int {
	return len(m.workers)
}

// Stop abandons every probe in flight and stops the workers. Idempotent.
func (m *Manager) Stop() {
	m.stopped = true
	var all []*worker
	for _, w := range m.workers {
		all = append(all, w)
	}
	for _, w := range all {
		m.removeWorker(w)
	}
}

// Due is now while a probe in flight can go on, else the earliest probe or pending answer.
func (m *Manager) Due(now time.Time) time.Time {
	var due time.Time
	earliest := func(t time.Time) {
		if due.IsZero() || t.Before(due) {
			due = t
		}
	}
	for _, t := range m.timers {
		earliest(t.at)
	}
	for _, w := range m.workers {
		switch {
		case w.task != nil && w.task.Ready():
			return now
		case w.task == nil:
			earliest(w.next)
		}
	}
	return due
}

// Step answers the pending probes that are due, then resumes or starts every probe that can
// go on, in a fixed order (pod UID, container, type) so runs replay identically.
func (m *Manager) Step(ctx context.Context) {
	now := m.cfg.Clock.Now()
	var fired []*task.Op
	kept := m.timers[:0]
	for _, t := range m.timers {
		if !t.at.After(now) {
			fired = append(fired, t.op)
		} else {
			kept = append(kept, t)
		}
	}
	m.timers = kept
	ws := make([]*worker, 0, len(m.workers))
	for _, w := range m.workers {
		ws = append(ws, w)
	}
	for _, op := range fired {
		op.Complete(nil)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].key.less(ws[j].key) })
	for _, w := range ws {
		m.stepWorker(ctx, w, now)
	}
}

func (k workerKey) less(o workerKey) bool {
	if k.uid != o.uid {
		return k.uid < o.uid
	}
	if k.container != o.container {
		return k.container < o.container
	}
	return k.probeType < o.probeType
}

// after returns an operation completed once the clock reaches now+d (a probe answer's delay).
func (m *Manager) after(d time.Duration) *task.Op {
	op := task.NewOp()
	m.timers = append(m.timers, timer{at: m.cfg.Clock.Now().Add(d), op: op})
	return op
}

func (m *Manager) stepWorker(ctx context.Context, w *worker, now time.Time) {
	if w.stopped {
		return
	}
	t := w.task
	if t == nil {
		if now.Before(w.next) {
			return
		}
		t = task.New(ctx, func(ctx context.Context) { w.keepGoing = w.doProbe(ctx) })
		w.task = t
	} else if !t.Ready() {
		return
	}

	if !t.Resume() {
		t.Waiting().OnDone(m.wake.Notify)
		return
	}
	w.task = nil
	w.next = now.Add(w.period)
	if w.manual {
		w.manual, w.next = false, now
	}
	keep := w.keepGoing
	if !keep {
		m.removeWorker(w)
	}
}

func (m *Manager) removeWorker(w *worker) {
	if w.stopped {
		return
	}
	w.stopped = true
	if m.workers[w.key] == w {
		delete(m.workers, w.key)
	}
	t := w.task
	w.task = nil
	if t != nil {
		t.Stop()
	}
	if w.containerID != "" {
		w.results.Remove(w.containerID)
	}
	for _, r := range []string{"successful", "failed", "unknown"} {
		m.total.DeleteLabelValues(w.probeType.String(), r, w.container.Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID))
	}
	m.duration.DeleteLabelValues(w.probeType.String(), w.container.Name, w.pod.Name, w.pod.Namespace)
}

// UpdatePodStatus sets each container's started and ready from the probe results, as
// upstream's prober manager does when the kubelet generates a pod status: without a startup
// probe a running container is started; once started, without a readiness probe it is ready,
// with one it is ready once the probe succeeded. A regular init container is ready once it
// exited 0. With ChangeContainerStatusOnKubeletRestart off, a container that was running
// before the kubelet started is also started when its status (the previous one, which the
// generator carried over) says so, and ready as its pod was until its readiness probe has a
// result (prober_manager.go:287-337).
func (m *Manager) UpdatePodStatus(pod *v1.Pod, s *v1.PodStatus) {
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		m.updateContainer(pod, cs, containerSpec(pod.Spec.Containers, cs.Name))
	}
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		if !isSidecar(pod, cs.Name) {
			started := cs.State.Running != nil
			cs.Started = &started
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
			continue
		}
		m.updateContainer(pod, cs, containerSpec(pod.Spec.InitContainers, cs.Name))
	}
}

func (m *Manager) updateContainer(pod *v1.Pod, cs *v1.ContainerStatus, spec *v1.Container) {
	id := container.ParseContainerID(cs.ContainerID).ID
	started := m.isContainerStarted(pod, cs, id)
	cs.Started = &started
	if !started {
		cs.Ready = false
		return
	}
	if r, ok := m.cfg.Readiness.Get(id); ok && r == results.Success {
		cs.Ready = true
		return
	}
	ready := !m.hasWorker(pod.UID, cs.Name, Readiness) // no readiness probe: ready
	if !ready {
		m.triggerManual(pod.UID, cs.Name, Readiness)
	}
	if !m.cfg.ChangeContainerStatusOnKubeletRestart && spec != nil {
		ready = m.readyAfterKubeletRestart(pod, cs, spec, id, ready)
	}
	cs.Ready = ready
}

// isContainerStarted is upstream's (prober_manager.go:287-308): a running container is
// started once its startup probe succeeded; before the probe has a result, with
// ChangeContainerStatusOnKubeletRestart off, when the status it is given says so (the
// previous status's, carried over for a running container); else when it has no startup
// probe.
func (m *Manager) isContainerStarted(pod *v1.Pod, cs *v1.ContainerStatus, id string) bool {
	if cs.State.Running == nil {
		return false
	}
	if r, ok := m.cfg.Startup.Get(id); ok {
		return r == results.Success
	}
	if !m.cfg.ChangeContainerStatusOnKubeletRestart && cs.Started != nil && *cs.Started {
		return true
	}
	return !m.hasWorker(pod.UID, cs.Name, Startup)
}

// readyAfterKubeletRestart is upstream's setReadyStateOnKubeletRestart
// (prober_manager.go:310-337), for a started container that is not ready by its probe: one
// running since before the kubelet started whose readiness probe has no result yet is ready,
// unless it has a readiness probe and its pod was not Ready. "Was" is the pod's own status,
// the API server's copy: a static pod's says nothing, so its containers with readiness
// probes wait for the probe as after v1.30's restart.
func (m *Manager) readyAfterKubeletRestart(pod *v1.Pod, cs *v1.ContainerStatus, spec *v1.Container, id string, ready bool) bool {
	if !m.runningBeforeStart(cs) {
		return ready
	}
	if !ready {
		if _, ok := m.cfg.Readiness.Get(id); !ok {
			ready = true
		}
	}
	if spec.ReadinessProbe != nil && !podReady(pod) {
		ready = false
	}
	return ready
}

// kubeletRestartGrace is how long before the kubelet's start a container must have started
// to count as one a restarted kubelet found running, not one it started itself (upstream's
// kubeletRestartGracePeriod, prober_manager.go:455-462).
const kubeletRestartGrace = 10 * time.Second

// runningBeforeStart reports whether the container runs since before the kubelet's start
// (less the grace): the kubelet restarted over it.
func (m *Manager) runningBeforeStart(cs *v1.ContainerStatus) bool {
	if cs.State.Running == nil {
		return false
	}
	t := cs.State.Running.StartedAt.Time
	return !t.IsZero() && t.Before(m.start.Add(-kubeletRestartGrace))
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func containerSpec(containers []v1.Container, name string) *v1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

func (m *Manager) hasWorker(uid types.UID, name string, t ProbeType) bool {
	_, ok := m.workers[workerKey{uid, name, t}]
	return ok
}

// triggerManual runs the readiness probe at once (upstream's manualTriggerCh): a container
// that just started need not wait a whole period to become ready. A worker still in its
// initial random delay keeps the trigger, as upstream's buffered channel does, and probes
// again right after its first probe.
func (m *Manager) triggerManual(uid types.UID, name string, t ProbeType) {
	w, ok := m.workers[workerKey{uid, name, t}]
	if ok {
		switch now := m.cfg.Clock.Now(); {
		case w.task != nil, !w.ran:
			w.manual = true
		case w.next.After(now):
			w.next = now
		}
	}
	if ok {
		m.wake.Notify()
	}
}

func isSidecar(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// worker is one probe of one container: upstream's worker, its loop replaced by next.
type worker struct {
	m         *Manager
	key       workerKey
	pod       *v1.Pod
	container v1.Container
	spec      *v1.Probe
	probeType ProbeType
	results   *results.Manager
	initial   results.Result
	period    time.Duration

	// the worker's state, stepped by the manager
	next      time.Time
	task      *task.Task
	stopped   bool
	manual    bool
	ran       bool // doProbe has run (past the initial random delay), probing or not
	keepGoing bool

	// touched by the probe task only
	containerID string
	onHold      bool
	lastResult  results.Result
	resultRun   int
}

func (m *Manager) newWorker(pod *v1.Pod, c v1.Container, t ProbeType, spec *v1.Probe, now time.Time) *worker {
	w := &worker{m: m, key: workerKey{pod.UID, c.Name, t}, pod: pod, container: c, spec: withDefaults(spec), probeType: t,
		lastResult: results.Unknown}
	switch t {
	case Liveness:
		w.results, w.initial = m.cfg.Liveness, results.Success
	case Readiness:
		w.results, w.initial = m.cfg.Readiness, results.Failure
	case Startup:
		w.results, w.initial = m.cfg.Startup, results.Unknown
	}
	w.period = time.Duration(w.spec.PeriodSeconds) * time.Second
	w.next = now
	// Probes of a kubelet that just started would all fire at once: each waits a random part
	// of its period first, as upstream.
	if w.period > now.Sub(m.start) {
		w.next = now.Add(time.Duration(m.rand.Float64() * float64(w.period)))
	}
	return w
}

// withDefaults is a copy of p with the API server's probe defaults.
func withDefaults(p *v1.Probe) *v1.Probe {
	p = p.DeepCopy()
	container.DefaultProbe(p)
	return p
}

// doProbe probes once and records the result; false stops the worker (upstream's doProbe).
func (w *worker) doProbe(ctx context.Context) bool {
	m := w.m
	w.ran = true
	start := m.cfg.Clock.Now()
	status, ok := m.cfg.Status.GetPodStatus(w.pod.UID)
	if !ok {
		klog.V(3).InfoS("No status for pod", "pod", klog.KObj(w.pod))
		return true
	}
	if status.Phase == v1.PodFailed || status.Phase == v1.PodSucceeded {
		klog.V(3).InfoS("Pod is terminated, exiting probe worker", "pod", klog.KObj(w.pod), "phase", status.Phase)
		return false
	}
	c, ok := containerStatus(status.ContainerStatuses, w.container.Name)
	if !ok || c.ContainerID == "" {
		c, ok = containerStatus(status.InitContainerStatuses, w.container.Name)
		if !ok || c.ContainerID == "" {
			klog.V(3).InfoS("Probe target container not found", "pod", klog.KObj(w.pod), "containerName", w.container.Name)
			return true
		}
	}
	id := container.ParseContainerID(c.ContainerID).ID
	if w.containerID != id {
		if w.containerID != "" {
			w.results.Remove(w.containerID)
		}
		w.containerID = id
		w.setInitial(&c)
		w.onHold = false
	}
	if w.onHold {
		return true
	}
	if c.State.Running == nil {
		klog.V(3).InfoS("Non-running container probed", "pod", klog.KObj(w.pod), "containerName", w.container.Name)
		w.results.Set(id, results.Failure, w.pod.UID)
		// Abort if the container will not be restarted: with ContainerRestartRules its own
		// restartPolicy and rules decide, and with RestartAllContainersOnContainerExits a
		// pod restarting all its containers brings it back too; without, the pod's policy
		// (a sidecar always comes back).
		if c.State.Terminated == nil {
			return true
		}
		if m.cfg.ContainerRestartRules {
			restartAll := m.cfg.RestartAllContainers
			return container.ContainerShouldRestart(&w.container, &w.pod.Spec, c.State.Terminated.ExitCode, restartAll) ||
				(restartAll && container.ShouldAllContainersRestart(w.pod, nil, &status))
		}
		return w.pod.Spec.RestartPolicy != v1.RestartPolicyNever || isSidecar(w.pod, w.container.Name)
	}
	if w.pod.DeletionTimestamp != nil && (w.probeType == Liveness || w.probeType == Startup) {
		klog.V(3).InfoS("Pod deletion requested, setting probe result to success", "probeType", w.probeType, "pod", klog.KObj(w.pod), "containerName", w.container.Name)
		w.results.Set(id, results.Success, w.pod.UID)
		return false
	}
	sinceStart := m.cfg.Clock.Since(c.State.Running.StartedAt.Time)
	if int32(sinceStart.Seconds()) < w.spec.InitialDelaySeconds {
		return true
	}
	if c.Started != nil && *c.Started {
		if w.probeType == Startup { // started: the startup probe has done its job
			return true
		}
	} else if w.probeType != Startup { // the others wait for the container to have started
		return true
	}
	result, err := w.probe(ctx, status, sinceStart)
	if err != nil {
		if errors.Is(err, task.ErrStopped) || ctx.Err() != nil {
			return true // the worker is going away
		}
		// A prober error: the result is thrown away before it is counted, as upstream
		// (worker.go:349-352), so the unknown series does not move.
		return true
	}
	switch result {
	case results.Success:
		m.total.WithLabelValues(w.probeType.String(), "successful", w.container.Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID)).Inc()
		m.duration.WithLabelValues(w.probeType.String(), w.container.Name, w.pod.Name, w.pod.Namespace).Observe(m.cfg.Clock.Since(start).Seconds())
	default:
		m.total.WithLabelValues(w.probeType.String(), "failed", w.container.Name, w.pod.Name, w.pod.Namespace, string(w.pod.UID)).Inc()
	}
	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = result, 1
	}
	if (result == results.Failure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(result == results.Success && w.resultRun < int(w.spec.SuccessThreshold)) {
		return true // the threshold is not reached: keep the previous result
	}
	w.results.Set(id, result, w.pod.UID)
	if (w.probeType == Liveness && result == results.Failure) || w.probeType == Startup {
		// A failed liveness probe restarts the container, and a startup probe's threshold,
		// either way, has settled the container's start: stop probing until a new container
		// ID shows (upstream worker.go:381, kubernetes#117153).
		w.onHold, w.resultRun = true, 0
	}
	return true
}

// setInitial records the initial result for a container the worker has not seen before
// (upstream worker.go:257-284). With ChangeContainerStatusOnKubeletRestart off, a container
// running since before the kubelet started gets none: a readiness probe's Failure would turn
// a ready container unready until the probe ran, a restart's flap. A sidecar's startup probe
// is then seeded Success when the status says it started, so that the pod's next containers
// are not held back waiting for a probe that will not run again (kubernetes#136910).
func (w *worker) setInitial(c *v1.ContainerStatus) {
	if w.m.cfg.ChangeContainerStatusOnKubeletRestart {
		w.results.Set(w.containerID, w.initial, w.pod.UID)
		return
	}
	if w.probeType == Startup && isSidecar(w.pod, w.container.Name) && c.Started != nil && *c.Started {
		w.results.Set(w.containerID, results.Success, w.pod.UID)
	}
	if !w.m.runningBeforeStart(c) {
		w.results.Set(w.containerID, w.initial, w.pod.UID)
	}
}

func containerStatus(statuses []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, s := range statuses {
		if s.Name == name {
			return s, true
		}
	}
	return v1.ContainerStatus{}, false
}

// probe runs the probe and records the Unhealthy event of a failure, as upstream's
// prober.probe. A probe's answer comes from the container's behaviour script: its probe keys
// say whether it passes, its probeDelay how long it takes. Exec probes run through the
// runtime's ExecSync, so runtime faults reach them, and in its simulated command table
// (pkg/shell), the one kubectl exec runs in: a command that exits non-zero fails the probe
// with its output, whatever the script says.
func (w *worker) probe(ctx context.Context, status v1.PodStatus, sinceStart time.Duration) (results.Result, error) {
	pass, output, err := w.run(ctx, status, sinceStart)
	if err != nil {
		if !errors.Is(err, task.ErrStopped) && ctx.Err() == nil {
			// Upstream's prober.probe (prober.go:107-108): a probe that errored has the
			// unknown result, which the log and the event say.
			klog.V(1).InfoS("Probe errored", "probeType", w.probeType, "pod", klog.KObj(w.pod), "podUID", w.pod.UID, "containerName", w.container.Name, "probeResult", probeUnknown, "err", err)
			w.event("%s probe errored and resulted in %s state: %s", w.probeType, probeUnknown, err)
		}
		return results.Failure, err
	}
	if !pass {
		klog.V(1).InfoS("Probe failed", "probeType", w.probeType, "pod", klog.KObj(w.pod), "podUID", w.pod.UID, "containerName", w.container.Name, "probeResult", "failure", "output", output)
		w.event("%s probe failed: %s", w.probeType, output)
		return results.Failure, nil
	}
	klog.V(3).InfoS("Probe succeeded", "probeType", w.probeType, "pod", klog.KObj(w.pod), "podUID", w.pod.UID, "containerName", w.container.Name)
	return results.Success, nil
}

// warn records a ProbeWarning event on the container (a probe that passed with a warning).
func (w *worker) warn(format string, args ...any) {
	ref := events.ContainerRef(w.pod, w.container.Name)
	w.m.cfg.Recorder.Eventf(ref, v1.EventTypeWarning, EventProbeWarning, format, args...)
}

func (w *worker) event(format string, args ...any) {
	ref := events.ContainerRef(w.pod, w.container.Name)
	w.m.cfg.Recorder.Eventf(ref, v1.EventTypeWarning, EventUnhealthy, format, args...)
}

// run answers the probe: whether it passed, the output a failure shows, or an error (the
// probe could not run).
func (w *worker) run(ctx context.Context, status v1.PodStatus, sinceStart time.Duration) (bool, string, error) {
	beh, _ := behavior.Parse(w.pod.Annotations, w.container.Name) // a bad script fails the container's start, not its probes
	scripted := beh.ProbePasses(w.probeType.String(), sinceStart)
	timeout := time.Duration(w.spec.TimeoutSeconds) * time.Second
	h := w.spec.ProbeHandler
	switch {
	case h.Exec != nil:
		cmd := h.Exec.Command
		resp, err := w.m.cfg.Runtime.ExecSync(ctx, w.containerID, cmd, timeout)
		switch {
		case errors.Is(err, cri.ErrDeadlineExceeded):
			return false, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		case err != nil:
			return false, "", err
		case resp.ExitCode != 0:
			// As the kubelet's exec prober: the command's combined output is the failure's.
			return false, string(resp.Stdout) + string(resp.Stderr), nil
		case !scripted:
			return false, scriptedFailure(w), nil
		}
		return true, "", nil
	case (h.HTTPGet != nil || h.TCPSocket != nil || h.GRPC != nil) && w.m.cfg.Network != nil && !w.scripted():
		return w.netProbe(status, timeout)
	case h.HTTPGet != nil, h.TCPSocket != nil, h.GRPC != nil:
		delay := beh.ProbeDelay
		if delay > timeout {
			delay = timeout
		}
		if delay > 0 {
			if err := task.Await(ctx, w.m.after(delay)); err != nil {
				return false, "", err
			}
		}
		target, err := w.target(status)
		if err != nil {
			return false, "", err
		}
		if beh.ProbeDelay > timeout {
			return false, timeoutOutput(h, target, timeout), nil
		}
		if !scripted {
			return false, failureOutput(h, target), nil
		}
		return true, "", nil
	}
	return false, "", fmt.Errorf("missing probe handler for %s:%s", w.pod.Name, w.container.Name)
}

// scripted reports whether a behaviour annotation scripts the container (its probes
// answer as the script says, not as a program would).
func (w *worker) scripted() bool {
	_, ok := w.pod.Annotations[behavior.AnnotationKey(w.container.Name)]
	return ok
}

// netProbe sends the probe to what the container's program serves, on the pod network,
// as the kubelet's http, tcp and grpc probers dial the pod IP.
func (w *worker) netProbe(status v1.PodStatus, timeout time.Duration) (bool, string, error) {
	h := w.spec.ProbeHandler
	target, err := w.target(status)
	if err != nil {
		return false, "", err
	}
	host, portStr, err := net.SplitHostPort(hostPortOf(target))
	if err != nil {
		return false, "", err
	}
	port, _ := strconv.Atoi(portStr)
	netw := w.m.cfg.Network
	now := w.m.cfg.Clock.Now()
	switch {
	case h.HTTPGet != nil:
		return w.httpProbe(target, host, port, now)
	case h.TCPSocket != nil:
		if err := netw.Connect(nil, host, port); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	default:
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		req := &simnet.Request{Method: http.MethodPost, Target: GRPCHealthPath, Body: []byte(service), Now: now, Header: http.Header{}}
		resp, err := netw.HTTP(nil, host, port, req)
		if err != nil {
			return false, fmt.Sprintf("timeout: failed to connect service %q within %v: context deadline exceeded", target, timeout), nil
		}
		if answer := string(resp.Body); resp.Status != http.StatusOK || answer != "SERVING" {
			if answer == "" {
				answer = "UNKNOWN"
			}
			return false, fmt.Sprintf("service unhealthy (responded with %q)", answer), nil
		}
		return true, "", nil
	}
}

// maxRedirects is Go's http.Client's limit, which the kubelet's redirect checker keeps.
const maxRedirects = 10

// httpProbe is the kubelet's HTTP prober (pkg/probe/http): a GET with its headers that
// follows redirects to the same host (up to 10) and stops at one to another host, which
// passes with a ProbeWarning event; 2xx and 3xx pass, anything else fails.
func (w *worker) httpProbe(target, host string, port int, now time.Time) (bool, string, error) {
	h := w.spec.ProbeHandler.HTTPGet
	u, err := url.Parse(target)
	if err != nil {
		return false, "", err
	}
	for redirects := 0; ; redirects++ {
		req := &simnet.Request{Method: http.MethodGet, Target: u.RequestURI(), Header: http.Header{}, Now: now}
		req.Header.Set("User-Agent", w.m.userAgent)
		req.Header.Set("Accept", "*/*")
		for _, hd := range h.HTTPHeaders {
			req.Header.Add(hd.Name, hd.Value)
		}
		if v := req.Header.Get("Host"); v != "" {
			req.Host = v
		}
		resp, err := w.m.cfg.Network.HTTP(nil, host, port, req)
		if err != nil {
			return false, fmt.Sprintf("Get %q: %v", u.String(), err), nil
		}
		if resp.Status < 200 || resp.Status >= 400 {
			return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.Status), nil
		}
		if resp.Status < 300 {
			return true, "", nil
		}
		loc := resp.Header.Get("Location")
		next, err := u.Parse(loc)
		if loc == "" || err != nil || next.Hostname() != u.Hostname() {
			// Go's client hands back the redirect itself: the probe passes, with a warning.
			w.warn("%s probe warning: Probe terminated redirects, Response body: %s", w.probeType, resp.Body)
			return true, "", nil
		}
		if redirects+1 >= maxRedirects {
			return false, fmt.Sprintf("Get %q: stopped after %d redirects", next.String(), maxRedirects), nil
		}
		u = next
		if p := u.Port(); p != "" {
			port, _ = strconv.Atoi(p)
		} else if u.Scheme == "https" {
			port = 443
		} else {
			port = 80
		}
	}
}

// GRPCHealthPath is where a simulated gRPC server answers grpc.health.v1.Health/Check:
// the body of the request is the service, the answer's body its serving status.
const GRPCHealthPath = "/grpc.health.v1.Health/Check"

func httpPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return p
}

// hostPortOf is the host:port of a probe target (a URL or host:port).
func hostPortOf(target string) string {
	if i := strings.Index(target, "://"); i >= 0 {
		target = target[i+3:]
	}
	hp, _, _ := strings.Cut(target, "/")
	return hp
}

func scriptedFailure(w *worker) string {
	return fmt.Sprintf("probe scripted to fail by %s", behavior.AnnotationKey(w.container.Name))
}

// target is the host:port (or URL) the probe reaches, as the kubelet resolves it: the pod IP
// unless the probe names a host, and a named port looked up in the container's ports.
func (w *worker) target(status v1.PodStatus) (string, error) {
	h := w.spec.ProbeHandler
	host := status.PodIP
	var port intstr.IntOrString
	switch {
	case h.HTTPGet != nil:
		if h.HTTPGet.Host != "" {
			host = h.HTTPGet.Host
		}
		port = h.HTTPGet.Port
	case h.TCPSocket != nil:
		if h.TCPSocket.Host != "" {
			host = h.TCPSocket.Host
		}
		port = h.TCPSocket.Port
	case h.GRPC != nil:
		port = intstr.FromInt32(h.GRPC.Port)
	}
	p, err := resolvePort(port, &w.container)
	if err != nil {
		return "", err
	}
	hostPort := net.JoinHostPort(host, strconv.Itoa(p))
	if h.HTTPGet != nil {
		scheme := strings.ToLower(string(h.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		path := h.HTTPGet.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		return scheme + "://" + hostPort + path, nil
	}
	return hostPort, nil
}

func resolvePort(port intstr.IntOrString, c *v1.Container) (int, error) {
	if port.Type == intstr.Int {
		if p := port.IntValue(); p > 0 && p < 65536 {
			return p, nil
		}
		return 0, fmt.Errorf("invalid port number: %v", port.IntValue())
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port: %v in %v", port.StrVal, c.Name)
}

// failureOutput is what a failing probe of each kind reports upstream.
func failureOutput(h v1.ProbeHandler, target string) string {
	switch {
	case h.HTTPGet != nil:
		return "HTTP probe failed with statuscode: 503"
	case h.TCPSocket != nil:
		return fmt.Sprintf("dial tcp %s: connect: connection refused", target)
	}
	return `service unhealthy (responded with "NOT_SERVING")`
}

// timeoutOutput is what a probe that timed out reports upstream.
func timeoutOutput(h v1.ProbeHandler, target string, timeout time.Duration) string {
	switch {
	case h.HTTPGet != nil:
		return fmt.Sprintf("Get %q: context deadline exceeded (Client.Timeout exceeded while awaiting headers)", target)
	case h.TCPSocket != nil:
		return fmt.Sprintf("dial tcp %s: i/o timeout", target)
	}
	return fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
}

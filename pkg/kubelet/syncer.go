package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
	"github.com/minikubelet/minikubelet/pkg/podworkers"
)

// PodRuntime is the part of kuberuntime.Manager the syncer drives.
type PodRuntime interface {
	SyncPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, restartAllContainers bool) kuberuntime.PodSyncResult
	KillPod(ctx context.Context, pod *v1.Pod, runningPod container.Pod, gracePeriodOverride *int64) error
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)
	// WithTerminationMessages adds exited containers' termination messages to a status.
	WithTerminationMessages(ctx context.Context, podStatus *container.PodStatus) *container.PodStatus
}

var _ PodRuntime = (*kuberuntime.Manager)(nil)

// SyncerConfig configures a Syncer.
type SyncerConfig struct {
	// Runtime runs pods (a *kuberuntime.Manager). Required.
	Runtime PodRuntime
	// Status stores generated statuses. Required.
	Status *podstatus.Manager
	// Generator builds statuses; its Reasons should be Reasons below. Required.
	Generator *podstatus.Generator
	// Reasons receives each sync's container start failures. Required.
	Reasons *podstatus.ReasonCache
	// Clock measures pod start latency. Required.
	Clock clock.PassiveClock
	// Recorder receives FailedKillPod events. Nil drops them.
	Recorder events.Recorder
	// Registry receives pod_start_duration_seconds. Nil keeps it unregistered.
	Registry *metrics.Registry
	// Probes is the prober manager: SyncPod makes sure the pod is probed, a terminating pod
	// loses its liveness and startup probes, a terminated one all of them. Nil: no probes.
	Probes Probes
	// Prepare readies what a pod's containers need before the runtime creates them: its
	// directories, files and volumes (upstream's makePodDataDirs and
	// WaitForAttachAndMount). An error fails the sync and the containers wait; the next
	// sync tries again. Nil: nothing to prepare.
	Prepare func(ctx context.Context, pod *v1.Pod) error
	// AfterSync sees each SyncPod's runtime result (a failed in-place resize); true when
	// it changed what the pod's status shows, which is then stored again. Nil: none.
	AfterSync func(pod *v1.Pod, result kuberuntime.PodSyncResult) bool
	// RestartAllContainers is the RestartAllContainersOnContainerExits gate: a pod whose
	// status has AllContainersRestarting True has all its containers reset by the runtime.
	RestartAllContainers bool
	// Requeue asks for another sync of the pod as soon as the runtime's state after this
	// one is known (the pod workers' UpdatePod): after a restart of all containers removed
	// them, so they start again without waiting for the resync. Nil: none.
	Requeue func(pod *v1.Pod)
	// RequestRelist asks the PLEG to relist the pod (v1.37's post-sync relist). Nil: none.
	RequestRelist func(ctx context.Context, uid types.UID)
}

// Probes is what the sync functions tell the prober manager (upstream's probeManager calls).
type Probes interface {
	AddPod(pod *v1.Pod)
	StopLivenessAndStartup(pod *v1.Pod)
	RemovePod(pod *v1.Pod)
}

// Syncer is the kubelet's SyncPod / SyncTerminatingPod / SyncTerminatedPod: it generates and
// stores the pod status, then asks the runtime manager to converge or to stop the pod.
// Its callers are the pod syncs, tasks of the node's owner: it keeps no locks.
type Syncer struct {
	runtime  PodRuntime
	status   *podstatus.Manager
	gen      *podstatus.Generator
	reasons  *podstatus.ReasonCache
	probes   Probes
	prepare  func(ctx context.Context, pod *v1.Pod) error
	after    func(pod *v1.Pod, result kuberuntime.PodSyncResult) bool
	clock    clock.PassiveClock
	recorder events.Recorder
	start    prometheus.Histogram

	restartAll bool // the RestartAllContainersOnContainerExits gate
	requeue    func(pod *v1.Pod)
	relist     func(ctx context.Context, uid types.UID)

	firstSeen map[types.UID]time.Time
	observed  map[types.UID]bool
}

var _ podworkers.SyncHandler = (*Syncer)(nil)

// NewSyncer validates cfg and returns a Syncer.
func NewSyncer(cfg SyncerConfig) (*Syncer, error) {
	switch {
	case cfg.Runtime == nil:
		return nil, errors.New("syncer config: Runtime is required")
	case cfg.Status == nil:
		return nil, errors.New("syncer config: Status is required")
	case cfg.Generator == nil:
		return nil, errors.New("syncer config: Generator is required")
	case cfg.Reasons == nil:
		return nil, errors.New("syncer config: Reasons is required")
	case cfg.Clock == nil:
		return nil, errors.New("syncer config: Clock is required")
	}
	if cfg.Recorder == nil {
		cfg.Recorder = events.Discard{}
	}
	name := metrics.PodStartDuration
	if cfg.Registry != nil {
		name = cfg.Registry.Name(name)
	}
	start := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    name,
		Help:    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
		Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
	})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(start)
	}
	return &Syncer{
		runtime: cfg.Runtime, status: cfg.Status, gen: cfg.Generator, reasons: cfg.Reasons,
		clock: cfg.Clock, recorder: cfg.Recorder, start: start, probes: cfg.Probes, prepare: cfg.Prepare, after: cfg.AfterSync,
		requeue: cfg.Requeue, restartAll: cfg.RestartAllContainers, relist: cfg.RequestRelist,
		firstSeen: map[types.UID]time.Time{}, observed: map[types.UID]bool{},
	}, nil
}

// firstSeenTime is the source's kubernetes.io/config.seen annotation, or when this syncer
// first saw the pod.
func (s *Syncer) firstSeenTime(pod *v1.Pod) time.Time {
	if t, ok := s.firstSeen[pod.UID]; ok {
		return t
	}
	t := s.clock.Now()
	if v, ok := pod.Annotations[kubetypes.ConfigFirstSeenAnnotationKey]; ok {
		if parsed, err := time.Parse(time.RFC3339Nano, v); err == nil {
			t = parsed
		}
	}
	s.firstSeen[pod.UID] = t
	return t
}

// Active deadline (upstream activeDeadlineHandler): a pod active on the node for its
// spec.activeDeadlineSeconds, counted from its status' startTime, is failed with this reason
// and message, and its containers are stopped.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// PastActiveDeadline reports whether the pod has been active for its activeDeadlineSeconds,
// from the start time of status (the status manager's, else the pod's own).
func PastActiveDeadline(pod *v1.Pod, status v1.PodStatus, now time.Time) bool {
	if pod.Spec.ActiveDeadlineSeconds == nil || status.StartTime == nil || status.StartTime.IsZero() {
		return false
	}
	// cri.Seconds saturates: the API accepts any positive deadline, and a huge one must
	// not wrap round to a negative duration that fails the pod at once.
	return now.Sub(status.StartTime.Time) >= cri.Seconds(*pod.Spec.ActiveDeadlineSeconds)
}

// generate is the status generator's status with the kubelet's pod sync handlers applied
// as upstream's generateAPIPodStatus applies them: a pod past its active deadline is Failed
// with DeadlineExceeded (and a Normal event says so), unless the API already shows it
// finished (no transition out of a terminal phase). Exited containers carry their
// termination messages, cut to the pod's share as the status manager cuts them.
func (s *Syncer) generate(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, old v1.PodStatus, podIsTerminal bool) v1.PodStatus {
	api := s.gen.Generate(pod, s.runtime.WithTerminationMessages(ctx, podStatus), old, podIsTerminal)
	truncateTerminationMessages(pod, &api)
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return api
	}
	if PastActiveDeadline(pod, old, s.clock.Now()) {
		s.recorder.Eventf(events.PodRef(pod), v1.EventTypeNormal, ReasonDeadlineExceeded, "%s", MessageDeadlineExceeded)
		api.Phase, api.Reason, api.Message = v1.PodFailed, ReasonDeadlineExceeded, MessageDeadlineExceeded
	}
	return api
}

func (s *Syncer) previousStatus(pod *v1.Pod) (v1.PodStatus, bool) {
	if old, ok := s.status.GetPodStatus(pod.UID); ok {
		return old, true
	}
	return *pod.Status.DeepCopy(), false
}

// SyncPod stores the pod's status and, unless the pod is terminal, lets the runtime converge
// it. Start failures become waiting reasons; back-offs are not errors.
func (s *Syncer) SyncPod(ctx context.Context, updateType kubetypes.SyncPodType, pod *v1.Pod, podStatus *container.PodStatus) (bool, error) {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("SyncPod enter", "pod", klog.KObj(pod), "podUID", pod.UID, "updateType", updateType)
	firstSeen := s.firstSeenTime(pod)

	old, _ := s.previousStatus(pod)
	api := s.generate(ctx, pod, podStatus, old, false)
	if api.Phase == v1.PodSucceeded || api.Phase == v1.PodFailed {
		s.status.SetPodStatus(pod, api)
		return true, nil
	}
	if api.Phase == v1.PodRunning && old.Phase != v1.PodRunning {
		first := !s.observed[pod.UID]
		s.observed[pod.UID] = true
		if first {
			s.start.Observe(s.clock.Since(firstSeen).Seconds())
		}
	}
	s.status.SetPodStatus(pod, api)
	if s.probes != nil {
		s.probes.AddPod(pod) // ensure the pod is being probed, as upstream
	}
	if s.prepare != nil {
		if err := s.prepare(ctx, pod); err != nil {
			return false, err
		}
	}

	restarting := s.restartAll && hasCondition(api.Conditions, v1.AllContainersRestarting)
	result := s.runtime.SyncPod(ctx, pod, podStatus, restarting)
	result.RecordReasons(s.reasons, pod.UID)
	if restarting && result.Error() == nil && removedContainers(result) && s.requeue != nil {
		// As upstream: the containers are gone, so the next sync (which finds the runtime
		// empty, turns AllContainersRestarting False and starts the pod again) comes now
		// rather than at the resync. It cannot loop: that sync resets nothing.
		s.requeue(pod)
	}
	changed := s.after != nil && s.after(pod, result)
	if result.StartFailed() || changed {
		// Show why the container waits (CrashLoopBackOff, ErrImagePull ...) at once. Upstream
		// writes it only at the pod's next sync, up to a back-off later; the runtime state did
		// not change, so this status is the one that sync would write.
		old, _ = s.previousStatus(pod)
		st := s.generate(ctx, pod, podStatus, old, false)
		if createdSandbox(result) {
			// podStatus predates the sandbox this sync made; the OnPodSandboxReady callback
			// already set PodReadyToStartContainers True, which the next sync keeps.
			keepCondition(&st, &old, v1.PodReadyToStartContainers)
		}
		s.status.SetPodStatus(pod, st)
	}
	// A container in back-off fails the sync ("Error syncing pod, skipping"); as upstream
	// since v1.33 the error carries the earliest crash-loop back-off's end, when the pod
	// worker syncs the pod again (plus its jitter), so the container restarts then.
	err := result.Error()
	if err == nil && len(result.SyncResults) > 0 && s.relist != nil {
		// v1.37's postSync (kubernetes#137362): the sync changed the runtime, so the PLEG
		// relists this pod now instead of at its next relist, and the pod worker's wait for
		// data newer than this sync ends in milliseconds.
		s.relist(ctx, pod.UID)
	}
	if until, ok := result.CrashLoopBackOffUntil(); ok && err != nil {
		err = &podworkers.BackOffError{Until: until, Err: err}
	}
	return false, err
}

// hasCondition reports whether conditions has t with status True.
func hasCondition(conditions []v1.PodCondition, t v1.PodConditionType) bool {
	for _, c := range conditions {
		if c.Type == t && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// removedContainers reports whether the sync removed a container.
func removedContainers(result kuberuntime.PodSyncResult) bool {
	for _, r := range result.SyncResults {
		if r.Action == kuberuntime.RemoveContainer && r.Error == nil {
			return true
		}
	}
	return false
}

// SyncTerminatingPod stops every container of the pod within gracePeriod, checks that none
// runs any more and stores the final status (now allowed to be Succeeded or Failed).
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("SyncTerminatingPod enter", "pod", klog.KObj(pod), "podUID", pod.UID)
	if s.probes != nil {
		// A container being stopped must not be restarted by a failing probe.
		s.probes.StopLivenessAndStartup(pod)
	}
	old, _ := s.previousStatus(pod)
	api := s.generate(ctx, pod, podStatus, old, false)
	if podStatusFn != nil {
		podStatusFn(&api)
	}
	s.status.SetPodStatus(pod, api)

	if gracePeriod != nil {
		logger.V(4).Info("Pod terminating with grace period", "pod", klog.KObj(pod), "podUID", pod.UID, "gracePeriod", *gracePeriod)
	}
	running := kuberuntime.ConvertPodStatusToRunningPod(podStatus)
	if running.ID == "" {
		running.ID, running.Name, running.Namespace = pod.UID, pod.Name, pod.Namespace
	}
	if err := s.runtime.KillPod(ctx, pod, running, gracePeriod); err != nil {
		s.recorder.Eventf(events.PodRef(pod), v1.EventTypeWarning, "FailedKillPod", "error killing pod: %v", err)
		return fmt.Errorf("kill pod %q: %w", kuberuntime.FormatPod(pod), err)
	}

	// KillPod stopped what the cache knew about; read the runtime again so a container
	// started meanwhile is caught and so the final status has the exit codes.
	stopped, err := s.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return fmt.Errorf("read status of pod %q before final termination: %w", kuberuntime.FormatPod(pod), err)
	}
	if podStatus != nil && len(stopped.IPs) == 0 {
		stopped.IPs = podStatus.IPs // the sandbox is down; keep the IP the pod had
	}
	var stillRunning []string
	for _, c := range stopped.ContainerStatuses {
		if c.State == container.ContainerStateRunning {
			stillRunning = append(stillRunning, c.ID.String())
		}
	}
	if len(stillRunning) > 0 {
		return fmt.Errorf("detected running containers after a successful KillPod, CRI violation: %v", stillRunning)
	}
	logger.V(4).Info("Pod termination stopped all running containers", "pod", klog.KObj(pod), "podUID", pod.UID)

	old, _ = s.previousStatus(pod)
	s.status.SetPodStatus(pod, s.generate(ctx, pod, stopped, old, true))
	return nil
}

// SyncTerminatingRuntimePod stops an orphaned runtime pod with a 1s grace period (the
// runtime's 2s minimum applies), as the kubelet does for pods it lost track of.
func (s *Syncer) SyncTerminatingRuntimePod(ctx context.Context, runningPod *container.Pod) error {
	pod := runningPod.ToAPIPod()
	klog.FromContext(ctx).V(4).Info("Orphaned running pod terminating without grace period", "pod", klog.KObj(pod), "podUID", pod.UID)
	grace := int64(1)
	if err := s.runtime.KillPod(ctx, pod, *runningPod, &grace); err != nil {
		s.recorder.Eventf(events.PodRef(pod), v1.EventTypeWarning, "FailedKillPod", "error killing pod: %v", err)
		return fmt.Errorf("kill orphaned pod %q: %w", kuberuntime.FormatPod(pod), err)
	}
	return nil
}

// SyncTerminatedPod writes the pod's terminal status and forgets its per-pod state.
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) error {
	klog.FromContext(ctx).V(4).Info("SyncTerminatedPod enter", "pod", klog.KObj(pod), "podUID", pod.UID)
	old, _ := s.previousStatus(pod)
	s.status.SetPodStatus(pod, s.generate(ctx, pod, podStatus, old, true))
	s.status.TerminatePod(pod)
	s.reasons.ForgetPod(pod.UID)
	if s.probes != nil {
		s.probes.RemovePod(pod)
	}
	delete(s.firstSeen, pod.UID)
	delete(s.observed, pod.UID)
	return nil
}

// truncateTerminationMessages cuts each terminated state's message to the pod's share of
// MaxPodTerminationMessageLogLength (12 KiB over its init and app containers), as the
// status manager's normalizeStatus does before storing a status.
func truncateTerminationMessages(pod *v1.Pod, status *v1.PodStatus) {
	limit := kuberuntime.MaxPodTerminationMessageLogLength
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers); n > 0 {
		limit /= n
	}
	// A cut state is a copy: the generator may share the previous status' states.
	cut := func(t **v1.ContainerStateTerminated) {
		if *t != nil && len((*t).Message) > limit {
			c := **t
			c.Message = c.Message[:limit]
			*t = &c
		}
	}
	for _, list := range [][]v1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range list {
			cut(&list[i].State.Terminated)
			cut(&list[i].LastTerminationState.Terminated)
		}
	}
}

// createdSandbox says whether the sync made the pod a new sandbox.
func createdSandbox(result kuberuntime.PodSyncResult) bool {
	for _, r := range result.SyncResults {
		if r.Action == kuberuntime.CreatePodSandbox && r.Error == nil {
			return true
		}
	}
	return false
}

// keepCondition gives st the condition of type t that old has, if it has one.
func keepCondition(st, old *v1.PodStatus, t v1.PodConditionType) {
	for _, c := range old.Conditions {
		if c.Type != t {
			continue
		}
		for i := range st.Conditions {
			if st.Conditions[i].Type == t {
				st.Conditions[i] = c
				return
			}
		}
		return
	}
}

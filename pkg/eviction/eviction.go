package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/events"
	evictionapi "github.com/minikubelet/minikubelet/pkg/eviction/api"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// Upstream's constants and messages (pkg/kubelet/eviction, v1.37).
const (
	// DefaultMonitoringPeriod is evictionMonitoringPeriod: how often synchronize runs.
	DefaultMonitoringPeriod = 10 * time.Second
	// PodCleanupTimeout bounds the wait for an evicted pod's cleanup.
	PodCleanupTimeout = 30 * time.Second
	// cleanupPollPeriod is how often a pending cleanup is checked.
	cleanupPollPeriod = time.Second
	// hardEvictionGracePeriod is a hard eviction's kill grace
	// (immediateEvictionGracePeriodSeconds).
	hardEvictionGracePeriod int64 = 1

	// Reason is an evicted pod's status reason, its event's and an admission rejection's.
	Reason = "Evicted"
	// EventThresholdMet is the node's event when a threshold is met.
	EventThresholdMet = "EvictionThresholdMet"
	// ConditionReason is the DisruptionTarget condition's reason on an evicted pod.
	ConditionReason = v1.PodReasonTerminationByKubelet

	nodeLowMessageFmt    = "The node was low on resource: %v. "
	thresholdMetFmt      = "Threshold quantity: %v, available: %v. "
	containerMessageFmt  = "Container %s was using %s, request is %s, has larger consumption of %v. "
	podMessageFmt        = "Pod %s was using %s, request is %s, has larger consumption of %v. "
	nodeConditionMessage = "The node had condition: %v. "

	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	// The evictions metric's signals of the limit evictions.
	signalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
	signalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	signalEmptyDirFsLimit           = "emptydirfs.limit"
)

// resourcePIDs is the resource a pid.available eviction reclaims (upstream's "pids").
const resourcePIDs v1.ResourceName = "pids"

// signalResource is the resource each signal reclaims.
var signalResource = map[evictionapi.Signal]v1.ResourceName{
	evictionapi.SignalMemoryAvailable:            v1.ResourceMemory,
	evictionapi.SignalAllocatableMemoryAvailable: v1.ResourceMemory,
	evictionapi.SignalNodeFsAvailable:            v1.ResourceEphemeralStorage,
	evictionapi.SignalImageFsAvailable:           v1.ResourceEphemeralStorage,
	evictionapi.SignalContainerFsAvailable:       v1.ResourceEphemeralStorage,
	evictionapi.SignalPIDAvailable:               resourcePIDs,
}

// reclaimOrder orders the thresholds to act on: memory first, as upstream.
var reclaimOrder = map[v1.ResourceName]int{v1.ResourceMemory: 0, v1.ResourceEphemeralStorage: 1, resourcePIDs: 2}

// Threshold is a hard threshold or a soft one (with its grace period), with its minimum
// reclaim.
type Threshold struct {
	evictionapi.Threshold
	// Soft marks an evictionSoft threshold; GracePeriod is how long it must stay crossed
	// before pods are evicted.
	Soft        bool
	GracePeriod time.Duration
	// MinReclaim is how far below the threshold the signal must get before a met
	// threshold counts as resolved (evictionMinimumReclaim, a quantity or a percentage of
	// the capacity); nil: none.
	MinReclaim *evictionapi.Threshold
}

// ContainerUsage is one container's use, as the summary API reports it.
type ContainerUsage struct {
	Name                  string
	MemoryWorkingSetBytes int64
	DiskBytes             int64 // rootfs plus logs
}

// PodUsage is one pod's use.
type PodUsage struct {
	MemoryWorkingSetBytes int64
	DiskBytes             int64
	Processes             int64
	Containers            []ContainerUsage
	// Volumes is what each of the pod's measured volumes (its emptyDirs) holds, by name.
	Volumes map[string]int64
}

// Config is what the manager needs.
type Config struct {
	Clock clock.PassiveClock
	// Thresholds are the hard and soft thresholds.
	Thresholds []Threshold
	// PressureTransitionPeriod holds a condition after its threshold was last met
	// (evictionPressureTransitionPeriod).
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds caps a soft eviction's kill grace (evictionMaxPodGracePeriod).
	MaxPodGracePeriodSeconds int64
	// MonitoringPeriod is how often synchronize runs; default DefaultMonitoringPeriod.
	MonitoringPeriod time.Duration
	// Observe returns the signals' available amounts and capacities. Cheap, non-blocking.
	Observe func() map[evictionapi.Signal]evictionapi.Observation
	// ActivePods are the pods that may be evicted (admitted, not terminating).
	ActivePods func() []*v1.Pod
	// Usage returns each pod's use by UID (the stats summary); it may call the runtime.
	Usage func(ctx context.Context) (map[types.UID]PodUsage, error)
	// KillPod terminates a pod with the grace period and status change given; the Op
	// completes once its containers are stopped.
	KillPod func(pod *v1.Pod, gracePeriod int64, status func(*v1.PodStatus)) (*task.Op, error)
	// ReclaimDisk is the node-level reclaim tried before evicting for a disk signal: the
	// kubelet removes every dead container and every unused image. Nil: none.
	ReclaimDisk func(ctx context.Context) error
	// Recorder receives the Evicted and EvictionThresholdMet events; NodeRef is the node.
	Recorder events.Recorder
	NodeRef  *v1.ObjectReference
	// Registry gets evictions{eviction_signal}. Nil: none.
	Registry *metrics.Registry
	// PodObservedGenerationTracking is the gate of that name: the DisruptionTarget
	// condition carries the pod's generation (upstream v1.37, where it is GA and locked on).
	PodObservedGenerationTracking bool
}

// Manager is the eviction manager: one entry of the loop table (Due, Step).
type Manager struct {
	cfg       Config
	evictions *prometheus.CounterVec

	next          time.Time
	conditions    []v1.NodeConditionType // pressure conditions now, held for the transition period
	firstObserved map[Threshold]time.Time
	lastObserved  map[v1.NodeConditionType]time.Time
	thresholdsMet []Threshold
	waiting       *task.Op // the evicted pod's cleanup
	waitingPod    string
	waitingSince  time.Time
}

// New validates cfg and returns a manager whose first synchronize is due at once.
func New(cfg Config) (*Manager, error) {
	if cfg.Clock == nil || cfg.Observe == nil || cfg.ActivePods == nil || cfg.Usage == nil || cfg.KillPod == nil {
		return nil, errors.New("eviction: Config.Clock, Observe, ActivePods, Usage and KillPod are required")
	}
	if cfg.MonitoringPeriod <= 0 {
		cfg.MonitoringPeriod = DefaultMonitoringPeriod
	}
	if cfg.Recorder == nil {
		cfg.Recorder = events.Discard{}
	}
	m := &Manager{cfg: cfg, next: cfg.Clock.Now(), firstObserved: map[Threshold]time.Time{}, lastObserved: map[v1.NodeConditionType]time.Time{}}
	if cfg.Registry != nil {
		m.evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: cfg.Registry.Name("evictions"),
			Help: "Cumulative number of pod evictions by eviction signal",
		}, []string{"eviction_signal"})
		cfg.Registry.MustRegister(m.evictions)
	}
	return m, nil
}

// Due is when Step next has work.
func (m *Manager) Due(time.Time) time.Time {
	return m.next
}

// Step runs synchronize when due. While an evicted pod is being cleaned up (at most
// PodCleanupTimeout) it only checks the cleanup, as upstream's synchronize waits for it
// before returning; the core never blocks on it.
func (m *Manager) Step(ctx context.Context) {
	logger := klog.FromContext(ctx)
	now := m.cfg.Clock.Now()
	if now.Before(m.next) {
		return
	}
	if m.waiting != nil {
		done := m.waiting.Done()
		if !done && now.Sub(m.waitingSince) < PodCleanupTimeout {
			m.next = now.Add(cleanupPollPeriod)
			return
		}
		if done {
			logger.Info("Eviction manager: pods successfully cleaned up", "pods", m.waitingPod)
		} else {
			logger.Info("Eviction manager: timed out waiting for pods to be cleaned up", "pods", m.waitingPod)
		}
		m.waiting = nil
	}
	m.next = now.Add(m.cfg.MonitoringPeriod)
	m.synchronize(ctx, now)
}

// IsUnderPressure reports whether cond (MemoryPressure, DiskPressure, PIDPressure) holds.
func (m *Manager) IsUnderPressure(cond v1.NodeConditionType) bool {
	for _, c := range m.conditions {
		if c == cond {
			return true
		}
	}
	return false
}

// met reports whether t is crossed; with minReclaim, whether the signal is not yet
// MinReclaim below the threshold.
func met(t Threshold, o evictionapi.Observation, minReclaim bool) bool {
	value := t.Value(o.Capacity)
	if minReclaim && t.MinReclaim != nil {
		value += t.MinReclaim.Value(o.Capacity)
	}
	return o.Available < value
}

func (m *Manager) synchronize(ctx context.Context, now time.Time) {
	logger := klog.FromContext(ctx)
	obs := m.cfg.Observe()
	var thresholds []Threshold
	for _, t := range m.cfg.Thresholds {
		if o, ok := obs[t.Signal]; ok && met(t, o, false) {
			thresholds = append(thresholds, t)
		}
	}
	// A threshold met before stays met until its minimum reclaim is reached.
	for _, t := range m.thresholdsMet {
		if o, ok := obs[t.Signal]; ok && met(t, o, true) && !contains(thresholds, t) {
			thresholds = append(thresholds, t)
		}
	}
	first := map[Threshold]time.Time{}
	for _, t := range thresholds {
		at, ok := m.firstObserved[t]
		if !ok {
			at = now
		}
		first[t] = at
		m.lastObserved[evictionapi.SignalCondition(t.Signal)] = now
	}
	m.firstObserved = first
	// The conditions come from every threshold met, grace period or not, and hold for
	// the transition period.
	m.conditions = m.conditions[:0]
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if last, ok := m.lastObserved[c]; ok && now.Sub(last) < m.cfg.PressureTransitionPeriod || ok && last.Equal(now) {
			m.conditions = append(m.conditions, c)
		}
	}
	// Only thresholds past their grace period evict.
	var ready []Threshold
	for _, t := range thresholds {
		if now.Sub(first[t]) >= t.GracePeriod {
			ready = append(ready, t)
		}
	}
	m.thresholdsMet = ready
	// Pods over their ephemeral-storage limits are evicted first, whatever the node's
	// signals (LocalStorageCapacityIsolation, GA).
	if m.localStorageEviction(ctx, now) {
		return
	}
	if len(ready) == 0 {
		return
	}
	sort.SliceStable(ready, func(i, j int) bool {
		return reclaimOrder[signalResource[ready[i].Signal]] < reclaimOrder[signalResource[ready[j].Signal]]
	})
	t := ready[0]
	res := signalResource[t.Signal]
	logger.Info("Eviction manager: attempting to reclaim", "resourceName", res)
	if m.cfg.NodeRef != nil {
		m.cfg.Recorder.Eventf(m.cfg.NodeRef, v1.EventTypeWarning, EventThresholdMet, "Attempting to reclaim %s", res)
	}
	if res == v1.ResourceEphemeralStorage && m.cfg.ReclaimDisk != nil && m.reclaimNodeLevel(ctx, t) {
		return
	}
	usage, err := m.cfg.Usage(ctx)
	if err != nil {
		logger.Error(err, "Eviction manager: failed to get summary stats")
		return
	}
	pods := m.cfg.ActivePods()
	if len(pods) == 0 {
		logger.Error(nil, "Eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return
	}
	pods = append([]*v1.Pod(nil), pods...)
	rank(pods, res, usage)
	grace := hardEvictionGracePeriod
	if t.Soft {
		grace = m.cfg.MaxPodGracePeriodSeconds
	}
	o := obs[t.Signal]
	for _, pod := range pods {
		if kubetypes.IsCriticalPod(pod) {
			logger.Error(nil, "Eviction manager: cannot evict a critical pod", "pod", klog.KObj(pod))
			continue
		}
		podGrace := grace
		if t.Soft && pod.Spec.TerminationGracePeriodSeconds != nil && *pod.Spec.TerminationGracePeriodSeconds < podGrace {
			podGrace = *pod.Spec.TerminationGracePeriodSeconds
		}
		if m.evict(ctx, pod, podGrace, Message(res, pod, usage[pod.UID], t, o), string(t.Signal), true, now) {
			return // one pod per pass
		}
	}
	logger.Info("Eviction manager: unable to evict any pods from the node")
}

// reclaimNodeLevel removes dead containers and unused images, as upstream does before
// evicting for disk, and reports whether that resolved t (minimum reclaim included).
func (m *Manager) reclaimNodeLevel(ctx context.Context, t Threshold) bool {
	logger := klog.FromContext(ctx)
	if err := m.cfg.ReclaimDisk(ctx); err != nil {
		logger.Error(err, "Eviction manager: unexpected error when attempting to reduce resource pressure", "resourceName", v1.ResourceEphemeralStorage)
		return false
	}
	if o, ok := m.cfg.Observe()[t.Signal]; ok && met(t, o, true) {
		return false
	}
	logger.Info("Eviction manager: able to reduce resource pressure without evicting pods.", "resourceName", v1.ResourceEphemeralStorage)
	return true
}

// evict kills pod with the Evicted status, event and metric, and waits for its cleanup
// before the next eviction. disruption gives the status the DisruptionTarget condition: a
// node-pressure eviction does, a local-storage limit eviction does not (upstream passes it
// no condition). It reports whether the kill was started.
func (m *Manager) evict(ctx context.Context, pod *v1.Pod, grace int64, message, signal string, disruption bool, now time.Time) bool {
	logger := klog.FromContext(ctx)
	m.cfg.Recorder.Eventf(events.PodRef(pod), v1.EventTypeWarning, Reason, "%s", message)
	op, err := m.cfg.KillPod(pod, grace, m.evictedStatus(pod, message, disruption, now))
	if err != nil {
		logger.Error(err, "Eviction manager: pod failed to evict", "pod", klog.KObj(pod))
		return false
	}
	logger.Info("Eviction manager: pod is evicted successfully", "pod", klog.KObj(pod))
	if m.evictions != nil {
		m.evictions.WithLabelValues(signal).Inc()
	}
	m.waiting, m.waitingPod, m.waitingSince = op, klog.KObj(pod).String(), now
	m.next = now.Add(cleanupPollPeriod)
	return true
}

// localStorageEviction evicts the pods using more ephemeral storage than their limits, pod
// total first, then per container, with upstream's messages and no grace period. It
// reports whether it evicted any.
func (m *Manager) localStorageEviction(ctx context.Context, now time.Time) bool {
	pods := m.cfg.ActivePods()
	limited := false
	for _, pod := range pods {
		if _, ok := podEphemeralStorageLimit(pod); ok {
			limited = true
		}
		for _, vol := range pod.Spec.Volumes {
			if vol.EmptyDir != nil && vol.EmptyDir.SizeLimit != nil {
				limited = true
			}
		}
	}
	if !limited {
		return false // nothing to compare: skip the stats call
	}
	usage, err := m.cfg.Usage(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Eviction manager: failed to get summary stats")
		return false
	}
	evicted := false
	for _, pod := range pods {
		u, ok := usage[pod.UID]
		if !ok || kubetypes.IsCriticalPod(pod) {
			continue
		}
		if msg, signal := ephemeralStorageExceeded(pod, u); msg != "" {
			evicted = m.evict(ctx, pod, 0, msg, signal, false, now) || evicted
		}
	}
	return evicted
}

// ephemeralStorageExceeded returns the eviction message and metric signal of a pod over
// its ephemeral-storage limits, or "": an emptyDir past its sizeLimit first, then the
// pod's total, then a container's, as upstream v1.37 checks them
// (eviction_manager.go:539-633): the pod's total as soon as its limit exists, and a
// container's for app containers and sidecars alike.
func ephemeralStorageExceeded(pod *v1.Pod, u PodUsage) (string, string) {
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Sign() != 1 {
			continue
		}
		if used, ok := u.Volumes[vol.Name]; ok && used > vol.EmptyDir.SizeLimit.Value() {
			return fmt.Sprintf(emptyDirMessageFmt, vol.Name, vol.EmptyDir.SizeLimit.String()), signalEmptyDirFsLimit
		}
	}
	podLimit, ok := podEphemeralStorageLimit(pod)
	if !ok {
		return "", "" // no container has a limit, so none has one to exceed either
	}
	if u.DiskBytes > podLimit.Value() {
		return fmt.Sprintf(podEphemeralStorageMessageFmt, podLimit.String()), signalEphemeralPodFsLimit
	}
	limits := map[string]resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && q.Value() != 0 {
			limits[c.Name] = q
		}
	}
	for i := range pod.Spec.InitContainers {
		// Upstream asks podutil.IsRestartableInitContainer, which no longer looks at the
		// SidecarContainers gate (GA since v1.33).
		c := &pod.Spec.InitContainers[i]
		if q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && q.Value() != 0 && container.IsRestartableInitContainer(c, true) {
			limits[c.Name] = q
		}
	}
	for _, cu := range u.Containers {
		if limit, ok := limits[cu.Name]; ok && cu.DiskBytes > limit.Value() {
			return fmt.Sprintf(containerEphemeralStorageMessageFmt, cu.Name, limit.String()), signalEphemeralContainerFsLimit
		}
	}
	return "", ""
}

// podEphemeralStorageLimit is the pod's ephemeral-storage limit as upstream's
// resourcehelper.PodLimits gives it to the eviction manager (component-helpers
// resource/helpers.go:388-447): the app containers' and sidecars' limits summed, or, when
// greater, the largest of an init container's own limit plus those of the sidecars started
// before it (a sidecar's step counts the sidecars so far), with the pod overhead's added to
// a non-zero limit. Pod-level resources do not cover ephemeral storage. ok is false when
// no container sets the limit.
func podEphemeralStorageLimit(pod *v1.Pod) (resource.Quantity, bool) {
	var sum, sidecars, initPeak optionalQuantity
	for _, c := range pod.Spec.Containers {
		sum.add(c.Resources.Limits)
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var step optionalQuantity
		if container.IsRestartableInitContainer(c, true) {
			sum.add(c.Resources.Limits)
			sidecars.add(c.Resources.Limits)
			step = sidecars.copy()
		} else {
			step.add(c.Resources.Limits)
			if sidecars.set {
				step.addQuantity(sidecars.q)
			}
		}
		initPeak.max(step)
	}
	sum.max(initPeak)
	if !sum.set {
		return resource.Quantity{}, false
	}
	if o, ok := pod.Spec.Overhead[v1.ResourceEphemeralStorage]; ok && !sum.q.IsZero() {
		sum.q.Add(o)
	}
	return sum.q, true
}

// optionalQuantity is one entry of upstream's resource lists: absent differs from zero,
// and the first quantity added gives the sum its format, as addResourceList does.
type optionalQuantity struct {
	q   resource.Quantity
	set bool
}

// add adds list's ephemeral-storage quantity, if it has one.
func (o *optionalQuantity) add(list v1.ResourceList) {
	if q, ok := list[v1.ResourceEphemeralStorage]; ok {
		o.addQuantity(q)
	}
}

func (o *optionalQuantity) addQuantity(q resource.Quantity) {
	if !o.set {
		o.q, o.set = q.DeepCopy(), true
		return
	}
	o.q.Add(q)
}

func (o optionalQuantity) copy() optionalQuantity {
	return optionalQuantity{q: o.q.DeepCopy(), set: o.set}
}

// max keeps the greater of o and other, as upstream's maxResourceList.
func (o *optionalQuantity) max(other optionalQuantity) {
	if other.set && (!o.set || other.q.Cmp(o.q) > 0) {
		*o = other.copy()
	}
}

func contains(list []Threshold, t Threshold) bool {
	for _, x := range list {
		if x == t {
			return true
		}
	}
	return false
}

// evictedStatus is the status an eviction gives pod, as upstream's evictPod
// (eviction_manager.go:651-656): Failed, reason Evicted, and with disruption the
// DisruptionTarget condition, whose observedGeneration is the pod's generation as
// CalculatePodConditionObservedGeneration gives it (v1.37).
func (m *Manager) evictedStatus(pod *v1.Pod, message string, disruption bool, now time.Time) func(*v1.PodStatus) {
	return func(st *v1.PodStatus) {
		st.Phase = v1.PodFailed
		st.Reason = Reason
		st.Message = message
		if !disruption {
			return
		}
		updateCondition(st, v1.PodCondition{
			Type:               v1.DisruptionTarget,
			ObservedGeneration: podstatus.ConditionObservedGeneration(st, pod.Generation, v1.DisruptionTarget, m.cfg.PodObservedGenerationTracking),
			Status:             v1.ConditionTrue,
			Reason:             ConditionReason,
			Message:            message,
			LastTransitionTime: metav1.NewTime(now),
		})
	}
}

// updateCondition sets c in st as upstream's podutil.UpdatePodCondition: a condition
// already there with the same status keeps its transition time.
func updateCondition(st *v1.PodStatus, c v1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// rank orders pods for the eviction of res, as upstream's rank functions: for memory and
// disk, pods using more than they request first, then lower priority, then usage above
// the request; for PIDs, lower priority, then more processes.
func rank(pods []*v1.Pod, res v1.ResourceName, usage map[types.UID]PodUsage) {
	use := func(p *v1.Pod) int64 {
		u := usage[p.UID]
		switch res {
		case v1.ResourceMemory:
			return u.MemoryWorkingSetBytes
		case v1.ResourceEphemeralStorage:
			return u.DiskBytes
		}
		return u.Processes
	}
	// Summed once a pod, not at each comparison.
	requests := make(map[types.UID]int64, len(pods))
	for _, p := range pods {
		requests[p.UID] = podRequest(p, res)
	}
	request := func(p *v1.Pod) int64 { return requests[p.UID] }
	priority := func(p *v1.Pod) int32 {
		if p.Spec.Priority != nil {
			return *p.Spec.Priority
		}
		return 0
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if res != resourcePIDs {
			// A pod without stats ranks as exceeding its requests, as upstream.
			_, aOK := usage[a.UID]
			_, bOK := usage[b.UID]
			ea, eb := !aOK || use(a) > request(a), !bOK || use(b) > request(b)
			if ea != eb {
				return ea
			}
		}
		if pa, pb := priority(a), priority(b); pa != pb {
			return pa < pb
		}
		if res == resourcePIDs {
			return use(a) > use(b)
		}
		return use(a)-request(a) > use(b)-request(b)
	})
}

// podRequest is what pod requests of res, as upstream's GetResourceRequestQuantity ranks
// it: the containers' aggregate (init and sidecar containers counted as the pod runs
// them), or the pod-level request where it sets one, plus the pod's overhead unless that
// comes to nothing.
func podRequest(pod *v1.Pod, res v1.ResourceName) int64 {
	q := admission.PodRequests(pod)[res] // the overhead included
	if o, ok := pod.Spec.Overhead[res]; ok && q.Cmp(o) == 0 {
		return 0
	}
	return q.Value()
}

// Message is upstream's eviction message: the resource, the threshold and what was
// available, the pod when it sets a pod-level memory request, and each container (init
// and sidecar containers included) using more than it requests.
func Message(res v1.ResourceName, pod *v1.Pod, u PodUsage, t Threshold, o evictionapi.Observation) string {
	message := fmt.Sprintf(nodeLowMessageFmt, res)
	quantity := resource.NewQuantity(t.Value(o.Capacity), resource.BinarySI)
	available := resource.NewQuantity(o.Available, resource.BinarySI)
	message += fmt.Sprintf(thresholdMetFmt, quantity, available)
	if res == v1.ResourceMemory && pod.Spec.Resources != nil {
		if req, ok := pod.Spec.Resources.Requests[v1.ResourceMemory]; ok {
			message += fmt.Sprintf(podMessageFmt, pod.Name, resource.NewQuantity(u.MemoryWorkingSetBytes, resource.BinarySI), req.String(), res)
		}
	}
	containers := pod.Spec.Containers
	if len(pod.Spec.InitContainers) != 0 {
		containers = append(slices.Clip(containers), pod.Spec.InitContainers...)
	}
	for _, cu := range u.Containers {
		for _, c := range containers {
			if c.Name != cu.Name {
				continue
			}
			req := c.Resources.Requests[res]
			var used *resource.Quantity
			switch res {
			case v1.ResourceMemory:
				used = resource.NewQuantity(cu.MemoryWorkingSetBytes, resource.BinarySI)
			case v1.ResourceEphemeralStorage:
				used = resource.NewQuantity(cu.DiskBytes, resource.BinarySI)
			}
			if used != nil && used.Cmp(req) > 0 {
				message += fmt.Sprintf(containerMessageFmt, c.Name, used.String(), req.String(), res)
			}
		}
	}
	return message
}

// Admit is the eviction manager's admission: under memory pressure only critical pods and
// pods that are not BestEffort (or tolerate the memory-pressure taint) are admitted; under
// any other pressure only critical pods. It returns whether pod is admitted, else the
// rejection's reason and message.
func (m *Manager) Admit(pod *v1.Pod) (bool, string, string) {
	conds := append([]v1.NodeConditionType(nil), m.conditions...)
	if len(conds) == 0 || kubetypes.IsCriticalPod(pod) {
		return true, "", ""
	}
	if len(conds) == 1 && conds[0] == v1.NodeMemoryPressure {
		if podstatus.QOS(pod) != v1.PodQOSBestEffort {
			return true, "", ""
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		for i := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), taint, false) {
				return true, "", ""
			}
		}
	}
	names := make([]string, len(conds))
	for i, c := range conds {
		names[i] = string(c)
	}
	return false, Reason, fmt.Sprintf(nodeConditionMessage, "["+strings.Join(names, " ")+"]")
}

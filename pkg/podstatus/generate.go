package podstatus

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/intern"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

// Waiting reasons the kubelet sets before a container exists.
const (
	PodInitializing   = "PodInitializing"
	ContainerCreating = "ContainerCreating"
)

// Condition reasons (upstream pkg/kubelet/status/generate.go).
const (
	UnknownContainerStatuses = "UnknownContainerStatuses"
	PodCompleted             = "PodCompleted"
	PodFailed                = "PodFailed"
	ContainersNotReady       = "ContainersNotReady"
	ContainersNotInitialized = "ContainersNotInitialized"
	ReadinessGatesNotReady   = "ReadinessGatesNotReady"
	// RestartAllContainersStarted is the reason of AllContainersRestarting True: a
	// container exited and its rule's action is RestartAllContainers.
	RestartAllContainersStarted = "RestartAllContainersStarted"
)

// RestartingAllContainers is the waiting reason of a container removed by a restart of
// all containers, and the reason of the termination its lastState then shows (upstream
// kubelet.RestartingAllContainers).
const RestartingAllContainers = "RestartingAllContainers"

// Messages of a restart of all containers, as upstream words them.
const (
	restartingAllContainersMessage = "container exited with restart policy rule"
	removedForRestartAllMessage    = "The container is removed because RestartAllContainers in place"
)

// ContainerStatusUnknown is the terminated reason of a container whose end was not observed.
const ContainerStatusUnknown = "ContainerStatusUnknown"

// Features are the feature gates status generation depends on.
type Features struct {
	// SidecarContainers: init containers with restartPolicy Always are sidecars.
	SidecarContainers bool
	// PodReadyToStartContainersCondition: report the PodReadyToStartContainers condition.
	PodReadyToStartContainersCondition bool
	// ContainerRestartRules: a container's own restartPolicy and restartPolicyRules
	// override the pod's restartPolicy, which the phase then follows.
	ContainerRestartRules bool
	// RestartAllContainersOnContainerExits (needs ContainerRestartRules): a pod with a
	// RestartAllContainers rule has the AllContainersRestarting condition, containers
	// removed by that restart wait with RestartingAllContainers, restart counts and last
	// states carry over the removal, and an initialized pod stays so.
	RestartAllContainersOnContainerExits bool
	// InPlacePodVerticalScaling: container statuses carry their resources (as applied)
	// and allocatedResources.
	InPlacePodVerticalScaling bool
	// InPlacePodLevelResourcesVerticalScaling: the pod's status carries its pod-level
	// resources and allocatedResources.
	InPlacePodLevelResourcesVerticalScaling bool
	// PodObservedGenerationTracking: the status and the kubelet's conditions carry the
	// generation of the spec they were made from.
	PodObservedGenerationTracking bool
	// ChangeContainerStatusOnKubeletRestart (deprecated, off by default since v1.35): on,
	// started is the prober's alone, as in v1.30; off, a running container's status keeps
	// the previous status's started for the prober to go by, which is what lets a
	// restarted kubelet keep a started container started.
	ChangeContainerStatusOnKubeletRestart bool
}

// GeneratorConfig configures a Generator.
type GeneratorConfig struct {
	Features Features
	// Reasons gives the last start failure of containers (waiting reasons). Nil: none.
	Reasons ReasonGetter
	// HostIP is the node IP reported as status.hostIP (and podIP of host-network pods).
	HostIP string
	// Probes sets the containers' started and ready from their probes (the prober manager).
	// Nil: as for containers without probes.
	Probes ProbeStatusUpdater
	// Resize gives a pod's resize conditions and its pod cgroup's values. Nil: none.
	Resize ResizeStatus
}

// ResizeStatus is what a pod's status shows of an in-place resize: the kubelet's
// PodResizePending and PodResizeInProgress conditions, and what its pod cgroup is set to.
type ResizeStatus interface {
	ResizeConditions(uid types.UID) []v1.PodCondition
	// PodCgroupResources are the pod cgroup's CPU request and limit and memory limit,
	// converted back to quantities; nil where unknown or unset.
	PodCgroupResources(pod *v1.Pod) (cpuRequest, cpuLimit, memoryLimit *resource.Quantity)
	// AllocatedPodRequests are the aggregate requests of pod uid's allocation (read only,
	// shared), and whether it has one.
	AllocatedPodRequests(uid types.UID) (v1.ResourceList, bool)
}

// ProbeStatusUpdater sets started and ready of a generated status's containers.
type ProbeStatusUpdater interface {
	UpdatePodStatus(pod *v1.Pod, s *v1.PodStatus)
}

// Generator builds API pod statuses. It holds no mutable state and is safe for concurrent use.
type Generator struct {
	cfg GeneratorConfig
}

// NewGenerator returns a Generator.
func NewGenerator(cfg GeneratorConfig) *Generator { return &Generator{cfg: cfg} }

// Features returns the gates the generator was built with.
func (g *Generator) Features() Features { return g.cfg.Features }

// Generate returns the API status of pod from the runtime's podStatus, like the kubelet's
// generateAPIPodStatus. old is the previously generated status (pod.Status when none);
// podIsTerminal is true once the pod worker has stopped every container, which lets a pod
// whose containers were killed become Succeeded or Failed. StartTime and condition
// transition times are filled by Manager.SetPodStatus.
func (g *Generator) Generate(pod *v1.Pod, podStatus *container.PodStatus, old v1.PodStatus, podIsTerminal bool) v1.PodStatus {
	if podStatus == nil {
		podStatus = &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	sidecars := g.cfg.Features.SidecarContainers
	s := g.convertStatusToAPIStatus(pod, podStatus, old)

	all := append(append([]v1.ContainerStatus{}, s.ContainerStatuses...), s.InitContainerStatuses...)
	s.Phase = getPhase(pod, all, podIsTerminal, container.HasAnyActiveRegularContainerStarted(&pod.Spec, podStatus), sidecars, g.restartGates())

	// A terminal phase from the status manager or the source wins over a recomputed one.
	// The status manager's wins even over a different terminal phase: it was decided when
	// the termination started, by the kill's PodStatusFunc (node shutdown: Failed, reason
	// Terminated), and containers that then honour SIGTERM and exit 0 must not turn the pod
	// Succeeded. Upstream's API server keeps the first terminal phase the same way (the
	// status manager here refuses the change and would log an illegal phase transition).
	switch {
	case isTerminal(old.Phase):
		s.Phase = old.Phase
	case !isTerminal(s.Phase) && isTerminal(pod.Status.Phase):
		s.Phase = pod.Status.Phase
	}
	if s.Phase == old.Phase {
		// keep the reason and message that belong to the phase (e.g. an admission rejection)
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}
	if isTerminal(pod.Status.Phase) && s.Phase != pod.Status.Phase {
		klog.ErrorS(nil, "Pod attempted illegal phase transition", "pod", klog.KObj(pod), "originalStatusPhase", pod.Status.Phase, "apiStatusPhase", s.Phase)
		s.Phase = pod.Status.Phase
	}

	if g.cfg.Probes != nil {
		g.cfg.Probes.UpdatePodStatus(pod, &s)
	} else {
		updateProbeStatus(pod, &s, sidecars)
	}

	// conditions not owned by the kubelet are kept as the source wrote them
	s.Conditions = make([]v1.PodCondition, 0, len(pod.Status.Conditions)+6)
	for _, c := range pod.Status.Conditions {
		if !g.owned(c.Type) {
			s.Conditions = append(s.Conditions, c)
		}
	}
	// DisruptionTarget is written once, by the kill that evicted or shut the pod down (its
	// PodStatusFunc); the containers cannot tell it again, so it is carried over from old.
	for _, c := range old.Conditions {
		if c.Type == v1.DisruptionTarget {
			s.Conditions = replaceOrAppendCondition(s.Conditions, c)
			break
		}
	}
	if g.cfg.Features.PodReadyToStartContainersCondition {
		s.Conditions = append(s.Conditions, podReadyToStartContainersCondition(pod, podStatus))
	}
	allStatuses := append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
	s.Conditions = append(s.Conditions, podInitializedCondition(pod, allStatuses, s.Phase, sidecars, g.keepInitialized(old)))
	s.Conditions = append(s.Conditions, podReadyCondition(pod, s.Conditions, allStatuses, s.Phase, sidecars))
	s.Conditions = append(s.Conditions, containersReadyCondition(pod, allStatuses, s.Phase, sidecars))
	s.Conditions = append(s.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
	if g.cfg.Resize != nil && g.cfg.Features.InPlacePodVerticalScaling {
		s.Conditions = append(s.Conditions, g.cfg.Resize.ResizeConditions(pod.UID)...)
	}
	if g.cfg.Features.RestartAllContainersOnContainerExits && container.AllContainersCouldRestart(&pod.Spec) {
		// last, as upstream appends it
		s.Conditions = append(s.Conditions, allContainersRestartingCondition(pod, podStatus, &old, s.Phase))
	}
	if g.cfg.Features.InPlacePodLevelResourcesVerticalScaling {
		s.Resources = g.podLevelResources(pod, s.Phase, old)
		s.AllocatedResources = g.podRequests(pod)
	}
	if g.cfg.Features.PodObservedGenerationTracking || pod.Status.ObservedGeneration != 0 {
		// upstream's CalculatePodStatusObservedGeneration, and the conditions the kubelet
		// writes say the same (CalculatePodConditionObservedGeneration); a resize
		// condition keeps the generation of the resize it is about, and
		// AllContainersRestarting has none (upstream sets none there).
		s.ObservedGeneration = pod.Generation
		for i := range s.Conditions {
			c := &s.Conditions[i]
			switch c.Type {
			case v1.PodResizePending, v1.PodResizeInProgress, v1.AllContainersRestarting:
				continue
			}
			if kubeletOwned(c.Type) {
				c.ObservedGeneration = pod.Generation
			}
		}
	}

	if g.cfg.HostIP != "" {
		s.HostIP = g.cfg.HostIP
		s.HostIPs = []v1.HostIP{{IP: g.cfg.HostIP}}
		if pod.Spec.HostNetwork && s.PodIP == "" {
			s.PodIP = g.cfg.HostIP
			s.PodIPs = []v1.PodIP{{IP: g.cfg.HostIP}}
		}
	}
	return s
}

func replaceOrAppendCondition(conditions []v1.PodCondition, c v1.PodCondition) []v1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == c.Type {
			conditions[i] = c
			return conditions
		}
	}
	return append(conditions, c)
}

func isTerminal(p v1.PodPhase) bool { return p == v1.PodFailed || p == v1.PodSucceeded }

// kubeletOwned reports whether the kubelet writes a condition type (it is generated anew
// every time, never carried over from the source's copy).
func kubeletOwned(t v1.PodConditionType) bool {
	switch t {
	case v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady, v1.PodReadyToStartContainers,
		v1.PodResizePending, v1.PodResizeInProgress, v1.AllContainersRestarting:
		return true
	}
	return false
}

// owned is kubeletOwned under the generator's gates: AllContainersRestarting is the
// kubelet's only with RestartAllContainersOnContainerExits (upstream PodConditionByKubelet);
// without it one set elsewhere is kept as it is.
func (g *Generator) owned(t v1.PodConditionType) bool {
	if t == v1.AllContainersRestarting {
		return g.cfg.Features.RestartAllContainersOnContainerExits
	}
	return kubeletOwned(t)
}

// restartGates are the generator's restart rule gates.
func (g *Generator) restartGates() container.RestartGates {
	return container.RestartGates{
		ContainerRestartRules: g.cfg.Features.ContainerRestartRules,
		RestartAllContainers:  g.cfg.Features.RestartAllContainersOnContainerExits,
	}
}

// keepInitialized reports whether the pod stays Initialized whatever its init containers
// show: with RestartAllContainersOnContainerExits a pod once initialized never goes back
// (a restart of all containers turns completed init containers into waiting ones).
func (g *Generator) keepInitialized(old v1.PodStatus) bool {
	if !g.cfg.Features.RestartAllContainersOnContainerExits {
		return false
	}
	for _, c := range old.Conditions {
		if c.Type == v1.PodInitialized && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// allContainersRestartingCondition is upstream's GenerateAllContainersRestartingCondition:
// True from the exit that triggers a restart of all containers until the runtime holds
// none of the pod's containers any more, then False until the next such exit; False with
// the terminal phase as reason once the pod is done.
func allContainersRestartingCondition(pod *v1.Pod, podStatus *container.PodStatus, old *v1.PodStatus, phase v1.PodPhase) v1.PodCondition {
	switch {
	case phase == v1.PodSucceeded:
		return v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse, Reason: PodCompleted}
	case phase == v1.PodFailed:
		return v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse, Reason: PodFailed}
	case !container.ShouldAllContainersRestart(pod, podStatus, old), container.AllContainersRestartCleanedUp(pod, podStatus):
		return v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	}
	return v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue,
		Reason: RestartAllContainersStarted, Message: restartingAllContainersMessage}
}

func (g *Generator) convertStatusToAPIStatus(pod *v1.Pod, podStatus *container.PodStatus, old v1.PodStatus) v1.PodStatus {
	var s v1.PodStatus
	ips := podStatus.IPs
	if len(ips) == 0 && len(podStatus.SandboxStatuses) > 0 {
		// fall back on the newest ready sandbox's IP when the runtime view left IPs empty
		if sb := podStatus.SandboxStatuses[0]; sb.State == cri.SandboxReady && sb.IP != "" {
			ips = []string{sb.IP}
		}
	}
	for _, ip := range ips {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	s.QOSClass = podQOS(pod)
	hasInit := len(pod.Spec.InitContainers) > 0
	// Whether the pod is restarting all its containers: those the runtime no longer holds
	// were removed for it, not lost.
	restarting := g.cfg.Features.RestartAllContainersOnContainerExits && container.ShouldAllContainersRestart(pod, podStatus, &old)
	s.ContainerStatuses = g.convertToAPIContainerStatuses(pod, podStatus, old.ContainerStatuses, pod.Spec.Containers, hasInit, false, restarting)
	s.InitContainerStatuses = g.convertToAPIContainerStatuses(pod, podStatus, old.InitContainerStatuses, pod.Spec.InitContainers, hasInit, true, restarting)
	if len(pod.Spec.EphemeralContainers) > 0 {
		s.EphemeralContainerStatuses = g.convertToAPIContainerStatuses(pod, podStatus, old.EphemeralContainerStatuses, EphemeralContainerSpecs(pod), hasInit, false, restarting)
	}
	return s
}

// EphemeralContainerSpecs returns the pod's ephemeral containers as containers (their
// common fields), as the kubelet handles them.
func EphemeralContainerSpecs(pod *v1.Pod) []v1.Container {
	specs := make([]v1.Container, 0, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		specs = append(specs, v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return specs
}

// convertToAPIContainerStatuses follows the kubelet: every container starts in the default
// waiting state (PodInitializing when the pod has init containers, else ContainerCreating),
// takes the runtime's newest instance as state and the one before as lastState, keeps an
// old terminated status when the runtime forgot the container, and shows the last start
// failure (back-off, image pull) as waiting reason for containers that will be restarted.
// podRestarting says the pod is restarting all its containers (ShouldAllContainersRestart).
func (g *Generator) convertToAPIContainerStatuses(pod *v1.Pod, podStatus *container.PodStatus, previous []v1.ContainerStatus, containers []v1.Container, hasInit, isInit, podRestarting bool) []v1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	restartAll := g.cfg.Features.RestartAllContainersOnContainerExits
	convert := func(cs *container.ContainerStatus, old *v1.ContainerStatus) *v1.ContainerStatus {
		cid := cs.ID.String()
		st := &v1.ContainerStatus{
			Name:         cs.Name,
			RestartCount: int32(cs.RestartCount),
			Image:        cs.Image,
			ImageID:      cs.ImageID,
			ContainerID:  cid,
		}
		if restartAll && old != nil {
			// A restart of all containers removes the instances the restart count and
			// lastState normally come from, so both carry over from the old status.
			st.RestartCount = max(st.RestartCount, old.RestartCount)
			if old.ContainerID != st.ContainerID && old.State.Terminated != nil {
				st.LastTerminationState.Terminated = old.State.Terminated
			} else if old.LastTerminationState.Terminated != nil {
				st.LastTerminationState.Terminated = old.LastTerminationState.Terminated
			}
		}
		switch {
		case cs.State == container.ContainerStateRunning:
			st.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}
			if restartAll && old != nil && old.State.Terminated != nil && old.RestartCount >= int32(cs.RestartCount) {
				// running again after a termination its restart count does not include
				st.RestartCount = old.RestartCount + 1
			}
		case cs.State == container.ContainerStateCreated:
			// created but not running: waiting to run (upstream leaves the reason empty)
			st.State.Waiting = &v1.ContainerStateWaiting{}
		case cs.State == container.ContainerStateExited:
			st.State.Terminated = &v1.ContainerStateTerminated{
				ExitCode:    int32(cs.ExitCode),
				Reason:      cs.Reason,
				Message:     cs.Message,
				StartedAt:   metav1.NewTime(cs.StartedAt),
				FinishedAt:  metav1.NewTime(cs.FinishedAt),
				ContainerID: cid,
			}
		case cs.State == container.ContainerStateUnknown && old != nil && old.State.Running != nil:
			// it was running and vanished: it ran and ended, which is not the same as never
			// having run
			reason := ContainerStatusUnknown
			if restartAll && podRestarting {
				reason = RestartingAllContainers
			}
			st.State.Terminated = &v1.ContainerStateTerminated{
				Reason:   reason,
				Message:  "The container could not be located when the pod was terminated",
				ExitCode: 137,
			}
			st.RestartCount = old.RestartCount + 1
		default:
			st.State.Waiting = &v1.ContainerStateWaiting{}
		}
		return st
	}

	// Pointers into previous, which is only read: a copy of each status (300 bytes) was a
	// tenth of what the resync of a running pod allocates.
	oldStatuses := make(map[string]*v1.ContainerStatus, len(previous))
	for i := range previous {
		oldStatuses[previous[i].Name] = &previous[i]
	}
	defaultWaiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ContainerCreating}}
	if hasInit {
		defaultWaiting = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: PodInitializing}}
	}
	statuses := make(map[string]*v1.ContainerStatus, len(containers))
	for i := range containers {
		c := &containers[i]
		st := &v1.ContainerStatus{Name: c.Name, Image: c.Image, State: defaultWaiting}
		if old, ok := oldStatuses[c.Name]; ok {
			if old.State.Terminated != nil {
				st = old.DeepCopy()
				st.User = old.User // shared (intern.ContainerUser), never changed
			} else {
				st.RestartCount = old.RestartCount
				st.LastTerminationState = old.LastTerminationState
			}
		}
		statuses[c.Name] = st
	}

	// A container that was running but is no longer listed ended without a trace: show it
	// as stopped (not waiting) so the pod does not fall back to Pending.
	for i := range containers {
		c := &containers[i]
		if podStatus.FindContainerStatusByName(c.Name) != nil {
			continue
		}
		old, ok := oldStatuses[c.Name]
		if !ok {
			continue
		}
		if restartAll && podRestarting && old.State.Waiting == nil {
			// Removed by the restart of all containers: it waits to start again, and its
			// lastState says why it is gone.
			st := statuses[c.Name]
			st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: RestartingAllContainers, Message: removedForRestartAllMessage}}
			st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{Reason: RestartingAllContainers, Message: removedForRestartAllMessage, ExitCode: 137}
			st.RestartCount = old.RestartCount + 1
			continue
		}
		if old.State.Terminated != nil || old.State.Running == nil {
			continue
		}
		st := statuses[c.Name]
		isDefault := st.State.Waiting != nil && st.State.Waiting.Reason == defaultWaiting.Waiting.Reason
		if !isDefault || st.LastTerminationState.Terminated != nil {
			continue
		}
		st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			Reason:   ContainerStatusUnknown,
			Message:  "The container could not be located when the pod was deleted.  The container used to be Running",
			ExitCode: 137,
		}
		if pod.DeletionTimestamp == nil {
			st.RestartCount++
		}
	}

	// The runtime lists instances newest first: the first is the state, the second lastState.
	ordered := make([]*container.ContainerStatus, len(podStatus.ContainerStatuses))
	copy(ordered, podStatus.ContainerStatuses)
	sort.SliceStable(ordered, func(i, j int) bool {
		if ordered[i].CreatedAt.Equal(ordered[j].CreatedAt) {
			return ordered[i].RestartCount > ordered[j].RestartCount
		}
		return ordered[i].CreatedAt.After(ordered[j].CreatedAt)
	})
	seen := map[string]int{}
	for _, cs := range ordered {
		if _, ok := statuses[cs.Name]; !ok || seen[cs.Name] >= 2 {
			continue
		}
		oldPtr := oldStatuses[cs.Name]
		st := convert(cs, oldPtr)
		if !g.cfg.Features.ChangeContainerStatusOnKubeletRestart && cs.State == container.ContainerStateRunning &&
			oldPtr != nil && oldPtr.Started != nil {
			// Upstream kubelet_pods.go:2692-2698: the old status's word on a running
			// container; after a restart it is the API server's copy (pod.Status).
			started := *oldPtr.Started
			st.Started = &started
		}
		if seen[cs.Name] == 0 {
			// Who the process runs as, as the runtime reports it (SupplementalGroupsPolicy,
			// GA): shared between equal users, so that 20,000 containers hold one value.
			st.User = intern.ContainerUser(cs.User)
			if g.cfg.Features.InPlacePodVerticalScaling {
				if spec := specByName(containers, cs.Name); spec != nil {
					// what is applied; allocatedResources: what the spec (the allocated
					// pod) asks for
					st.Resources = containerStatusResources(spec, st, cs, oldPtr)
					st.AllocatedResources = spec.Resources.Requests // shared: a spec is never changed
				}
			}
			statuses[cs.Name] = st
		} else {
			statuses[cs.Name].LastTerminationState = st.State
		}
		seen[cs.Name]++
	}

	// Containers that will be (re)started on the next sync show why they are not running.
	for i := range containers {
		c := &containers[i]
		if isInit {
			if s := podStatus.FindContainerStatusByName(c.Name); s != nil && s.State == container.ContainerStateExited && s.ExitCode == 0 {
				continue // a completed init container is not restarted
			}
		}
		if !container.ShouldContainerBeRestarted(c, pod, podStatus, g.restartGates()) || g.cfg.Reasons == nil {
			continue
		}
		reason, ok := g.cfg.Reasons.Get(pod.UID, c.Name)
		if !ok {
			continue
		}
		st := statuses[c.Name]
		if st.State.Terminated != nil {
			st.LastTerminationState = st.State
		}
		st.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason.Reason, Message: reason.Message}}
	}

	out := make([]v1.ContainerStatus, 0, len(statuses))
	if isInit {
		// init container statuses follow the spec order
		for i := range containers {
			out = append(out, *statuses[containers[i].Name])
		}
		return out
	}
	for _, st := range statuses {
		out = append(out, *st)
	}
	// app container statuses are sorted by name, as the kubelet does
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// updateProbeStatus sets started and ready as the prober manager does for containers without
// probes: a running container is started and ready; a regular init container is ready once
// it exited 0.
func updateProbeStatus(pod *v1.Pod, s *v1.PodStatus, sidecars bool) {
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		started := cs.State.Running != nil
		cs.Started = &started
		cs.Ready = started
	}
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		started := cs.State.Running != nil
		cs.Started = &started
		if c := initContainerSpec(pod, cs.Name); c != nil && container.IsRestartableInitContainer(c, sidecars) {
			cs.Ready = started
			continue
		}
		cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
	}
}

func initContainerSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

func findStatus(statuses []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, s := range statuses {
		if s.Name == name {
			return s, true
		}
	}
	return v1.ContainerStatus{}, false
}

// hasAnyRegularContainerStarted: an app container running or terminated in the API
// statuses means the pod was initialized, even while a sidecar restarts (upstream's
// kubecontainer.HasAnyRegularContainerStarted, which the Initialized condition asks; the
// phase asks the runtime's active sandbox instead).
func hasAnyRegularContainerStarted(spec *v1.PodSpec, statuses []v1.ContainerStatus) bool {
	names := make(map[string]struct{}, len(spec.Containers))
	for _, c := range spec.Containers {
		names[c.Name] = struct{}{}
	}
	for _, s := range statuses {
		if _, ok := names[s.Name]; ok && (s.State.Running != nil || s.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// getPhase computes the pod phase from container statuses, as v1.37's getPhase: a pending
// regular init container keeps the pod Pending whatever its other containers did, a
// pending sidecar only until the pod has initialized (podHasInitialized: a regular
// container is in the pod's active sandbox, container.HasAnyActiveRegularContainerStarted),
// so a sidecar restarting later does not put a running pod back to Pending. With the
// ContainerRestartRules gate on, whether a stopped container is restarting follows its own
// restartPolicy and rules (ContainerShouldRestart on its last exit code) instead of the
// pod's restartPolicy; with RestartAllContainersOnContainerExits too, one removed by a
// restart of all containers is restarting.
func getPhase(pod *v1.Pod, info []v1.ContainerStatus, podIsTerminal, podHasInitialized, sidecars bool, gates container.RestartGates) v1.PodPhase {
	spec := pod.Spec
	restartRules := gates.ContainerRestartRules
	pendingRegularInit, pendingSidecars, failedInitialization, failedInitializationNotRestartable := 0, 0, 0, 0
	// notRestartable reports whether a container that terminated so stays stopped.
	notRestartable := func(c *v1.Container, t *v1.ContainerStateTerminated) bool {
		if gates.RestartAllContainers && t.Reason == RestartingAllContainers {
			return false
		}
		return !container.ContainerShouldRestart(c, &spec, t.ExitCode, gates.RestartAllContainers)
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if container.IsRestartableInitContainer(c, sidecars) {
			continue
		}
		cs, ok := findStatus(info, c.Name)
		if !ok {
			pendingRegularInit++
			continue
		}
		switch {
		case cs.State.Running != nil:
			pendingRegularInit++
		case cs.State.Terminated != nil:
			if code := cs.State.Terminated.ExitCode; code != 0 {
				failedInitialization++
				if restartRules && notRestartable(c, cs.State.Terminated) {
					failedInitializationNotRestartable++
				}
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				if code := cs.LastTerminationState.Terminated.ExitCode; code != 0 {
					failedInitialization++
					if restartRules && notRestartable(c, cs.LastTerminationState.Terminated) {
						failedInitializationNotRestartable++
					}
				}
			} else {
				pendingRegularInit++
			}
		default:
			pendingRegularInit++
		}
	}

	unknown, running, waiting, stopped, stoppedNotRestartable, succeeded := 0, 0, 0, 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !container.IsRestartableInitContainer(c, sidecars) {
			continue
		}
		cs, ok := findStatus(info, c.Name)
		if !ok {
			unknown++
			continue
		}
		switch {
		case cs.State.Running != nil:
			if cs.Started == nil || !*cs.Started {
				pendingSidecars++
			}
			running++
		case cs.State.Terminated != nil:
			// a stopped sidecar does not decide the phase
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated == nil {
				pendingSidecars++
				waiting++
			}
		default:
			pendingSidecars++
			unknown++
		}
	}

	for i := range spec.Containers {
		c := &spec.Containers[i]
		cs, ok := findStatus(info, c.Name)
		if !ok {
			unknown++
			continue
		}
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if restartRules && notRestartable(c, cs.State.Terminated) {
				stoppedNotRestartable++
			}
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
				if restartRules && notRestartable(c, cs.LastTerminationState.Terminated) {
					stoppedNotRestartable++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if restartRules {
		if failedInitializationNotRestartable > 0 {
			return v1.PodFailed
		}
	} else if failedInitialization > 0 && spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case pendingRegularInit > 0 || (pendingSidecars > 0 && !podHasInitialized):
		return v1.PodPending
	case waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal && !kubetypes.IsStaticPod(pod) {
			// the containers will not be restarted whatever the restart policy
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		if restartRules {
			if stopped != stoppedNotRestartable {
				return v1.PodRunning // at least one is restarting
			}
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		if spec.RestartPolicy == v1.RestartPolicyAlways {
			return v1.PodRunning // restarting
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		if spec.RestartPolicy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
		return v1.PodRunning // OnFailure, restarting the failed ones
	default:
		return v1.PodPending
	}
}

func podReadyToStartContainersCondition(pod *v1.Pod, podStatus *container.PodStatus) v1.PodCondition {
	if needed, _, _ := container.PodSandboxChanged(pod, podStatus); !needed {
		return v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}
	}
	return v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse}
}

func containersReadyCondition(pod *v1.Pod, statuses []v1.ContainerStatus, phase v1.PodPhase, sidecars bool) v1.PodCondition {
	if statuses == nil {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: UnknownContainerStatuses}
	}
	var unknown, unready []string
	check := func(name string) {
		if cs, ok := findStatus(statuses, name); ok {
			if !cs.Ready {
				unready = append(unready, name)
			}
		} else {
			unknown = append(unknown, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if container.IsRestartableInitContainer(&pod.Spec.InitContainers[i], sidecars) {
			check(pod.Spec.InitContainers[i].Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		check(c.Name)
	}
	if (phase == v1.PodSucceeded && len(unknown) == 0) || phase == v1.PodFailed {
		return terminalCondition(v1.ContainersReady, phase)
	}
	if msg := notReadyMessage(unknown, "unready", unready); msg != "" {
		return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ContainersNotReady, Message: msg}
	}
	return v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
}

// notReadyMessage is upstream's condition message: "containers with unknown status: [a],
// containers with <what> status: [b c]", the parts present; "" when both lists are empty.
func notReadyMessage(unknown []string, what string, notReady []string) string {
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(notReady) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with %s status: %s", what, notReady))
	}
	return strings.Join(msgs, ", ")
}

func terminalCondition(t v1.PodConditionType, phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionFalse}
	switch phase {
	case v1.PodFailed:
		c.Reason = PodFailed
	case v1.PodSucceeded:
		c.Reason = PodCompleted
	}
	return c
}

func podReadyCondition(pod *v1.Pod, conditions []v1.PodCondition, statuses []v1.ContainerStatus, phase v1.PodPhase, sidecars bool) v1.PodCondition {
	cr := containersReadyCondition(pod, statuses, phase, sidecars)
	if cr.Status != v1.ConditionTrue {
		return v1.PodCondition{Type: v1.PodReady, Status: cr.Status, Reason: cr.Reason, Message: cr.Message}
	}
	var msgs []string
	for _, rg := range pod.Spec.ReadinessGates {
		var found *v1.PodCondition
		for i := range conditions {
			if conditions[i].Type == rg.ConditionType {
				found = &conditions[i]
				break
			}
		}
		if found == nil {
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(rg.ConditionType)))
		} else if found.Status != v1.ConditionTrue {
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(rg.ConditionType), found.Status))
		}
	}
	if len(msgs) > 0 {
		return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReadinessGatesNotReady, Message: strings.Join(msgs, ", ")}
	}
	return v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
}

// podInitializedCondition: keepInitialized (the pod was initialized and may not go back,
// see Generator.keepInitialized) turns an incomplete initialization into True.
func podInitializedCondition(pod *v1.Pod, statuses []v1.ContainerStatus, phase v1.PodPhase, sidecars, keepInitialized bool) v1.PodCondition {
	if statuses == nil && len(pod.Spec.InitContainers) > 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: UnknownContainerStatuses}
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs, ok := findStatus(statuses, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
			continue
		}
		if container.IsRestartableInitContainer(c, sidecars) {
			if cs.Started == nil || !*cs.Started {
				incomplete = append(incomplete, c.Name)
			}
		} else if !cs.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: PodCompleted}
	}
	if hasAnyRegularContainerStarted(&pod.Spec, statuses) {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	if msg := notReadyMessage(unknown, "incomplete", incomplete); msg != "" && !keepInitialized {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: ContainersNotInitialized, Message: msg}
	}
	return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
}

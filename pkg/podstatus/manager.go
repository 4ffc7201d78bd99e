package podstatus

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	// Clock stamps StartTime and condition transition times. Required.
	Clock clock.PassiveClock
	// OnChange, when set, is called (and must not block) after a pod's status was set, with
	// the pod and the stored status (never changed, only replaced): the API status sync of
	// cluster mode wakes on it, and simulate's timeline records each status a sync sets
	// (several can fall in one instant of the virtual clock).
	OnChange func(pod *v1.Pod, status *v1.PodStatus)
	// ContainerRestartRules is the gate: a container its own restartPolicy or
	// restartPolicyRules restart may come back after it terminated.
	ContainerRestartRules bool
	// RestartAllContainers is the RestartAllContainersOnContainerExits gate: every
	// container of a pod with a RestartAllContainers rule may come back after it terminated.
	RestartAllContainers bool
}

// Manager keeps the latest API status of every pod, like the kubelet's status manager
// without an API server: condition transition times move only when a condition flips,
// StartTime is set once, and a pod that reached Succeeded or Failed never leaves that phase.
// It has one caller, the node's owner (edges read statuses through it), so it keeps no lock;
// a stored status is never changed, only replaced, so a pointer to one may be read anywhere.
type Manager struct {
	clock        clock.PassiveClock
	onChange     func(pod *v1.Pod, status *v1.PodStatus)
	restartGates container.RestartGates

	pods    map[types.UID]*statusEntry
	version uint64 // bumped by every write, so an observer can skip unchanged states
}

type statusEntry struct {
	pod    *v1.Pod
	status v1.PodStatus
}

// NewManager returns an empty status manager.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Clock == nil {
		return nil, errors.New("podstatus manager config: Clock is required")
	}
	gates := container.RestartGates{ContainerRestartRules: cfg.ContainerRestartRules, RestartAllContainers: cfg.RestartAllContainers}
	return &Manager{clock: cfg.Clock, onChange: cfg.OnChange, restartGates: gates, pods: map[types.UID]*statusEntry{}}, nil
}

// GetPodStatus returns a copy of the pod's latest status.
func (m *Manager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	e, ok := m.pods[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return copyStatus(&e.status), true
}

// GetPodPhase returns the phase of the pod's latest status: GetPodStatus(uid).Phase
// without copying the status (admission and housekeeping ask it for every pod).
func (m *Manager) GetPodPhase(uid types.UID) (v1.PodPhase, bool) {
	e, ok := m.pods[uid]
	if !ok {
		return "", false
	}
	return e.status.Phase, true
}

// SetPodStatus stores status as the pod's latest. It refuses (and logs) an update that would
// move a terminated container of a non-restarting pod back to running or waiting.
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	// set changes only the conditions' times, the start time and the phase of the value it
	// is given: with conditions of its own, the caller's status is left as it was, and a
	// status equal to the stored one (every resync of a running pod) is never deep-copied.
	status.Conditions = slices.Clone(status.Conditions)
	if m.set(pod, status, false) && m.onChange != nil {
		m.onChange(pod, &m.pods[pod.UID].status)
	}
}

// copyStatus is a deep copy of s but for its resource lists (the pod's and each
// container's resources and allocatedResources), which stay shared: the generator makes
// them read-only, mostly the pod spec's own, and copied they were half of what 10,000
// stored statuses hold. s is not changed (a stored status may be read meanwhile).
func copyStatus(s *v1.PodStatus) v1.PodStatus {
	shallow := *s
	shallow.Resources, shallow.AllocatedResources = nil, nil
	shallow.InitContainerStatuses, shallow.ContainerStatuses, shallow.EphemeralContainerStatuses = nil, nil, nil
	c := *shallow.DeepCopy()
	c.Resources, c.AllocatedResources = s.Resources, s.AllocatedResources
	c.InitContainerStatuses = copyContainerStatuses(s.InitContainerStatuses)
	c.ContainerStatuses = copyContainerStatuses(s.ContainerStatuses)
	c.EphemeralContainerStatuses = copyContainerStatuses(s.EphemeralContainerStatuses)
	return c
}

// copyContainerStatuses deep-copies statuses but for their resource lists and users, which
// the copy shares (nil stays nil; a user is intern.ContainerUser's, never changed). Each is
// copied through a value on the stack with those unset, not a copied slice: statuses are
// read at every sync of every pod.
func copyContainerStatuses(statuses []v1.ContainerStatus) []v1.ContainerStatus {
	if statuses == nil {
		return nil
	}
	out := make([]v1.ContainerStatus, len(statuses))
	for i := range statuses {
		tmp := statuses[i]
		tmp.Resources, tmp.AllocatedResources, tmp.User = nil, nil, nil
		tmp.DeepCopyInto(&out[i])
		out[i].Resources, out[i].AllocatedResources, out[i].User = statuses[i].Resources, statuses[i].AllocatedResources, statuses[i].User
	}
	return out
}

// set stores the status, and says whether anything changed: as upstream's
// updateStatusInternal, the same status for the same pod is ignored, so that nothing
// downstream (the API status sync, the version's observers) works on a sync that changed
// nothing. Its callers' statuses carry no timestamps of their own but conditions' and the
// start time, which are carried over from the stored status first.
//
// owned says status shares nothing with its caller's; otherwise a changed status is stored
// as a copy (copyStatus).
func (m *Manager) set(pod *v1.Pod, status v1.PodStatus, owned bool) bool {
	var old v1.PodStatus
	e, found := m.pods[pod.UID]
	if found {
		old = e.status
	} else {
		old = *pod.Status.DeepCopy()
	}
	if err := checkContainerStateTransition(old.ContainerStatuses, status.ContainerStatuses, &pod.Spec, pod.Spec.Containers, m.restartGates); err != nil {
		klog.ErrorS(err, "Status update on pod aborted", "pod", klog.KObj(pod))
		return false
	}
	if err := checkContainerStateTransition(withoutSidecars(pod, old.InitContainerStatuses), status.InitContainerStatuses, &pod.Spec, pod.Spec.InitContainers, m.restartGates); err != nil {
		klog.ErrorS(err, "Status update on pod aborted", "pod", klog.KObj(pod))
		return false
	}
	if isTerminal(old.Phase) && status.Phase != old.Phase {
		klog.ErrorS(nil, "Pod attempted illegal phase transition", "pod", klog.KObj(pod), "originalStatusPhase", old.Phase, "apiStatusPhase", status.Phase)
		status.Phase, status.Reason, status.Message = old.Phase, old.Reason, old.Message
	}

	now := metav1.NewTime(m.clock.Now())
	for i := range status.Conditions {
		c := &status.Conditions[i]
		// The resize conditions carry their own times (their transition is their reason's).
		resize := c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress
		if (!kubeletOwned(c.Type) || resize) && !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = now
		for _, oc := range old.Conditions {
			if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
				c.LastTransitionTime = oc.LastTransitionTime
				break
			}
		}
	}
	switch {
	case old.StartTime != nil && !old.StartTime.IsZero():
		status.StartTime = old.StartTime.DeepCopy()
	case status.StartTime == nil || status.StartTime.IsZero():
		t := now
		status.StartTime = &t
	}
	if found && old.Phase != status.Phase {
		klog.V(2).InfoS("Pod phase changed", "pod", klog.KObj(pod), "podUID", pod.UID, "oldPhase", old.Phase, "phase", status.Phase)
	}
	if found && e.pod == pod && statusEqual(&e.status, &status) {
		return false
	}
	if !owned {
		status = copyStatus(&status)
	}
	m.pods[pod.UID] = &statusEntry{pod: pod, status: status}
	m.version++
	return true
}

// checkContainerStateTransition: a container that terminated in a pod that will not restart
// it (restartPolicy Never, or OnFailure with exit code 0) cannot come back, unless its own
// restartPolicy or restartPolicyRules (ContainerRestartRules) restart it, or the pod may
// restart all its containers (RestartAllContainersOnContainerExits and a
// RestartAllContainers rule); specs are the containers of cur's kind.
//
// The rules are read only with their gates on, as upstream.
func checkContainerStateTransition(old, cur []v1.ContainerStatus, spec *v1.PodSpec, specs []v1.Container, gates container.RestartGates) error {
	if spec.RestartPolicy == v1.RestartPolicyAlways {
		return nil
	}
	if gates.RestartAllContainers && container.AllContainersCouldRestart(spec) {
		return nil
	}
	for _, o := range old {
		if o.State.Terminated == nil {
			continue
		}
		if spec.RestartPolicy == v1.RestartPolicyOnFailure && o.State.Terminated.ExitCode != 0 {
			continue
		}
		if gates.ContainerRestartRules && containerRestarts(specs, spec, o.Name, o.State.Terminated.ExitCode, gates.RestartAllContainers) {
			continue
		}
		for _, c := range cur {
			if c.Name == o.Name && c.State.Terminated == nil {
				return fmt.Errorf("terminated container %v attempted illegal transition to non-terminated state", c.Name)
			}
		}
	}
	return nil
}

// containerRestarts reports whether the named container's restart policy and rules restart
// it after exitCode (restartAll: the RestartAllContainersOnContainerExits gate).
func containerRestarts(specs []v1.Container, spec *v1.PodSpec, name string, exitCode int32, restartAll bool) bool {
	for i := range specs {
		if specs[i].Name == name {
			return container.ContainerShouldRestart(&specs[i], spec, exitCode, restartAll)
		}
	}
	return false
}

// withoutSidecars drops init containers with restartPolicy Always: a sidecar is restarted
// whatever the pod's restartPolicy.
func withoutSidecars(pod *v1.Pod, statuses []v1.ContainerStatus) []v1.ContainerStatus {
	out := make([]v1.ContainerStatus, 0, len(statuses))
	for _, s := range statuses {
		if c := initContainerSpec(pod, s.Name); c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			continue
		}
		out = append(out, s)
	}
	return out
}

// TerminatePod writes the final status of a pod whose containers are all stopped: any
// container still shown running or waiting (once the pod initialized) becomes terminated
// with ContainerStatusUnknown, and a non-static pod is forced into a terminal phase
// (Failed unless it already succeeded).
func (m *Manager) TerminatePod(pod *v1.Pod) {
	var status v1.PodStatus
	if e, ok := m.pods[pod.UID]; ok {
		status = *e.status.DeepCopy()
	} else {
		status = *pod.Status.DeepCopy()
	}
	unknown := func() v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: ContainerStatusUnknown, Message: "The container could not be located when the pod was terminated", ExitCode: 137,
		}}
	}
	if hasPodInitialized(pod, &status) {
		for i := range status.ContainerStatuses {
			if status.ContainerStatuses[i].State.Terminated == nil {
				status.ContainerStatuses[i].State = unknown()
			}
		}
	}
	// init containers up to the last one that ever started are marked failed
	for i := range initializedContainers(status.InitContainerStatuses) {
		if status.InitContainerStatuses[i].State.Terminated == nil {
			status.InitContainerStatuses[i].State = unknown()
		}
	}
	if !kubetypes.IsStaticPod(pod) && !isTerminal(status.Phase) {
		klog.V(3).InfoS("Marking terminal pod as failed", "oldPhase", status.Phase, "pod", klog.KObj(pod), "podUID", pod.UID)
		status.Phase = v1.PodFailed
	}
	m.set(pod, status, true)
}

func hasPodInitialized(pod *v1.Pod, status *v1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, s := range status.ContainerStatuses {
		if s.LastTerminationState.Terminated != nil || s.State.Waiting == nil {
			return true
		}
	}
	if l := len(status.InitContainerStatuses); l > 0 {
		s := status.InitContainerStatuses[l-1]
		if s.State.Running != nil && s.Started != nil && *s.Started {
			return true
		}
		if t := s.LastTerminationState.Terminated; t != nil && t.ExitCode == 0 {
			return true
		}
		if t := s.State.Terminated; t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}

// initializedContainers drops the trailing init containers that never left waiting.
func initializedContainers(cs []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].State.Waiting == nil || cs[i].LastTerminationState.Terminated != nil {
			return cs[:i+1]
		}
	}
	return nil
}

// RemovePod forgets a pod's status.
func (m *Manager) RemovePod(uid types.UID) {
	delete(m.pods, uid)
	m.version++
}

// RemoveOrphanedStatuses forgets every pod not in keep (housekeeping).
func (m *Manager) RemoveOrphanedStatuses(keep map[types.UID]bool) {
	for uid := range m.pods {
		if !keep[uid] {
			delete(m.pods, uid)
			m.version++
		}
	}
}

// Pods returns a copy of every known pod with its latest status, sorted by namespace and
// name (what /pods serves).
func (m *Manager) Pods() []*v1.Pod {
	out := make([]*v1.Pod, 0, len(m.pods))
	for _, e := range m.pods {
		p := e.pod.DeepCopy()
		p.Status = *e.status.DeepCopy()
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// StatusOf returns the pod's latest status without a copy; the caller must not modify it.
// A write replaces the status, never changes it, so a pointer also names a version: a
// caller may keep it to tell whether the status changed since.
func (m *Manager) StatusOf(uid types.UID) (*v1.PodStatus, bool) {
	e, ok := m.pods[uid]
	if !ok {
		return nil, false
	}
	return &e.status, true
}

// Version changes whenever a status is written or removed.
func (m *Manager) Version() uint64 {
	return m.version
}

// Each calls fn with every pod and its latest status, without copies: fn must not modify
// them or call the manager.
func (m *Manager) Each(fn func(pod *v1.Pod, status *v1.PodStatus)) {
	for _, e := range m.pods {
		fn(e.pod, &e.status)
	}
}

// Len is the number of pods with a status.
func (m *Manager) Len() int {
	return len(m.pods)
}

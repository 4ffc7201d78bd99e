package allocation

import (
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/intern"
)

// Resources are a pod's resources as one record: each container's (init and app, by
// name) and the pod-level ones (nil when the pod sets none).
type Resources struct {
	Containers map[string]v1.ResourceRequirements
	Pod        *v1.ResourceRequirements
}

// ForPod is the resources pod's spec asks for (upstream's ResourceInfoForPod). It shares
// the spec's lists: a pod from a source is never changed (an update is a new object).
func ForPod(pod *v1.Pod) Resources {
	r := Resources{Containers: make(map[string]v1.ResourceRequirements, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			r.Containers[list[i].Name] = list[i].Resources
		}
	}
	r.Pod = pod.Spec.Resources
	return r
}

// Manager is the kubelet's allocation manager and the resize part of its status manager
// in one: the resources admitted for each pod (allocated: what a resize was accepted
// for), those set on its cgroups (actuated), and its PodResizePending and
// PodResizeInProgress conditions. Upstream keeps the first two in checkpoints on disk; a
// simulated kubelet restart starts a new Manager, as a node whose checkpoints were lost.
//
// A Manager belongs to its node's owner: the pod syncs and the config handlers run there,
// one at a time, so it keeps no lock.
//
// Both records share the resource lists of the pods they came from (read-only, as the pods
// are): what a pod costs here is a pointer and a few list headers, not a copy of its
// resources (10,000 pods).
type Manager struct {
	clock clock.PassiveClock
	// allocated is the pod each allocation was taken from.
	allocated  map[types.UID]allocated
	actuated   map[types.UID]*actuated
	pending    map[types.UID]*v1.PodCondition
	inProgress map[types.UID]*v1.PodCondition
}

// New returns an empty Manager whose conditions take their times from clk.
func New(clk clock.PassiveClock) *Manager {
	return &Manager{
		clock:      clk,
		allocated:  map[types.UID]allocated{},
		actuated:   map[types.UID]*actuated{},
		pending:    map[types.UID]*v1.PodCondition{},
		inProgress: map[types.UID]*v1.PodCondition{},
	}
}

// actuated is what was set on one pod's cgroups that its allocation does not say: its
// containers' set otherwise than their allocation asks (while a resize is actuated; by
// name, few) and its own. A container set as its allocation asks (every container, mostly)
// is a bit of its allocation (allocated.same): a node of 10,000 pods kept 200 bytes a pod
// of copies of its specs' lists, then 120 of this record.
type actuated struct {
	names      []string
	containers []v1.ResourceRequirements
	pod        *v1.ResourceRequirements
}

// actuatedFor is pod uid's record, made if missing.
func (m *Manager) actuatedFor(uid types.UID) *actuated {
	a := m.actuated[uid]
	if a == nil {
		a = &actuated{}
		m.actuated[uid] = a
	}
	return a
}

// containerAt is the i-th container of pod, init containers first; nil past the end.
func containerAt(pod *v1.Pod, i int) *v1.Container {
	if i < len(pod.Spec.InitContainers) {
		return &pod.Spec.InitContainers[i]
	}
	if i -= len(pod.Spec.InitContainers); i < len(pod.Spec.Containers) {
		return &pod.Spec.Containers[i]
	}
	return nil
}

// containerIndex is the index of container name in pod (as containerAt), -1 if none.
func containerIndex(pod *v1.Pod, name string) int {
	for i := 0; ; i++ {
		c := containerAt(pod, i)
		if c == nil {
			return -1
		}
		if c.Name == name {
			return i
		}
	}
}

// sameLists reports whether a and b hold the very same lists (not equal ones: the same).
func sameLists(a, b *v1.ResourceRequirements) bool {
	return reflect.ValueOf(a.Requests).UnsafePointer() == reflect.ValueOf(b.Requests).UnsafePointer() &&
		reflect.ValueOf(a.Limits).UnsafePointer() == reflect.ValueOf(b.Limits).UnsafePointer() &&
		len(a.Claims) == 0 && len(b.Claims) == 0
}

// set records r for container name by name.
func (a *actuated) set(name string, r v1.ResourceRequirements) {
	for i, n := range a.names {
		if n == name {
			a.containers[i] = r
			return
		}
	}
	a.names = append(a.names, name)
	a.containers = append(a.containers, r)
}

// unset forgets container name's entry by name, if any.
func (a *actuated) unset(name string) {
	for i, n := range a.names {
		if n == name {
			a.names = slices.Delete(a.names, i, i+1)
			a.containers = slices.Delete(a.containers, i, i+1)
			return
		}
	}
}

// allocated is a pod's allocation: the pod it was taken from, and that pod's aggregate
// requests (shared with every pod that requests alike), which every status of the pod
// shows (status.allocatedResources) and would otherwise be summed again at each sync.
type allocated struct {
	pod      *v1.Pod
	requests v1.ResourceList
	// same: bit i is set when container i of pod (init containers first) was actuated as
	// pod's spec asks (see actuated).
	same uint64
}

// Allocate records pod's spec resources as its allocation: at admission, and when a
// resize is accepted.
func (m *Manager) Allocate(pod *v1.Pod) {
	if old, ok := m.allocated[pod.UID]; ok && old.same != 0 && old.pod != pod {
		// What was actuated as the old allocation asked stays so: by name from now on.
		a := m.actuatedFor(pod.UID)
		for i := 0; i < 64; i++ {
			if old.same&(1<<i) != 0 {
				c := containerAt(old.pod, i)
				a.set(c.Name, c.Resources)
			}
		}
	}
	e := allocated{pod: pod, requests: intern.ResourceList(admission.PodRequests(pod))}
	if old, ok := m.allocated[pod.UID]; ok && old.pod == pod {
		e.same = old.same
	}
	m.allocated[pod.UID] = e
}

// PodRequests is the allocation's aggregate requests of pod uid (upstream's PodRequests
// of the allocated pod), and whether the pod has one. Read only: shared.
func (m *Manager) PodRequests(uid types.UID) (v1.ResourceList, bool) {
	a, ok := m.allocated[uid]
	return a.requests, ok
}

// Has reports whether pod uid was admitted with an allocation.
func (m *Manager) Has(uid types.UID) bool {
	_, ok := m.allocated[uid]
	return ok
}

// Allocated is the allocation of the container name of pod uid.
func (m *Manager) Allocated(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	if a, ok := m.allocated[uid]; ok {
		pod := a.pod
		for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				if list[i].Name == name {
					return list[i].Resources, true
				}
			}
		}
	}
	return v1.ResourceRequirements{}, false
}

// PodFromAllocation is pod with its allocated resources in place of its spec's (a copy
// when they differ, and then true): the pod the kubelet runs while a resize waits.
func (m *Manager) PodFromAllocation(pod *v1.Pod) (*v1.Pod, bool) {
	alloc, ok := m.allocated[pod.UID]
	if !ok || alloc.pod == pod {
		return pod, false
	}
	return withResources(pod, ForPod(alloc.pod))
}

// withResources is pod with r's resources, copied only if any differs.
func withResources(pod *v1.Pod, r Resources) (*v1.Pod, bool) {
	differs := !apiequality.Semantic.DeepEqual(pod.Spec.Resources, r.Pod)
	if !differs {
		for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				if a, ok := r.Containers[list[i].Name]; ok && !apiequality.Semantic.DeepEqual(&list[i].Resources, &a) {
					differs = true
				}
			}
		}
	}
	if !differs {
		return pod, false
	}
	out := pod.DeepCopy()
	out.Spec.Resources = r.Pod.DeepCopy()
	for _, list := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range list {
			if a, ok := r.Containers[list[i].Name]; ok {
				list[i].Resources = *a.DeepCopy()
			}
		}
	}
	return out, true
}

// Remove forgets pod uid: its allocation, what was actuated and its conditions.
func (m *Manager) Remove(uid types.UID) {
	delete(m.allocated, uid)
	delete(m.actuated, uid)
	delete(m.pending, uid)
	delete(m.inProgress, uid)
}

// Pods are the UIDs with an allocation.
func (m *Manager) Pods() []types.UID {
	uids := make([]types.UID, 0, len(m.allocated))
	for uid := range m.allocated {
		uids = append(uids, uid)
	}
	return uids
}

// --- actuated: what the kubelet last set on the pod's cgroups ---

// Actuated is what was last set on the cgroup of container name of pod uid.
func (m *Manager) Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	if a := m.actuated[uid]; a != nil {
		for i, n := range a.names {
			if n == name {
				return a.containers[i], true
			}
		}
	}
	if alloc, ok := m.allocated[uid]; ok && alloc.same != 0 {
		if i := containerIndex(alloc.pod, name); i >= 0 && i < 64 && alloc.same&(1<<i) != 0 {
			return containerAt(alloc.pod, i).Resources, true
		}
	}
	return v1.ResourceRequirements{}, false
}

// SetActuated records r as set on the cgroup of container name of pod uid (its start,
// an in-place update). r's lists are kept as they are: the caller must not change them.
func (m *Manager) SetActuated(uid types.UID, name string, r v1.ResourceRequirements) {
	alloc, ok := m.allocated[uid]
	i := -1
	if ok {
		if i = containerIndex(alloc.pod, name); i >= 64 {
			i = -1
		}
	}
	if i >= 0 && sameLists(&containerAt(alloc.pod, i).Resources, &r) {
		alloc.same |= 1 << i
		m.allocated[uid] = alloc
		if a := m.actuated[uid]; a != nil {
			a.unset(name)
			if len(a.names) == 0 && a.pod == nil {
				delete(m.actuated, uid)
			}
		}
		return
	}
	if i >= 0 && alloc.same&(1<<i) != 0 {
		alloc.same &^= 1 << i
		m.allocated[uid] = alloc
	}
	m.actuatedFor(uid).set(name, r)
}

// ActuatedPod is what was last set on pod uid's own cgroup of its pod-level resources.
func (m *Manager) ActuatedPod(uid types.UID) *v1.ResourceRequirements {
	if a := m.actuated[uid]; a != nil {
		return a.pod
	}
	return nil
}

// SetActuatedPod records r as set on pod uid's cgroup (kept as it is, as SetActuated).
func (m *Manager) SetActuatedPod(uid types.UID, r *v1.ResourceRequirements) {
	m.actuatedFor(uid).pod = r
}

// --- the resize conditions (upstream's status manager keeps them) ---

// condition is upstream's updatedPodResizeCondition: the transition time moves only when
// the reason does.
func (m *Manager) condition(t v1.PodConditionType, old *v1.PodCondition, reason, message string, generation int64) *v1.PodCondition {
	now := metav1.NewTime(m.clock.Now())
	transition := now
	if old != nil && old.Reason == reason {
		transition = old.LastTransitionTime
	}
	return &v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastProbeTime: now, LastTransitionTime: transition,
		ObservedGeneration: generation, Reason: reason, Message: message}
}

// SetPending sets the pod's PodResizePending condition: Infeasible, or Deferred for any
// other reason. True when it is new or its reason or generation changed (an event is due).
func (m *Manager) SetPending(uid types.UID, reason, message string, generation int64) bool {
	if reason != v1.PodReasonInfeasible {
		reason = v1.PodReasonDeferred
	}
	prev := m.pending[uid]
	if prev != nil && prev.Reason == reason && prev.Message == message && prev.ObservedGeneration == generation {
		return false
	}
	m.pending[uid] = m.condition(v1.PodResizePending, prev, reason, message, generation)
	return prev == nil || prev.Reason != reason || prev.ObservedGeneration != generation
}

// Pending is the pod's PodResizePending condition, nil when none.
func (m *Manager) Pending(uid types.UID) *v1.PodCondition { return m.pending[uid] }

// PendingPods are the pods with a PodResizePending condition, in no order.
func (m *Manager) PendingPods() []types.UID {
	uids := make([]types.UID, 0, len(m.pending))
	for uid := range m.pending {
		uids = append(uids, uid)
	}
	return uids
}

// ClearPending removes the pod's PodResizePending condition.
func (m *Manager) ClearPending(uid types.UID) { delete(m.pending, uid) }

// SetInProgress sets the pod's PodResizeInProgress condition. An existing one keeps its
// generation, and its reason and message unless new ones are given (an Error). It returns
// the condition's generation and whether it changed.
func (m *Manager) SetInProgress(uid types.UID, reason, message string, generation int64) (int64, bool) {
	prev := m.inProgress[uid]
	if prev != nil {
		if reason == "" && message == "" {
			reason, message = prev.Reason, prev.Message
		}
		generation = prev.ObservedGeneration
		if prev.Reason == reason && prev.Message == message {
			return generation, false
		}
	}
	m.inProgress[uid] = m.condition(v1.PodResizeInProgress, prev, reason, message, generation)
	return generation, true
}

// ClearInProgress removes the pod's PodResizeInProgress condition: it returns the
// generation it had and whether there was one (the resize completed).
func (m *Manager) ClearInProgress(uid types.UID) (int64, bool) {
	c := m.inProgress[uid]
	if c == nil {
		return 0, false
	}
	delete(m.inProgress, uid)
	return c.ObservedGeneration, true
}

// InProgressCount is how many pods have a PodResizeInProgress condition.
func (m *Manager) InProgressCount() int { return len(m.inProgress) }

// Conditions are the pod's resize conditions, pending first, for its status.
func (m *Manager) Conditions(uid types.UID) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range []*v1.PodCondition{m.pending[uid], m.inProgress[uid]} {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

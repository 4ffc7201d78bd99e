package podstatus

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/intern"
)

// The cgroup floors: 2 CPU shares and a 10m CFS quota (1ms of a 100ms period). A value at
// or below them on both sides is shown as allocated, since the cgroup cannot tell them apart.
const (
	minShares        = 2
	minMilliCPULimit = 10
)

func specByName(containers []v1.Container, name string) *v1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

// containerStatusResources is a container status's resources, as upstream's
// convertContainerStatusResources: the allocated ones, with the CPU and memory its running
// instance reports applied in place of theirs (or the old status's values, when the
// runtime reports none for the same running instance). A container that does not run
// shows its allocation.
//
// The lists are the spec's as long as nothing differs from it, new ones only where a value
// does (a pod's spec is never changed): a status then costs no copy of them.
func containerStatusResources(spec *v1.Container, st *v1.ContainerStatus, cs *container.ContainerStatus, old *v1.ContainerStatus) *v1.ResourceRequirements {
	r := containerStatusLists(spec, st, cs, old)
	// The spec's own lists (mostly): its record, read only as a pod is, rather than one
	// more of each container; else the last status's when it holds the same lists.
	if sameLists(&spec.Resources, &r) {
		return &spec.Resources
	}
	if old != nil && old.Resources != nil && sameLists(old.Resources, &r) {
		return old.Resources
	}
	return &r
}

// sameLists reports whether a and b hold the very same lists (the spec's, or shared ones:
// see listEdit), which is all an unchanged status needs to find.
func sameLists(a, b *v1.ResourceRequirements) bool {
	return sameMap(a.Requests, b.Requests) && sameMap(a.Limits, b.Limits) &&
		len(a.Claims) == len(b.Claims) && (len(a.Claims) == 0 || &a.Claims[0] == &b.Claims[0])
}

func sameMap(a, b v1.ResourceList) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// containerStatusLists is containerStatusResources' lists.
func containerStatusLists(spec *v1.Container, st *v1.ContainerStatus, cs *container.ContainerStatus, old *v1.ContainerStatus) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: spec.Resources.Requests, Limits: spec.Resources.Limits, Claims: spec.Resources.Claims}
	if cs.State != container.ContainerStateRunning {
		return r
	}
	var oldReq, oldLim v1.ResourceList
	if old != nil && old.State.Running != nil && old.ContainerID == st.ContainerID && old.Resources != nil {
		oldReq, oldLim = old.Resources.Requests, old.Resources.Limits
	}
	req, lim := listEdit{base: r.Requests}, listEdit{base: r.Limits}
	applied := container.ResourcesFromCRI(cs.Resources)
	if applied == nil {
		applied = &container.ContainerResources{}
	}
	if r.Limits != nil {
		if applied.CPULimit != nil {
			if applied.CPULimit.MilliValue() > minMilliCPULimit || lim.milli(v1.ResourceCPU) > minMilliCPULimit {
				lim.set(v1.ResourceCPU, *applied.CPULimit)
			}
		} else {
			lim.preserve(v1.ResourceCPU, oldLim)
		}
		if applied.MemoryLimit != nil {
			lim.set(v1.ResourceMemory, *applied.MemoryLimit)
		} else {
			lim.preserve(v1.ResourceMemory, oldLim)
		}
	}
	if r.Requests != nil {
		if applied.CPURequest != nil {
			if applied.CPURequest.MilliValue() > minShares || req.milli(v1.ResourceCPU) > minShares {
				req.set(v1.ResourceCPU, *applied.CPURequest)
			}
		} else {
			req.preserve(v1.ResourceCPU, oldReq)
		}
		// The CRI reports no memory request: the allocated one stands, or the old one.
		if _, ok := req.get(v1.ResourceMemory); !ok {
			req.preserve(v1.ResourceMemory, oldReq)
		}
	}
	r.Requests, r.Limits = req.list(oldReq), lim.list(oldLim)
	return r
}

// podRequests are pod's aggregate requests: its allocation's, summed once when it was
// allocated (the pod a sync generates for is the allocated one, as upstream's), else
// summed now. Shared with every pod that requests alike (read-only, as the status keeps
// it).
func (g *Generator) podRequests(pod *v1.Pod) v1.ResourceList {
	if g.cfg.Resize != nil {
		if r, ok := g.cfg.Resize.AllocatedPodRequests(pod.UID); ok {
			return r
		}
	}
	return intern.ResourceList(admission.PodRequests(pod))
}

// listEdit is a resource list being edited: base (a spec's, read only) with the values
// set over it. Its list is made once, at the end, and only if it differs from both base
// and the last status's: a status generated at every sync of every pod mostly shows what
// it showed.
type listEdit struct {
	base  v1.ResourceList
	names [4]v1.ResourceName // set: a few, CPU and memory
	qs    [4]resource.Quantity
	n     int
}

// get is name's value in the edited list.
func (e *listEdit) get(name v1.ResourceName) (resource.Quantity, bool) {
	for i := 0; i < e.n; i++ {
		if e.names[i] == name {
			return e.qs[i], true
		}
	}
	q, ok := e.base[name]
	return q, ok
}

// milli is name's value in thousandths, 0 when missing (ResourceList.Cpu().MilliValue()).
func (e *listEdit) milli(name v1.ResourceName) int64 {
	q, _ := e.get(name)
	return q.MilliValue()
}

// set sets name to q, unless the list holds an equal value already.
func (e *listEdit) set(name v1.ResourceName, q resource.Quantity) {
	if cur, ok := e.get(name); ok && cur.Equal(q) {
		return
	}
	for i := 0; i < e.n; i++ {
		if e.names[i] == name {
			e.qs[i] = q
			return
		}
	}
	e.names[e.n], e.qs[e.n] = name, q
	e.n++
}

// preserve sets name to its value in from, if it has one.
func (e *listEdit) preserve(name v1.ResourceName, from v1.ResourceList) {
	if q, ok := from[name]; ok {
		e.set(name, q)
	}
}

// list is the edited list: base when nothing was set, old when it holds the same, else a
// new list shared with every status that shows alike (read-only, as a status's are).
func (e *listEdit) list(old v1.ResourceList) v1.ResourceList {
	if e.n == 0 {
		return e.base
	}
	if e.holds(old) {
		return old
	}
	c := make(v1.ResourceList, len(e.base)+e.n)
	for k, v := range e.base {
		c[k] = v
	}
	for i := 0; i < e.n; i++ {
		c[e.names[i]] = e.qs[i].DeepCopy()
	}
	return intern.ResourceList(c)
}

// holds reports whether l is the edited list, value for value.
func (e *listEdit) holds(l v1.ResourceList) bool {
	if l == nil {
		return false
	}
	n := e.n
	for k := range e.base {
		if !e.isSet(k) {
			n++
		}
	}
	if len(l) != n {
		return false
	}
	for k, v := range l {
		if q, ok := e.get(k); !ok || !q.Equal(v) {
			return false
		}
	}
	return true
}

func (e *listEdit) isSet(name v1.ResourceName) bool {
	for i := 0; i < e.n; i++ {
		if e.names[i] == name {
			return true
		}
	}
	return false
}

// podLevelResources is the pod's status.resources (upstream's
// convertToAPIPodLevelResourcesStatus): for a pod that does not run, its effective
// allocation (its requests and limits, the pod level's or its containers' aggregate);
// for a running one, its pod-level spec with what its pod cgroup is set to.
func (g *Generator) podLevelResources(pod *v1.Pod, phase v1.PodPhase, old v1.PodStatus) *v1.ResourceRequirements {
	if phase != v1.PodRunning || g.cfg.Resize == nil {
		r := pod.Spec.Resources.DeepCopy()
		if r == nil {
			r = &v1.ResourceRequirements{}
		}
		r.Requests = admission.PodRequests(pod)
		r.Limits = admission.PodLimits(pod)
		if pod.Spec.Resources != nil {
			for name, q := range pod.Spec.Resources.Limits {
				r.Limits[name] = q.DeepCopy()
			}
		}
		r.Requests, r.Limits = intern.ResourceList(r.Requests), intern.ResourceList(r.Limits)
		return r
	}
	cpuRequest, cpuLimit, memoryLimit := g.cfg.Resize.PodCgroupResources(pod)
	var oldReq, oldLim v1.ResourceList
	if old.Phase == v1.PodRunning && old.Resources != nil {
		oldReq, oldLim = old.Resources.Requests, old.Resources.Limits
	}
	// The spec's lists, shared until a value differs (see containerStatusResources).
	r := &v1.ResourceRequirements{}
	if pod.Spec.Resources != nil {
		r.Requests, r.Limits, r.Claims = pod.Spec.Resources.Requests, pod.Spec.Resources.Limits, pod.Spec.Resources.Claims
	}
	req, lim := listEdit{base: r.Requests}, listEdit{base: r.Limits}
	if cpuRequest != nil {
		allocated := req.milli(v1.ResourceCPU)
		// shares round-trip loses nothing the API shows: keep the allocated value when
		// the cgroup holds what it converts to
		if (cpuRequest.MilliValue() > minShares || allocated > minShares) && milliCPUToShares(allocated) != milliCPUToShares(cpuRequest.MilliValue()) {
			req.set(v1.ResourceCPU, *cpuRequest)
		}
	} else {
		req.preserve(v1.ResourceCPU, oldReq)
	}
	if _, ok := req.get(v1.ResourceMemory); !ok {
		if q, ok := g.podRequests(pod)[v1.ResourceMemory]; ok {
			req.set(v1.ResourceMemory, q)
		}
	}
	if cpuLimit != nil {
		if cpuLimit.MilliValue() > minMilliCPULimit || lim.milli(v1.ResourceCPU) > minMilliCPULimit {
			lim.set(v1.ResourceCPU, *cpuLimit)
		}
	} else {
		lim.preserve(v1.ResourceCPU, oldLim)
	}
	if memoryLimit != nil {
		lim.set(v1.ResourceMemory, *memoryLimit)
	} else {
		lim.preserve(v1.ResourceMemory, oldLim)
	}
	r.Requests, r.Limits = req.list(oldReq), lim.list(oldLim)
	if old.Resources != nil && sameLists(old.Resources, r) {
		return old.Resources // the last status's record (see containerStatusResources)
	}
	return r
}

// milliCPUToShares is the kubelet's: 1024 shares a core, at least 2.
func milliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return minShares
	}
	return min(max(milliCPU*1024/1000, minShares), 262144)
}

package podstatus

import (
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
	r := &v1.ResourceRequirements{Requests: spec.Resources.Requests, Limits: spec.Resources.Limits, Claims: spec.Resources.Claims}
	if cs.State != container.ContainerStateRunning {
		return r
	}
	var oldRes *v1.ResourceRequirements
	if old != nil && old.State.Running != nil && old.ContainerID == st.ContainerID {
		oldRes = old.Resources
	}
	preserve := func(name v1.ResourceName, from func(*v1.ResourceRequirements) v1.ResourceList, into *v1.ResourceList) {
		if oldRes == nil {
			return
		}
		if q, ok := from(oldRes)[name]; ok {
			setQuantity(into, name, q)
		}
	}
	limits := func(r *v1.ResourceRequirements) v1.ResourceList { return r.Limits }
	requests := func(r *v1.ResourceRequirements) v1.ResourceList { return r.Requests }
	applied := container.ResourcesFromCRI(cs.Resources)
	if applied == nil {
		applied = &container.ContainerResources{}
	}
	if r.Limits != nil {
		if applied.CPULimit != nil {
			if applied.CPULimit.MilliValue() > minMilliCPULimit || r.Limits.Cpu().MilliValue() > minMilliCPULimit {
				setQuantity(&r.Limits, v1.ResourceCPU, *applied.CPULimit)
			}
		} else {
			preserve(v1.ResourceCPU, limits, &r.Limits)
		}
		if applied.MemoryLimit != nil {
			setQuantity(&r.Limits, v1.ResourceMemory, *applied.MemoryLimit)
		} else {
			preserve(v1.ResourceMemory, limits, &r.Limits)
		}
	}
	if r.Requests != nil {
		if applied.CPURequest != nil {
			if applied.CPURequest.MilliValue() > minShares || r.Requests.Cpu().MilliValue() > minShares {
				setQuantity(&r.Requests, v1.ResourceCPU, *applied.CPURequest)
			}
		} else {
			preserve(v1.ResourceCPU, requests, &r.Requests)
		}
		// The CRI reports no memory request: the allocated one stands, or the old one.
		if _, ok := r.Requests[v1.ResourceMemory]; !ok {
			preserve(v1.ResourceMemory, requests, &r.Requests)
		}
	}
	return r
}

// setQuantity sets name to q in *l, copying the list first (it may be a spec's) unless it
// already holds an equal value, which it then keeps.
func setQuantity(l *v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
	if cur, ok := (*l)[name]; ok && cur.Equal(q) {
		return
	}
	c := make(v1.ResourceList, len(*l)+1)
	for k, v := range *l {
		c[k] = v
	}
	c[name] = q.DeepCopy()
	// Pods alike get alike lists: one shared copy (read-only, as a status's are).
	*l = intern.ResourceList(c)
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
	preserve := func(name v1.ResourceName, from v1.ResourceList, into *v1.ResourceList) {
		if q, ok := from[name]; ok {
			setQuantity(into, name, q)
		}
	}
	// The spec's lists, shared until a value differs (see containerStatusResources).
	r := &v1.ResourceRequirements{}
	if pod.Spec.Resources != nil {
		r.Requests, r.Limits, r.Claims = pod.Spec.Resources.Requests, pod.Spec.Resources.Limits, pod.Spec.Resources.Claims
	}
	if cpuRequest != nil {
		allocated := r.Requests.Cpu().MilliValue()
		// shares round-trip loses nothing the API shows: keep the allocated value when
		// the cgroup holds what it converts to
		if (cpuRequest.MilliValue() > minShares || allocated > minShares) && milliCPUToShares(allocated) != milliCPUToShares(cpuRequest.MilliValue()) {
			setQuantity(&r.Requests, v1.ResourceCPU, *cpuRequest)
		}
	} else {
		preserve(v1.ResourceCPU, oldReq, &r.Requests)
	}
	if _, ok := r.Requests[v1.ResourceMemory]; !ok {
		if q, ok := admission.PodRequests(pod)[v1.ResourceMemory]; ok {
			setQuantity(&r.Requests, v1.ResourceMemory, q)
		}
	}
	if cpuLimit != nil {
		if cpuLimit.MilliValue() > minMilliCPULimit || r.Limits.Cpu().MilliValue() > minMilliCPULimit {
			setQuantity(&r.Limits, v1.ResourceCPU, *cpuLimit)
		}
	} else {
		preserve(v1.ResourceCPU, oldLim, &r.Limits)
	}
	if memoryLimit != nil {
		setQuantity(&r.Limits, v1.ResourceMemory, *memoryLimit)
	} else {
		preserve(v1.ResourceMemory, oldLim, &r.Limits)
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

package podstatus

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podQOS computes the pod's QoS class from cpu and memory requests and limits (upstream
// v1qos.GetPodQOS): BestEffort without any, Guaranteed when every container limits both and
// requests equal limits, Burstable otherwise.
func podQOS(pod *v1.Pod) v1.PodQOSClass {
	requests := v1.ResourceList{}
	limits := v1.ResourceList{}
	zero := resource.MustParse("0")
	guaranteed := true
	all := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for name, q := range c.Resources.Requests {
			if (name == v1.ResourceCPU || name == v1.ResourceMemory) && q.Cmp(zero) == 1 {
				add(requests, name, q)
			}
		}
		seen := 0
		for name, q := range c.Resources.Limits {
			if (name == v1.ResourceCPU || name == v1.ResourceMemory) && q.Cmp(zero) == 1 {
				seen++
				add(limits, name, q)
			}
		}
		if seen != 2 {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(limits) == 2 {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

func add(l v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
	if cur, ok := l[name]; ok {
		cur.Add(q)
		l[name] = cur
		return
	}
	l[name] = q.DeepCopy()
}

// QOS is the pod's QoS class (Guaranteed, Burstable, BestEffort), as upstream's GetPodQOS.
func QOS(pod *v1.Pod) v1.PodQOSClass { return podQOS(pod) }

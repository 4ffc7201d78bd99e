package podstatus

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podQOS computes the pod's QoS class from cpu and memory requests and limits (upstream
// v1qos.GetPodQOS): BestEffort without any, Guaranteed when every container limits both and
// requests equal limits, Burstable otherwise. Every sync of every pod asks it, so it sums
// into two fixed pairs instead of upstream's maps and copies no container.
//
// Pod-level resources, when set, decide alone (PodLevelResources): the pod is Guaranteed
// only with both a CPU and a memory limit at the pod level, equal to its requests.
func podQOS(pod *v1.Pod) v1.PodQOSClass {
	var requests, limits qosSums
	guaranteed := true
	if r := pod.Spec.Resources; r != nil {
		return qosClass(requests, limits, addQOS(r, &requests, &limits))
	}
	for _, cs := range [2][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !addQOS(&cs[i].Resources, &requests, &limits) {
				guaranteed = false
			}
		}
	}
	return qosClass(requests, limits, guaranteed)
}

// qosClass is the class of the sums: guaranteed says every limit needed is there.
func qosClass(requests, limits qosSums, guaranteed bool) v1.PodQOSClass {
	if requests.none() && limits.none() {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for j := range qosResources {
			if requests.has[j] && (!limits.has[j] || limits.sum[j].Cmp(requests.sum[j]) != 0) {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && limits.has[0] && limits.has[1] {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

// addQOS adds r's positive CPU and memory requests and limits to the sums, and says
// whether it limits both.
func addQOS(r *v1.ResourceRequirements, requests, limits *qosSums) bool {
	seen := 0
	for j, name := range qosResources {
		if q, ok := r.Requests[name]; ok && q.Sign() > 0 {
			requests.add(j, q)
		}
		if q, ok := r.Limits[name]; ok && q.Sign() > 0 {
			seen++
			limits.add(j, q)
		}
	}
	return seen == len(qosResources)
}

// qosResources are the resources the QoS class looks at.
var qosResources = [2]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// qosSums is a sum per qosResources entry, and whether any was added.
type qosSums struct {
	sum [2]resource.Quantity
	has [2]bool
}

func (s *qosSums) add(j int, q resource.Quantity) {
	if s.has[j] {
		s.sum[j].Add(q)
		return
	}
	s.sum[j], s.has[j] = q.DeepCopy(), true
}

func (s *qosSums) none() bool { return !s.has[0] && !s.has[1] }

// QOS is the pod's QoS class (Guaranteed, Burstable, BestEffort), as upstream's GetPodQOS.
func QOS(pod *v1.Pod) v1.PodQOSClass { return podQOS(pod) }

package podstatus

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podQOS computes the pod's QoS class from cpu and memory requests and limits (upstream
// v1qos.GetPodQOS): BestEffort without any, Guaranteed when every container limits both and
// requests equal limits, Burstable otherwise. Every sync of every pod asks it, so it sums
// into two fixed pairs instead of upstream's maps and copies no container.
func podQOS(pod *v1.Pod) v1.PodQOSClass {
	var requests, limits qosSums
	guaranteed := true
	for _, cs := range [2][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
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
			if seen != len(qosResources) {
				guaranteed = false
			}
		}
	}
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

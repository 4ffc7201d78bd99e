package nodestatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	evictionapi "github.com/minikubelet/minikubelet/pkg/eviction/api"
)

// hardEvictionReservation is what the memory.available and nodefs.available thresholds
// take out of allocatable (upstream cm hardEvictionReservation).
func hardEvictionReservation(thresholds []evictionapi.Threshold, capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, t := range thresholds {
		var name v1.ResourceName
		switch t.Signal {
		case evictionapi.SignalMemoryAvailable:
			name = v1.ResourceMemory
		case evictionapi.SignalNodeFsAvailable:
			name = v1.ResourceEphemeralStorage
		default:
			continue
		}
		c := capacity[name]
		out[name] = *resource.NewQuantity(t.Value(c.Value()), resource.BinarySI)
	}
	return out
}

// NodeAllocatableReservation sums systemReserved, kubeReserved and the hard eviction
// reservation for every resource of capacity (upstream GetNodeAllocatableReservation).
func NodeAllocatableReservation(capacity, systemReserved, kubeReserved v1.ResourceList, thresholds []evictionapi.Threshold) v1.ResourceList {
	eviction := hardEvictionReservation(thresholds, capacity)
	out := v1.ResourceList{}
	for name := range capacity {
		value := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := systemReserved[name]; ok {
			value.Add(q)
		}
		if q, ok := kubeReserved[name]; ok {
			value.Add(q)
		}
		if q, ok := eviction[name]; ok {
			value.Add(q)
		}
		if !value.IsZero() {
			out[name] = *value
		}
	}
	return out
}

// Usage is the node's simulated resource use at one instant.
type Usage struct {
	// MemoryBytes is the node's memory working set.
	MemoryBytes int64
	// PodMemoryBytes is the pods' part of it. With HasPodMemory the allocatableMemory.available
	// signal is observed (upstream's pod cgroup against the node's allocatable memory).
	PodMemoryBytes int64
	HasPodMemory   bool
	// DiskBytes is the used bytes of the node filesystem; DiskCapacity its size (<= 0: the
	// machine's ephemeral storage).
	DiskBytes, DiskCapacity int64
	// PIDs is the number of processes running.
	PIDs int64
}

// UsageProvider supplies the simulated resource usage the pressure conditions compare
// with the thresholds, in one call per observation: at 10,000 pods adding up the runtime's
// containers is the dearest part of a node status update. Implementations must be safe
// for concurrent use.
type UsageProvider interface {
	Usage() Usage
}

// observation is the tracker's name for an observation.
type observation = evictionapi.Observation

// pressureTracker is the part of the eviction manager that turns observations into node
// conditions: a condition holds while its threshold is crossed and for the transition
// period after it was last crossed.
type pressureTracker struct {
	thresholds   []evictionapi.Threshold
	transition   time.Duration
	lastObserved map[v1.NodeConditionType]time.Time
	active       map[v1.NodeConditionType]bool
	crossed      []string
}

func newPressureTracker(thresholds []evictionapi.Threshold, transition time.Duration) *pressureTracker {
	return &pressureTracker{
		thresholds:   thresholds,
		transition:   transition,
		lastObserved: map[v1.NodeConditionType]time.Time{},
		active:       map[v1.NodeConditionType]bool{},
	}
}

// synchronize evaluates every threshold against obs at now and updates which pressure
// conditions are active. Not safe for concurrent use (the Manager serialises it).
func (p *pressureTracker) synchronize(now time.Time, obs map[evictionapi.Signal]observation) {
	met := map[v1.NodeConditionType]bool{}
	p.crossed = p.crossed[:0]
	for _, t := range p.thresholds {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		if o.Available < t.Value(o.Capacity) {
			met[evictionapi.SignalCondition(t.Signal)] = true
			p.crossed = append(p.crossed, t.String())
		}
	}
	for cond := range met {
		p.lastObserved[cond] = now
	}
	for _, cond := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		last, seen := p.lastObserved[cond]
		p.active[cond] = met[cond] || (seen && now.Sub(last) < p.transition)
	}
}

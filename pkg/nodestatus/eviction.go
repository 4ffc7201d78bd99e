package nodestatus

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal (pkg/kubelet/eviction/api).
type Signal string

// Every signal upstream accepts in evictionHard. The simulator observes memory.available,
// allocatableMemory.available, nodefs.available, imagefs.available, containerfs.available
// (all three on the one simulated filesystem) and pid.available; the inode signals are
// accepted but never crossed (there are no inodes in the model).
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalContainerFsAvailable       Signal = "containerfs.available"
	SignalContainerFsInodesFree      Signal = "containerfs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
)

var signalCondition = map[Signal]v1.NodeConditionType{
	SignalMemoryAvailable:            v1.NodeMemoryPressure,
	SignalAllocatableMemoryAvailable: v1.NodeMemoryPressure,
	SignalNodeFsAvailable:            v1.NodeDiskPressure,
	SignalNodeFsInodesFree:           v1.NodeDiskPressure,
	SignalImageFsAvailable:           v1.NodeDiskPressure,
	SignalImageFsInodesFree:          v1.NodeDiskPressure,
	SignalContainerFsAvailable:       v1.NodeDiskPressure,
	SignalContainerFsInodesFree:      v1.NodeDiskPressure,
	SignalPIDAvailable:               v1.NodePIDPressure,
}

// DefaultEvictionHard is the kubelet's Linux default evictionHard.
var DefaultEvictionHard = map[string]string{
	"memory.available":  "100Mi",
	"nodefs.available":  "10%",
	"nodefs.inodesFree": "5%",
	"imagefs.available": "15%",
}

// DefaultPressureTransitionPeriod is upstream evictionPressureTransitionPeriod: how long a
// pressure condition stays True after its threshold was last crossed.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// Threshold is one hard eviction threshold: the signal is crossed when the available
// amount drops below Quantity, or below Percentage of the capacity.
type Threshold struct {
	Signal     Signal
	Quantity   *resource.Quantity
	Percentage float64 // in (0,1]; used when Quantity is nil
}

// Value is the threshold in absolute units for a resource of the given capacity.
func (t Threshold) Value(capacity int64) int64 {
	if t.Quantity != nil {
		return t.Quantity.Value()
	}
	return int64(float64(capacity) * t.Percentage)
}

func (t Threshold) String() string {
	if t.Quantity != nil {
		return fmt.Sprintf("%s<%s", t.Signal, t.Quantity.String())
	}
	return fmt.Sprintf("%s<%s%%", t.Signal, strconv.FormatFloat(t.Percentage*100, 'f', -1, 64))
}

// ParseEvictionHard parses an evictionHard map (signal -> "100Mi" or "10%") as upstream
// does: unknown signals, bad quantities, non-positive quantities and percentages outside
// [0%,100%] are errors naming the key and value; "0%" and "100%" disable a signal. nil
// means DefaultEvictionHard; an empty map means no thresholds. The result is sorted by
// signal.
func ParseEvictionHard(m map[string]string) ([]Threshold, error) {
	if m == nil {
		m = DefaultEvictionHard
	}
	var out []Threshold
	for key, val := range m {
		t, err := parseThreshold(Signal(key), strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("evictionHard[%q]=%q: %w", key, val, err)
		}
		if t != nil {
			out = append(out, *t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Signal < out[j].Signal })
	return out, nil
}

func parseThreshold(signal Signal, val string) (*Threshold, error) {
	if _, ok := signalCondition[signal]; !ok {
		known := make([]string, 0, len(signalCondition))
		for s := range signalCondition {
			known = append(known, string(s))
		}
		sort.Strings(known)
		return nil, fmt.Errorf("unsupported eviction signal %s (one of %s)", signal, strings.Join(known, ", "))
	}
	if strings.HasSuffix(val, "%") {
		if val == "0%" || val == "100%" {
			return nil, nil
		}
		p, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 64)
		if err != nil {
			return nil, fmt.Errorf("invalid percentage %q", val)
		}
		if p < 0 {
			return nil, fmt.Errorf("eviction percentage threshold %s must be >= 0%%: %s", signal, val)
		}
		if p > 100 {
			return nil, fmt.Errorf("eviction percentage threshold %s must be <= 100%%: %s", signal, val)
		}
		return &Threshold{Signal: signal, Percentage: p / 100}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("invalid quantity: %w", err)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("eviction threshold %s must be positive: %s", signal, q.String())
	}
	return &Threshold{Signal: signal, Quantity: &q}, nil
}

// hardEvictionReservation is what the memory.available and nodefs.available thresholds
// take out of allocatable (upstream cm hardEvictionReservation).
func hardEvictionReservation(thresholds []Threshold, capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, t := range thresholds {
		var name v1.ResourceName
		switch t.Signal {
		case SignalMemoryAvailable:
			name = v1.ResourceMemory
		case SignalNodeFsAvailable:
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
func NodeAllocatableReservation(capacity, systemReserved, kubeReserved v1.ResourceList, thresholds []Threshold) v1.ResourceList {
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

// Observation is a signal's available amount and the capacity it is out of.
type Observation struct{ Available, Capacity int64 }

// observation is the tracker's name for it.
type observation = Observation

// SignalCondition is the node condition a signal's thresholds drive.
func SignalCondition(s Signal) v1.NodeConditionType { return signalCondition[s] }

// pressureTracker is the part of the eviction manager that turns observations into node
// conditions: a condition holds while its threshold is crossed and for the transition
// period after it was last crossed.
type pressureTracker struct {
	thresholds   []Threshold
	transition   time.Duration
	lastObserved map[v1.NodeConditionType]time.Time
	active       map[v1.NodeConditionType]bool
	crossed      []string
}

func newPressureTracker(thresholds []Threshold, transition time.Duration) *pressureTracker {
	return &pressureTracker{
		thresholds:   thresholds,
		transition:   transition,
		lastObserved: map[v1.NodeConditionType]time.Time{},
		active:       map[v1.NodeConditionType]bool{},
	}
}

// synchronize evaluates every threshold against obs at now and updates which pressure
// conditions are active. Not safe for concurrent use (the Manager serialises it).
func (p *pressureTracker) synchronize(now time.Time, obs map[Signal]observation) {
	met := map[v1.NodeConditionType]bool{}
	p.crossed = p.crossed[:0]
	for _, t := range p.thresholds {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		if o.Available < t.Value(o.Capacity) {
			met[signalCondition[t.Signal]] = true
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

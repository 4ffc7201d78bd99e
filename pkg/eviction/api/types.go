package evictionapi

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal.
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

// Observation is a signal's available amount and the capacity it is out of.
type Observation struct{ Available, Capacity int64 }

// SignalCondition is the node condition a signal's thresholds drive.
func SignalCondition(s Signal) v1.NodeConditionType { return signalCondition[s] }

package nodestatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	evictionapi "github.com/minikubelet/minikubelet/pkg/eviction/api"
)

func TestPressureTracker(t *testing.T) {
	th, err := evictionapi.ParseEvictionHard(map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "pid.available": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	const mi = 1 << 20
	p := newPressureTracker(th, 5*time.Minute)
	now := t0
	active := func() []v1.NodeConditionType {
		var out []v1.NodeConditionType
		for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
			if p.active[c] {
				out = append(out, c)
			}
		}
		return out
	}
	obs := func(memAvail, diskAvail, pidAvail int64) map[evictionapi.Signal]observation {
		return map[evictionapi.Signal]observation{
			evictionapi.SignalMemoryAvailable:  {Available: memAvail, Capacity: 1024 * mi},
			evictionapi.SignalNodeFsAvailable:  {Available: diskAvail, Capacity: 1000},
			evictionapi.SignalImageFsAvailable: {Available: diskAvail, Capacity: 1000},
			evictionapi.SignalPIDAvailable:     {Available: pidAvail, Capacity: 32768},
		}
	}
	p.synchronize(now, obs(100*mi, 100, 1000))
	if got := active(); len(got) != 0 {
		t.Fatalf("exactly at the thresholds: active %v, want none (available < threshold crosses)", got)
	}
	now = now.Add(10 * time.Second)
	p.synchronize(now, obs(100*mi-1, 99, 999))
	if diff := cmp.Diff([]v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}, active()); diff != "" {
		t.Fatalf("just below: (-want +got)\n%s", diff)
	}
	// pressure relieved: held for the transition period, released after it
	now = now.Add(10 * time.Second)
	p.synchronize(now, obs(500*mi, 500, 5000))
	if len(active()) != 3 {
		t.Fatalf("within the transition period: active %v, want all three held", active())
	}
	now = now.Add(5*time.Minute - 10*time.Second - time.Nanosecond)
	p.synchronize(now, obs(500*mi, 500, 5000))
	if len(active()) != 3 {
		t.Fatalf("just before the transition period ends: %v", active())
	}
	now = now.Add(time.Nanosecond)
	p.synchronize(now, obs(500*mi, 500, 5000))
	if got := active(); len(got) != 0 {
		t.Fatalf("after the transition period: active %v, want none", got)
	}

	noHold := newPressureTracker(th, 0)
	noHold.synchronize(t0, obs(1, 500, 5000))
	if !noHold.active[v1.NodeMemoryPressure] {
		t.Fatal("transition 0: pressure not reported while crossed")
	}
	noHold.synchronize(t0, obs(500*mi, 500, 5000))
	if noHold.active[v1.NodeMemoryPressure] {
		t.Fatal("transition 0: pressure held after relief")
	}
}

package nodestatus

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestParseEvictionHard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]string
		want    []string
		wantErr string
	}{
		{"nil means the defaults", nil, []string{"imagefs.available<15%", "memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%"}, ""},
		{"empty means none", map[string]string{}, nil, ""},
		{"quantities and percentages", map[string]string{"memory.available": "1Gi", "pid.available": "1000", "nodefs.available": "12.5%"}, []string{"memory.available<1Gi", "nodefs.available<12.5%", "pid.available<1k"}, ""},
		{"0% and 100% disable", map[string]string{"memory.available": "0%", "nodefs.available": "100%"}, nil, ""},
		{"unknown signal", map[string]string{"memory.free": "1Gi"}, nil, `evictionHard["memory.free"]="1Gi": unsupported eviction signal memory.free`},
		{"bad quantity", map[string]string{"memory.available": "lots"}, nil, `evictionHard["memory.available"]="lots": invalid quantity`},
		{"zero quantity", map[string]string{"memory.available": "0"}, nil, `evictionHard["memory.available"]="0": eviction threshold memory.available must be positive: 0`},
		{"negative quantity", map[string]string{"pid.available": "-5"}, nil, "must be positive"},
		{"percentage over 100", map[string]string{"nodefs.available": "120%"}, nil, `evictionHard["nodefs.available"]="120%": eviction percentage threshold nodefs.available must be <= 100%: 120%`},
		{"negative percentage", map[string]string{"nodefs.available": "-1%"}, nil, "must be >= 0%"},
		{"bad percentage", map[string]string{"nodefs.available": "x%"}, nil, `invalid percentage "x%"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEvictionHard(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, th := range got {
				s = append(s, th.String())
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("thresholds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPressureTracker(t *testing.T) {
	th, err := ParseEvictionHard(map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "pid.available": "1000"})
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
	obs := func(memAvail, diskAvail, pidAvail int64) map[Signal]observation {
		return map[Signal]observation{
			SignalMemoryAvailable:  {Available: memAvail, Capacity: 1024 * mi},
			SignalNodeFsAvailable:  {Available: diskAvail, Capacity: 1000},
			SignalImageFsAvailable: {Available: diskAvail, Capacity: 1000},
			SignalPIDAvailable:     {Available: pidAvail, Capacity: 32768},
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

package fake

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// TestCPUPressure: a busy loop that gets less than the core it asks for (its CFS quota, or
// its share of a node whose busy loops ask for more than it has) stalls the rest of the
// time: cpu.pressure's total counts it, and its averages move towards that share as the
// kernel's do, one 2-second period at a time. A loop that gets its core, and a program
// that sleeps, never stall. The pod's and the node's sum their containers'.
func TestCPUPressure(t *testing.T) {
	const busy = "while :; do :; done"
	tests := []struct {
		name     string
		capacity int64
		pods     []struct{ limit, shares int64 }
		script   string
		stall    []float64 // the share of the time each stalls, by pod
	}{
		{name: "throttled to a quarter", capacity: 4000, pods: []struct{ limit, shares int64 }{{250, 256}}, script: busy, stall: []float64{0.75}},
		{name: "a core of its own", capacity: 4000, pods: []struct{ limit, shares int64 }{{0, 2}}, script: busy, stall: []float64{0}},
		{name: "two loops on one core", capacity: 1000, pods: []struct{ limit, shares int64 }{{0, 1024}, {0, 1024}}, script: busy, stall: []float64{0.5, 0.5}},
		{name: "asleep", capacity: 1000, pods: []struct{ limit, shares int64 }{{100, 102}}, script: "sleep infinity", stall: []float64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{CPUCapacityMilli: tt.capacity})
			var ids []string
			for i, p := range tt.pods {
				ids = append(ids, startCPU(t, r, fmt.Sprintf("u-%d", i), p.limit, p.shares, tt.script))
			}
			const secs = 20
			run(t, r, clk, secs*time.Second)
			var nodeWant float64
			for i, id := range ids {
				s := cpuOf(t, r, id)
				nodeWant += tt.stall[i]
				if tt.stall[i] == 0 {
					if s.CPUPressure != nil && s.CPUPressure.Some.Total > 0 {
						t.Errorf("pod %d: stalled %dus, want none", i, s.CPUPressure.Some.Total)
					}
					continue
				}
				p := s.CPUPressure
				if p == nil {
					t.Fatalf("pod %d: no cpu.pressure, want %.0f%% stalled", i, tt.stall[i]*100)
				}
				// The loop starts within the first quantum: about the share of 20s.
				if got, want := float64(p.Some.Total)/1e6, tt.stall[i]*secs; math.Abs(got-want) > 0.1 {
					t.Errorf("pod %d: stalled %.3fs, want about %.3fs", i, got, want)
				}
				if p.Full != p.Some {
					t.Errorf("pod %d: full %+v, want some's %+v (one task)", i, p.Full, p.Some)
				}
				// After 10 periods at the same share: share * (1 - decay^10), within a
				// period's worth for the loop's late start.
				for j, got := range []float64{p.Some.Avg10, p.Some.Avg60, p.Some.Avg300} {
					want := tt.stall[i] * 100 * (1 - math.Pow(psiDecay[j], secs/2))
					low := tt.stall[i] * 100 * (1 - math.Pow(psiDecay[j], secs/2-1))
					if got > want+1e-9 || got < low-1e-9 {
						t.Errorf("pod %d: avg[%d] = %.3f, want %.3f (at least %.3f)", i, j, got, want, low)
					}
				}
			}
			sandboxes, err := r.ListPodSandboxStats(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, sb := range sandboxes {
				c := cpuOf(t, r, ids[podIndex(t, sb.Metadata.UID)])
				if (sb.CPUPressure == nil) != (c.CPUPressure == nil) || sb.CPUPressure != nil && *sb.CPUPressure != *c.CPUPressure {
					t.Errorf("pod %s: pod cgroup's pressure %+v, want its one container's %+v", sb.Metadata.UID, sb.CPUPressure, c.CPUPressure)
				}
			}
			node := r.NodeCPUPressure()
			if nodeWant == 0 {
				if node != nil && node.Some.Total > 0 {
					t.Errorf("node stalled %dus, want none", node.Some.Total)
				}
				return
			}
			if got, want := float64(node.Some.Total)/1e6, nodeWant*secs; math.Abs(got-want) > 0.2 {
				t.Errorf("node stalled %.3fs, want about %.3fs (its containers' summed)", got, want)
			}
			if node.Full != (cri.PSIData{}) {
				t.Errorf("node full = %+v, want zero", node.Full)
			}
		})
	}
}

func podIndex(t *testing.T, uid string) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(uid, "u-%d", &i); err != nil {
		t.Fatalf("pod %q: %v", uid, err)
	}
	return i
}

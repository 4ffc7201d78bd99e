package fake

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cpubudget"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

// startCPU starts a container in pod uid running script with a CPU limit (millicores, 0:
// none) and shares.
func startCPU(t *testing.T, r *Runtime, uid string, limit, shares int64, script string) string {
	t.Helper()
	return startBusybox(t, r, uid, func(cc *cri.ContainerConfig) {
		cc.Command = []string{"sh", "-c", script}
		cc.Resources = &cri.ContainerResources{CPUShares: shares}
		if limit > 0 {
			cc.Resources.CPUPeriod, cc.Resources.CPUQuota = 100000, limit*100
		}
	})
}

func cpuOf(t *testing.T, r *Runtime, id string) cri.ContainerStats {
	t.Helper()
	stats, err := r.ListContainerStats(context.Background(), &cri.ContainerStatsFilter{ID: id})
	if err != nil || len(stats) != 1 {
		t.Fatalf("stats of %s: %v %v", id, stats, err)
	}
	return stats[0]
}

// TestCPUFollowsThePrograms: a busy loop uses a core, at most its limit (throttled in
// every period it is busy), or its share of the node by CPU shares; an idle program 5m;
// the counter integrates the rate over time, so it never drops when a loop stops.
func TestCPUFollowsThePrograms(t *testing.T) {
	const busy = "while :; do :; done"
	tests := []struct {
		name     string
		capacity int64
		pods     []struct{ limit, shares int64 }
		script   string
		want     []int64 // millicores, by pod
	}{
		{name: "a busy loop uses a core", capacity: 4000, pods: []struct{ limit, shares int64 }{{0, 2}}, script: busy, want: []int64{1000}},
		{name: "at most its limit", capacity: 4000, pods: []struct{ limit, shares int64 }{{100, 102}, {2500, 2560}}, script: busy, want: []int64{100, 1000}},
		{name: "sharing a small node by shares", capacity: 1000, pods: []struct{ limit, shares int64 }{{0, 1024}, {0, 512}, {0, 512}}, script: busy,
			want: []int64{500, 250, 250}},
		{name: "an idle program", capacity: 4000, pods: []struct{ limit, shares int64 }{{0, 2}}, script: "sleep infinity", want: []int64{DefaultCPUMilli}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{CPUCapacityMilli: tt.capacity})
			var ids []string
			for i, p := range tt.pods {
				ids = append(ids, startCPU(t, r, fmt.Sprintf("u-%d", i), p.limit, p.shares, tt.script))
			}
			run(t, r, clk, 10*time.Second)
			for i, id := range ids {
				s := cpuOf(t, r, id)
				if got := int64(s.UsageNanoCores / 1e6); got != tt.want[i] {
					t.Errorf("pod %d: %dm, want %dm", i, got, tt.want[i])
				}
				// About the rate over the 10s (in the first quantum, a loop busy before the
				// others has more than its share).
				if secs := float64(s.UsageCoreNanoSeconds) / 1e9; secs < float64(tt.want[i])*9.8/1000 || secs > float64(tt.want[i])*10.1/1000+0.01 {
					t.Errorf("pod %d: %.3f CPU-seconds over 10s, want about %.3f", i, secs, float64(tt.want[i])*10/1000)
				}
				if tt.pods[i].limit > 0 && tt.pods[i].limit < 1000 && tt.script == busy {
					if s.CFSThrottled < s.CFSPeriods-2 || s.CFSPeriods < 99 {
						t.Errorf("pod %d: throttled in %d of %d periods, want all but the first", i, s.CFSThrottled, s.CFSPeriods)
					}
				}
			}
		})
	}
}

// TestCPUCounterNeverDrops: a loop that runs for a while then sleeps keeps what it used.
func TestCPUCounterNeverDrops(t *testing.T) {
	r, clk := newRuntime(t, Config{CPUCapacityMilli: 4000})
	// About 2s of busy work at a core: 200 quanta of 10,000 steps.
	id := startCPU(t, r, "u-0", 0, 2, "i=0; while [ $i -lt 600000 ]; do i=$((i+1)); done; sleep infinity")
	var last uint64
	busySeen := false
	for i := 0; i < 60; i++ {
		run(t, r, clk, 500*time.Millisecond)
		s := cpuOf(t, r, id)
		if s.UsageCoreNanoSeconds < last {
			t.Fatalf("at %v the counter dropped from %d to %d", time.Duration(i+1)*500*time.Millisecond, last, s.UsageCoreNanoSeconds)
		}
		last = s.UsageCoreNanoSeconds
		busySeen = busySeen || s.UsageNanoCores == 1e9
	}
	if s := cpuOf(t, r, id); !busySeen || s.UsageNanoCores != DefaultCPUMilli*1e6 || last < uint64(time.Second) {
		t.Errorf("busy seen %v, rate now %d, used %v; want a core while busy, 5m after, over a second in all", busySeen, s.UsageNanoCores, time.Duration(last))
	}
}

// TestLimitSlowsTheLoop: a loop under 100m progresses a tenth as fast as an unlimited one.
func TestLimitSlowsTheLoop(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	script := "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done"
	fast := startCPU(t, r, "u-fast", 0, 2, script)
	slow := startCPU(t, r, "u-slow", 100, 102, script)
	var fastAt, slowAt time.Duration
	for at := time.Duration(0); at < time.Minute && (fastAt == 0 || slowAt == 0); at += 100 * time.Millisecond {
		run(t, r, clk, 100*time.Millisecond)
		if fastAt == 0 && status(t, r, fast).State == cri.ContainerExited {
			fastAt = at
		}
		if slowAt == 0 && status(t, r, slow).State == cri.ContainerExited {
			slowAt = at
		}
	}
	if fastAt == 0 || slowAt < 8*fastAt || slowAt > 12*fastAt {
		t.Errorf("unlimited done after %v, 100m after %v: want about ten times as long", fastAt, slowAt)
	}
}

// tickingClock is a fake clock every reading of which moves it on: each machine step
// takes time, as on the real clock.
type tickingClock struct {
	*testclock.FakeClock
	tick time.Duration
}

func (c *tickingClock) Now() time.Time {
	c.FakeClock.Step(c.tick)
	return c.FakeClock.Now()
}

// TestProgramCPUBudget: with a budget, the programs of busy containers get at most its
// rate of the runtime's clock, stepped in turn, and only in the runtime loop's own steps.
func TestProgramCPUBudget(t *testing.T) {
	fc := testclock.NewFakeClock(epoch)
	clk := &tickingClock{FakeClock: fc, tick: 2 * time.Millisecond} // a machine step takes 4ms or more: 20 loops ask 8 cores
	budget := cpubudget.New(250)
	r, err := New(Config{Clock: clk, ProgramCPU: budget, CPUCapacityMilli: 4000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, startCPU(t, r, fmt.Sprintf("u-%02d", i), 0, 2, "while :; do :; done"))
	}
	// A CRI call makes wakes due but runs no program.
	fc.Step(time.Second)
	queued := len(r.runq)
	if _, err := r.ListContainers(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(r.runq) <= queued && len(r.runq) == 0 {
		t.Fatalf("no program step waits in the run queue after a CRI call")
	}
	steps := 0
	start := fc.Now()
	var used0 time.Duration
	for _, id := range ids {
		used0 += time.Duration(cpuOf(t, r, id).UsageCoreNanoSeconds)
	}
	for fc.Now().Sub(start) < 10*time.Second {
		// As the node's table steps them: the runtime loop first, the programs loop last.
		due, programs := r.Due(fc.Now()), r.ProgramsDue(fc.Now())
		next := due
		if next.IsZero() || !programs.IsZero() && programs.Before(next) {
			next = programs
		}
		if next.After(fc.Now()) {
			fc.SetTime(next)
		}
		if !due.IsZero() && !due.After(fc.Now()) {
			r.Step(context.Background())
		} else {
			r.StepPrograms(context.Background())
		}
		steps++
	}
	used := -used0
	for _, id := range ids {
		used += time.Duration(cpuOf(t, r, id).UsageCoreNanoSeconds)
	}
	elapsed := fc.Now().Sub(start)
	if r.busyShares == 0 {
		t.Errorf("no container is busy")
	}
	// The model's figure is the containers' (a core each would be 20 cores; the node has 4).
	if perSec := float64(used) / float64(elapsed); perSec < 3.8 || perSec > 4.05 {
		t.Errorf("the containers show %.2f cores, want the node's 4", perSec)
	}
	// The programs took at most the budget's rate of the clock, and about all of it.
	if max := elapsed/4 + cpubudget.DefaultBurst + time.Millisecond; r.programTime > max || r.programTime < elapsed/5 {
		t.Errorf("programs took %v of %v, want about a quarter (at most %v)", r.programTime, elapsed, max)
	}
	t.Logf("%d runtime steps over %v, programs took %v", steps, elapsed, r.programTime)
}

// TestProgramsWaitForTheKubelet: with a budget, programs due to run wait for the programs
// loop, which comes after the kubelet's loops; the runtime's own loop runs them only once
// they have waited ProgramMaxWait.
func TestProgramsWaitForTheKubelet(t *testing.T) {
	fc := testclock.NewFakeClock(epoch)
	r, err := New(Config{Clock: fc, ProgramCPU: cpubudget.New(500), CPUCapacityMilli: 4000})
	if err != nil {
		t.Fatal(err)
	}
	startCPU(t, r, "u-0", 0, 2, "while :; do :; done")
	fc.Step(time.Second)
	r.Step(context.Background()) // the wake moves to the run queue
	if len(r.runq) == 0 {
		t.Fatal("no program waits in the run queue")
	}
	if due := r.ProgramsDue(fc.Now()); due.After(fc.Now()) || due.IsZero() {
		t.Errorf("programs loop due at %v, want now (%v)", due, fc.Now())
	}
	if due := r.Due(fc.Now()); due.Before(fc.Now().Add(ProgramMaxWait)) {
		t.Errorf("runtime loop due at %v for the waiting programs, want %v after now", due.Sub(fc.Now()), ProgramMaxWait)
	}
	r.Step(context.Background())
	if len(r.runq) == 0 {
		t.Fatal("the runtime loop ran the programs before they waited ProgramMaxWait")
	}
	fc.Step(ProgramMaxWait)
	r.Step(context.Background())
	if len(r.runq) != 0 {
		t.Errorf("%d program steps still wait after ProgramMaxWait: the runtime loop did not run them", len(r.runq))
	}
}

// TestProcessesCount: the processes a pod's programs run are its pids cgroup's count and
// the node's, as the pid.available signal and its eviction ranking read them.
func TestProcessesCount(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	r.SetPIDUsage(100) // the node's own
	startCPU(t, r, "u-0", 0, 2, "sleep 1000 & sleep 1000 & wait")
	startCPU(t, r, "u-1", 0, 2, "sleep 1000")
	run(t, r, clk, time.Second)
	stats, err := r.ListPodSandboxStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, s := range stats {
		got[s.Metadata.UID] = s.Processes
	}
	if got["u-0"] != 3 || got["u-1"] != 1 {
		t.Errorf("processes by pod %v, want u-0: 3 (the shell and its two sleeps), u-1: 1", got)
	}
	if u := r.Usage(); u.PIDs != 104 {
		t.Errorf("node PIDs %d, want 104", u.PIDs)
	}
}

// TestPodPidsLimit: podPidsLimit is the pod's pids.max: its containers' processes
// together; a fork past it fails as fork(2) does in a full pids cgroup.
func TestPodPidsLimit(t *testing.T) {
	r, clk := newRuntime(t, Config{PodPidsLimit: 5})
	id := startCPU(t, r, "u-0", 0, 2, "for i in 1 2 3 4 5 6; do sleep 1000 & done; wait")
	run(t, r, clk, time.Second)
	stats, err := r.ListPodSandboxStats(context.Background())
	if err != nil || len(stats) != 1 {
		t.Fatal(stats, err)
	}
	if stats[0].Processes != 5 {
		t.Errorf("processes %d, want the limit, 5 (the shell and 4 sleeps)", stats[0].Processes)
	}
	if log := logText(t, r, id); !strings.Contains(log, "sh: can't fork: Resource temporarily unavailable") {
		t.Errorf("log %q, want the shell's can't fork", log)
	}
}

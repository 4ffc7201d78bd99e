package fake

import (
	"runtime"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/memcg"
)

// startLimited starts a container running command in pod uid with a memory limit and
// oom_score_adj.
func startLimited(t *testing.T, r *Runtime, uid string, limit, adj int64, command ...string) string {
	t.Helper()
	return startBusybox(t, r, uid, func(cc *cri.ContainerConfig) {
		cc.Command = command
		cc.Resources = &cri.ContainerResources{MemoryLimitInBytes: limit, OomScoreAdj: adj}
	})
}

// TestProgramsLiveInTheirMemoryLimit: what a container's programs hold counts against its
// limit before it is allocated; past the limit the container is OOM-killed (137,
// OOMKilled) and the daemon never held much more than the limit for it.
func TestProgramsLiveInTheirMemoryLimit(t *testing.T) {
	const limit = 64 << 20
	tests := []struct {
		name    string
		script  string
		oom     bool
		minUsed int64 // the working set reported while it runs (when it does not OOM)
	}{
		{name: "a doubling string", script: `s=x; while true; do s="$s$s"; done`, oom: true},
		{name: "appending to a variable", script: `s=0123456789abcdef; while :; do s="$s$s$s$s"; t="$s"; done`, oom: true},
		{name: "positional parameters", script: `set -- a b c d; while :; do set -- "$@" "$@"; done`, oom: true},
		{name: "an awk array", script: `awk 'BEGIN { while (1) a[i++] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" }'`, oom: true},
		{name: "sort keeping its input", script: `yes 0123456789012345678901234567890123456789 | sort`, oom: true},
		{name: "a function's locals", script: `f() { local v="$1$1"; f "$v"; }; f 0123456789abcdef`, oom: true},
		{name: "a large string within the limit", script: `s=0123456789abcdef; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do s="$s$s"; done; sleep 1000`,
			minUsed: 16 << 20},
		{name: "a loop that frees what it made", script: `i=0; while [ $i -lt 2000 ]; do x=$(yes | head -c 100000); y="$x$x"; unset y; i=$((i+1)); done; sleep 1000`},
		{name: "pipes that close full", script: `i=0; while [ $i -lt 3000 ]; do yes | head -1 >/dev/null; i=$((i+1)); done; sleep 1000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			id := startLimited(t, r, "u-mem", limit, 0, "sh", "-c", tt.script)
			var peak uint64
			for i := 0; i < 120; i++ {
				run(t, r, clk, time.Second)
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				if status(t, r, id).State == cri.ContainerExited {
					break
				}
			}
			st := status(t, r, id)
			if tt.oom {
				if st.State != cri.ContainerExited || st.ExitCode != 137 || st.Reason != ReasonOOMKilled {
					t.Fatalf("state %v code %d reason %q, want EXITED 137 OOMKilled", st.State, st.ExitCode, st.Reason)
				}
			} else {
				if st.State != cri.ContainerRunning {
					t.Fatalf("state %v code %d reason %q, want RUNNING", st.State, st.ExitCode, st.Reason)
				}
				use, err := r.ContainerMemoryUsage(id)
				if err != nil {
					t.Fatal(err)
				}
				if use < tt.minUsed || use > limit {
					t.Errorf("working set %d, want between %d and the limit %d", use, tt.minUsed, limit)
				}
			}
			// The daemon held at most a few times the limit for it (Go's garbage collector
			// frees a dropped value only at its next cycle), never the gigabytes the
			// program asked for.
			if grew := int64(peak) - int64(before.HeapInuse); grew > 4*limit {
				t.Errorf("the heap grew by %d MiB, over four times the %d MiB limit", grew>>20, limit>>20)
			}
		})
	}
}

// TestNodeOOMKillsByScore: when the node's pods together reach the pods' cgroup limit,
// the OOM killer kills the container with the highest badness, BestEffort before
// Guaranteed, and the charging one goes on.
func TestNodeOOMKillsByScore(t *testing.T) {
	r, clk := newRuntime(t, Config{PodsMemoryLimit: 110 << 20})
	// Each holds 40 MiB: a string doubled from 10 bytes 22 times.
	hold := `s=0123456789; i=0; while [ $i -lt 22 ]; do s="$s$s"; i=$((i+1)); done; sleep 1000`
	guaranteed := startLimited(t, r, "u-g", 0, memcg.GuaranteedOOMScoreAdj, "sh", "-c", hold)
	bestEffort := startLimited(t, r, "u-be", 0, memcg.BestEffortOOMScoreAdj, "sh", "-c", hold)
	run(t, r, clk, 2*time.Second)
	burstable := startLimited(t, r, "u-bu", 0, 500, "sh", "-c", hold)
	run(t, r, clk, 2*time.Second)
	want := map[string]string{guaranteed: "running", bestEffort: ReasonOOMKilled, burstable: "running"}
	for id, w := range want {
		st := status(t, r, id)
		got := "running"
		if st.State != cri.ContainerRunning {
			got = st.Reason
		}
		if got != w {
			t.Errorf("%s: %s (code %d), want %s", map[string]string{guaranteed: "guaranteed", bestEffort: "best-effort", burstable: "burstable"}[id], got, st.ExitCode, w)
		}
	}
	if u := r.Usage(); u.PodMemoryBytes > 110<<20 {
		t.Errorf("pods use %d MiB, over the pods' limit", u.PodMemoryBytes>>20)
	}
}

// TestRequestAtTheLimitIsNoOOM: a container whose request equals its limit (a Guaranteed
// pod's, or one with only a limit, whose request defaults to it) reports its request as
// its use while its programs hold less, and is not OOM-killed for it. It used to be, at
// its start.
func TestRequestAtTheLimitIsNoOOM(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	id := startBusybox(t, r, "u-g", func(cc *cri.ContainerConfig) {
		cc.Command = []string{"sh", "-c", "while true; do echo tick; sleep 10; done"}
		cc.Resources = &cri.ContainerResources{MemoryLimitInBytes: 16 << 20, MemoryRequestInBytes: 16 << 20, OomScoreAdj: memcg.GuaranteedOOMScoreAdj}
	})
	run(t, r, clk, time.Minute)
	if st := status(t, r, id); st.State != cri.ContainerRunning {
		t.Fatalf("state %v code %d reason %q, want RUNNING", st.State, st.ExitCode, st.Reason)
	}
	if use, _ := r.ContainerMemoryUsage(id); use != 16<<20 {
		t.Errorf("working set %d, want the request %d", use, 16<<20)
	}
}

// TestTmpfsIsMemory: files a container writes on a memory-backed emptyDir (a tmpfs) are
// its memory: past its limit it is OOM-killed; within it they show in its working set, and
// removing them gives it back.
func TestTmpfsIsMemory(t *testing.T) {
	tests := []struct {
		name   string
		script string
		oom    bool
		used   int64 // at least, while it runs
	}{
		{name: "past the limit", script: "dd if=/dev/zero of=/cache/f bs=1M count=100; sleep 1000", oom: true},
		{name: "within the limit", script: "dd if=/dev/zero of=/cache/f bs=1M count=20; sleep 1000", used: 20 << 20},
		{name: "removed again", script: "dd if=/dev/zero of=/cache/f bs=1M count=40; rm /cache/f; dd if=/dev/zero of=/cache/g bs=1M count=40; sleep 1000", used: 40 << 20},
		{name: "on the writable layer it is disk", script: "dd if=/dev/zero of=/tmp/f bs=1M count=100; sleep 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			if err := r.nodeFS.MkdirAll("/vol", 0o777, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := r.nodeFS.SetFSType("/vol", "tmpfs"); err != nil {
				t.Fatal(err)
			}
			id := startBusybox(t, r, "u-tmpfs", func(cc *cri.ContainerConfig) {
				cc.Command = []string{"sh", "-c", tt.script}
				cc.Mounts = []cri.Mount{{HostPath: "/vol", ContainerPath: "/cache"}}
				cc.Resources = &cri.ContainerResources{MemoryLimitInBytes: 64 << 20}
			})
			run(t, r, clk, time.Minute)
			st := status(t, r, id)
			if tt.oom {
				if st.Reason != ReasonOOMKilled || st.ExitCode != 137 {
					t.Fatalf("state %v code %d reason %q, want OOMKilled 137", st.State, st.ExitCode, st.Reason)
				}
				return
			}
			if st.State != cri.ContainerRunning {
				t.Fatalf("state %v code %d reason %q, want RUNNING", st.State, st.ExitCode, st.Reason)
			}
			if use, _ := r.ContainerMemoryUsage(id); use < tt.used || use > tt.used+1<<20 {
				t.Errorf("working set %d MiB, want %d MiB", use>>20, tt.used>>20)
			}
		})
	}
}

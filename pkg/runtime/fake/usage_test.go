package fake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// startWithResources creates and starts a container with the given memory limit and request.
func startWithResources(t *testing.T, r *Runtime, sbID string, sbCfg *cri.PodSandboxConfig, name string, limit, request int64) string {
	t.Helper()
	ctx := context.Background()
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: testImage}, nil); err != nil {
		t.Fatal(err)
	}
	cc := containerConfig(name, "", testImage)
	cc.Resources = &cri.ContainerResources{MemoryLimitInBytes: limit, MemoryRequestInBytes: request}
	id, err := r.CreateContainer(ctx, sbID, cc, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func statsByName(t *testing.T, r *Runtime) map[string]cri.ContainerStats {
	t.Helper()
	list, err := r.ListContainerStats(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]cri.ContainerStats{}
	for _, s := range list {
		out[s.Metadata.Name] = s
	}
	return out
}

// TestContainerStats: CPU accumulates at the container's cpuUsage (default 5m) on the clock
// and memory is memoryUsage (else the request) plus the growth; exited containers have none.
func TestContainerStats(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", map[string]string{
		"minikubelet.io/behavior.busy": "cpuUsage=250m,memoryUsage=64Mi,memoryGrowth=10Mi/1m",
		"minikubelet.io/behavior.done": "runFor=30s,cpuUsage=1",
	})
	startContainer(t, r, sbID, sbCfg, "busy", "")
	startContainer(t, r, sbID, sbCfg, "done", "")
	startWithResources(t, r, sbID, sbCfg, "plain", 0, 32<<20)
	r.SetMemoryUsage(100 << 20)

	run(t, r, clk, time.Minute)
	st := statsByName(t, r)
	if len(st) != 2 {
		t.Fatalf("stats of %d containers after 1m, want 2 (done exited at 30s): %+v", len(st), st)
	}
	for _, tt := range []struct {
		name           string
		cpuCoreNanos   uint64
		nanoCores      uint64
		workingSetByte uint64
	}{
		{"busy", uint64(60 * 0.25 * 1e9), 250e6, (64 + 10) << 20},
		{"plain", uint64(60 * 0.005 * 1e9), 5e6, 32 << 20},
	} {
		s := st[tt.name]
		if s.UsageCoreNanoSeconds != tt.cpuCoreNanos || s.UsageNanoCores != tt.nanoCores || s.WorkingSetBytes != tt.workingSetByte {
			t.Errorf("%s after 1m: cpu %d core-ns at %d nanocores, memory %d; want %d, %d, %d", tt.name,
				s.UsageCoreNanoSeconds, s.UsageNanoCores, s.WorkingSetBytes, tt.cpuCoreNanos, tt.nanoCores, tt.workingSetByte)
		}
		if s.Timestamp != clk.Now().UnixNano() {
			t.Errorf("%s: timestamp %d, want the clock's %d", tt.name, s.Timestamp, clk.Now().UnixNano())
		}
	}
	if u := r.Usage().MemoryBytes; u != (100+74+32)<<20 {
		t.Errorf("node memory = %dMi, want base 100 + busy 74 + plain 32", u>>20)
	}
	// Cumulative: never goes back, grows with the clock.
	before := st["busy"].UsageCoreNanoSeconds
	run(t, r, clk, time.Second)
	if after := statsByName(t, r)["busy"].UsageCoreNanoSeconds; after != before+250e6 {
		t.Errorf("busy CPU after one more second = %d, want %d", after, before+250e6)
	}
}

// TestMemoryGrowthOOMKill: a leak that reaches the container's memory limit is an OOM kill
// at that instant: exit code 137, reason OOMKilled.
func TestMemoryGrowthOOMKill(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", annotate("leak", "memoryUsage=64Mi,memoryGrowth=64Mi/1m"))
	id := startWithResources(t, r, sbID, sbCfg, "leak", 256<<20, 0)
	// 64Mi + 64Mi/min reaches 256Mi after 3m.
	run(t, r, clk, 3*time.Minute-time.Second)
	if s := status(t, r, id); s.State != cri.ContainerRunning {
		t.Fatalf("state at 2m59s = %v, want running", s.State)
	}
	run(t, r, clk, time.Second)
	s := status(t, r, id)
	if s.State != cri.ContainerExited || s.ExitCode != ExitCodeKilled || s.Reason != ReasonOOMKilled {
		t.Fatalf("at 3m: state %v exit %d reason %q, want exited 137 OOMKilled", s.State, s.ExitCode, s.Reason)
	}
	// Without a limit the same leak runs on (and would end in node memory pressure).
	sb2, cfg2 := runPod(t, r, "u2", annotate("leak", "memoryUsage=64Mi,memoryGrowth=64Mi/1m"))
	free := startWithResources(t, r, sb2, cfg2, "leak", 0, 0)
	run(t, r, clk, time.Hour)
	if s := status(t, r, free); s.State != cri.ContainerRunning {
		t.Errorf("a leak without a limit: state %v after 1h, want running", s.State)
	}
	if m, _ := r.ContainerMemoryUsage(free); m != (64+64*60)<<20 {
		t.Errorf("its memory after 1h = %dMi, want %d", m>>20, 64+64*60)
	}
}

// TestListContainerStatsFaults: the call takes the runtime's faults like any CRI method.
func TestListContainerStatsFaults(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	if _, err := r.AddFault(fault.Spec{Method: "ListContainerStats", Type: fault.Error, Message: "stats down"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ListContainerStats(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "stats down") {
		t.Fatalf("ListContainerStats with an error fault = %v, want the fault's error", err)
	}
}

// TestCPUNeverGoesBack: a pod's CPU (its sandbox's) and the node's are cumulative over
// container exits, removals and sandbox removals, as cgroup counters are.
func TestCPUNeverGoesBack(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	ctx := context.Background()
	sbID, sbCfg := runPod(t, r, "u1", annotate("app", "cpuUsage=1"))
	first := startContainer(t, r, sbID, sbCfg, "app", "")
	run(t, r, clk, 10*time.Second)
	if err := r.StopContainer(ctx, first, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveContainer(ctx, first); err != nil {
		t.Fatal(err)
	}
	startContainer(t, r, sbID, sbCfg, "app", "") // the restart
	run(t, r, clk, 5*time.Second)
	pods, err := r.ListPodSandboxStats(ctx)
	if err != nil || len(pods) != 1 {
		t.Fatalf("ListPodSandboxStats = %+v, %v", pods, err)
	}
	if got, want := pods[0].UsageCoreNanoSeconds, uint64(15e9); got != want {
		t.Errorf("pod CPU after 10s + 5s at one core = %d, want %d (the removed container counts)", got, want)
	}
	if pods[0].UsageNanoCores != 1e9 || pods[0].Metadata.UID != "u1" {
		t.Errorf("pod stats = %+v", pods[0])
	}
	node, nanoCores := r.NodeCPU()
	if node != 15e9 || nanoCores != 1e9 {
		t.Errorf("NodeCPU = %d, %d; want 15e9, 1e9", node, nanoCores)
	}
	if err := r.StopPodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if err := r.RemovePodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	run(t, r, clk, time.Minute)
	if node, nanoCores := r.NodeCPU(); node != 15e9 || nanoCores != 0 {
		t.Errorf("NodeCPU after the pod is gone = %d, %d; want 15e9 kept, 0 in use", node, nanoCores)
	}
}

// imageAndLogBytes is what the images pulled and the containers' logs take on disk, read
// through the public API: the image list and the log lines.
func imageAndLogBytes(t *testing.T, r *Runtime) int64 {
	t.Helper()
	ctx := context.Background()
	images, err := r.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, img := range images {
		n += int64(img.Size)
	}
	cs, err := r.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		lines, err := r.ContainerLog(c.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			n += int64(len(l.Text)) + 1
		}
	}
	return n
}

// TestDiskModel: a container's writable layer is its diskUsage plus its diskGrowth while it
// runs; it stays after an exit and counts in the node's disk use, with the image and the
// log, until removed.
func TestDiskModel(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sbID, sbCfg := runPod(t, r, "u1", annotate("writer", "diskUsage=1Gi,diskGrowth=1Gi/1m,runFor=2m,logEvery=1s,logLine=wrote block {n}"))
	id := startContainer(t, r, sbID, sbCfg, "writer", "")
	run(t, r, clk, time.Minute)
	if got, want := r.Usage().DiskBytes, 2<<30+imageAndLogBytes(t, r); got != want {
		t.Errorf("disk after 1m = %d, want 2Gi plus the image and the log: %d", got, want)
	}
	stats, err := r.ListContainerStats(context.Background(), nil)
	if err != nil || len(stats) != 1 || stats[0].WritableLayerBytes != 2<<30 {
		t.Fatalf("container stats %+v %v, want a 2Gi writable layer", stats, err)
	}
	// 60 lines "wrote block N": 9 of 14 bytes, 51 of 15, and the simulator's start line.
	lines, _ := r.ContainerLog(id, 0, 0)
	if want := uint64(9*14+51*15) + uint64(len(lines[0].Text)+1); stats[0].LogBytes != want {
		t.Errorf("log bytes %d, want %d", stats[0].LogBytes, want)
	}
	run(t, r, clk, 5*time.Minute) // exits at 2m: the layer stops growing and stays
	if got, want := r.Usage().DiskBytes, 3<<30+imageAndLogBytes(t, r); got != want {
		t.Errorf("disk after the exit = %d, want 3Gi plus the image and the log: %d", got, want)
	}
	if err := r.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Usage().DiskBytes, imageAndLogBytes(t, r); got != want {
		t.Errorf("disk after the removal = %d, want the image alone: %d", got, want)
	}
}

// TestLogBytesAreBounded: a container's log takes at most containerLogMaxSize x
// containerLogMaxFiles on disk, as rotation keeps it.
func TestLogBytesAreBounded(t *testing.T) {
	r, clk := newRuntime(t, Config{LogMaxBytes: 1000, LogMaxFiles: 2})
	sbID, sbCfg := runPod(t, r, "u1", annotate("chatty", "logEvery=1s"))
	startContainer(t, r, sbID, sbCfg, "chatty", "")
	run(t, r, clk, time.Hour)
	stats, err := r.ListContainerStats(context.Background(), nil)
	if err != nil || len(stats) != 1 || stats[0].LogBytes != 2000 {
		t.Errorf("log bytes %+v %v, want 2000 (two 1000-byte files)", stats, err)
	}
}

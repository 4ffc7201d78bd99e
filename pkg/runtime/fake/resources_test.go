package fake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

const resizeUID = "6f1c2a4e-0b7d-4c1e-9a55-3d2f8e1b7c90"

// podCgroup is the pod cgroup the kubelet's cgroupfs driver makes for a Burstable pod.
const podCgroup = "/kubepods/burstable/pod" + resizeUID

// startResizable starts a busybox container of a Burstable pod with res, which runs
// command (default: sleeps), with the node's /sys/fs/cgroup mounted at /sysfscgroup as the
// e2e suite mounts it.
func startResizable(t *testing.T, r *Runtime, res *cri.ContainerResources, command ...string) string {
	t.Helper()
	ctx := context.Background()
	cfg := sandboxConfig(resizeUID, nil)
	cfg.CgroupParent = podCgroup
	sb, err := r.RunPodSandbox(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: "busybox:1.36"}, nil); err != nil {
		t.Fatal(err)
	}
	cc := containerConfig("main", "", "busybox:1.36")
	cc.Command = []string{"sh", "-c", "exec sleep infinity"}
	if len(command) > 0 {
		cc.Command = command
	}
	cc.Resources = res
	cc.Mounts = []cri.Mount{{ContainerPath: "/sysfscgroup", HostPath: "/sys/fs/cgroup"}}
	id, err := r.CreateContainer(ctx, sb, cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// shellExec runs script with /bin/sh -c in container id, as the e2e suite's exec does.
func shellExec(t *testing.T, r *Runtime, clk *testclock.FakeClock, id, script string) (stdout, stderr string, code int32) {
	t.Helper()
	var resp *cri.ExecSyncResponse
	err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
		var err error
		resp, err = r.ExecSync(ctx, id, []string{"/bin/sh", "-c", script}, 0)
		return err
	})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return string(resp.Stdout), string(resp.Stderr), resp.ExitCode
}

var burstable = &cri.ContainerResources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimitInBytes: 256 << 20,
	MemoryRequestInBytes: 100 << 20, OomScoreAdj: 936}

// TestContainerSeesItsCgroup: what the e2e suite for in-place resize reads in a container:
// its own cgroup at /sys/fs/cgroup, the node's at a hostPath volume, cgroup2 mounted, and
// its process's CPUs and oom_score_adj.
func TestContainerSeesItsCgroup(t *testing.T) {
	r, clk := newRuntime(t, Config{CPUCapacityMilli: 3500})
	id := startResizable(t, r, burstable)
	tests := []struct {
		name, script     string
		wantOut, wantErr string
		wantCode         int32
	}{
		{"cpu.max", "head -n 1 /sys/fs/cgroup/cpu.max", "50000 100000\n", "", 0},
		{"memory.max", "head -n 1 /sys/fs/cgroup/memory.max", "268435456\n", "", 0},
		{"cpu.weight", "head -n 1 /sys/fs/cgroup/cpu.weight", "59\n", "", 0},
		{"memory.current", "cat /sys/fs/cgroup/memory.current", "104857600\n", "", 0},
		{"read-only", "echo max > /sys/fs/cgroup/cpu.max", "", "/bin/sh: can't create /sys/fs/cgroup/cpu.max: Read-only file system\n", 1},
		{"mount -t cgroup2", "mount -t cgroup2",
			"cgroup on /sys/fs/cgroup type cgroup2 (ro,nosuid,nodev,noexec,relatime)\ncgroup on /sysfscgroup type cgroup2 (rw,relatime)\n", "", 0},
		{"the pod's cgroup by its uid", "find /sysfscgroup -name '*" + strings.ReplaceAll(resizeUID, "-", "_") + "*' -o -name '*" + resizeUID + "*'",
			"/sysfscgroup" + podCgroup + "\n", "", 0},
		{"the pod's cgroup's files", "cd /sysfscgroup" + podCgroup + " && ls cpu.weight cpu.max memory.max && cat " + id + "/cpu.max", "cpu.max\ncpu.weight\nmemory.max\n50000 100000\n", "", 0},
		{"Cpus_allowed_list", "grep Cpus_allowed_list /proc/self/status | cut -f2", "0-3\n", "", 0},
		{"status", "grep -E '^(Name|Cpus_allowed|Uid):' /proc/1/status", "Name:\tsh\nUid:\t0\t0\t0\t0\nCpus_allowed:\tf\n", "", 0},
		{"oom_score_adj", "cat /proc/1/oom_score_adj", "936\n", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := shellExec(t, r, clk, id, tt.script)
			if out != tt.wantOut || errOut != tt.wantErr || code != tt.wantCode {
				t.Errorf("got stdout %q stderr %q code %d, want %q %q %d", out, errOut, code, tt.wantOut, tt.wantErr, tt.wantCode)
			}
		})
	}
}

// TestUpdateContainerResources: an in-place resize shows at once in the container's
// cgroup files, the node's, and its status.
func TestUpdateContainerResources(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	id := startResizable(t, r, burstable)
	upd := &cri.ContainerResources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, MemoryLimitInBytes: 512 << 20, OomScoreAdj: 936}
	if err := r.UpdateContainerResources(context.Background(), id, upd); err != nil {
		t.Fatal(err)
	}
	out, _, _ := shellExec(t, r, clk, id, "cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.weight")
	if want := "100000 100000\n536870912\n100\n"; out != want {
		t.Errorf("the container's cgroup after the update: %q, want %q", out, want)
	}
	node, err := r.NodeFS().ReadFile("/sys/fs/cgroup" + podCgroup + "/" + id + "/memory.max")
	if err != nil || string(node) != "536870912\n" {
		t.Errorf("the node's memory.max: %q, %v", node, err)
	}
	want := *upd
	want.MemoryRequestInBytes = burstable.MemoryRequestInBytes // not in the CRI: kept
	if d := cmp.Diff(&want, status(t, r, id).Resources); d != "" {
		t.Errorf("status resources (-want +got):\n%s", d)
	}
	upd.CPUQuota = 1 // the caller's struct is not the runtime's
	if got := status(t, r, id).Resources.CPUQuota; got != 100000 {
		t.Errorf("status CPUQuota = %d after the caller changed its struct, want 100000", got)
	}
	if err := r.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.CgroupFS().Get(podCgroup + "/" + id); ok {
		t.Error("the container's cgroup outlived it")
	}
	if _, ok := r.CgroupFS().Get(podCgroup); !ok {
		t.Error("the pod's cgroup (the kubelet's) went with its container")
	}
}

func TestUpdateContainerResourcesErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("unknown container", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		err := r.UpdateContainerResources(ctx, "nope", &cri.ContainerResources{})
		if !errors.Is(err, cri.ErrNotFound) || !strings.Contains(err.Error(), "failed to find container") {
			t.Errorf("error %v, want containerd's not found", err)
		}
	})
	t.Run("a limit below what the programs hold OOM-kills", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		id := startResizable(t, r, &cri.ContainerResources{MemoryLimitInBytes: 64 << 20},
			"sh", "-c", `s=0123456789abcdef; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do s="$s$s"; done; sleep 1000`)
		run(t, r, clk, 10*time.Second)
		if err := r.UpdateContainerResources(ctx, id, &cri.ContainerResources{MemoryLimitInBytes: 8 << 20}); err != nil {
			t.Fatal(err)
		}
		st := status(t, r, id)
		if st.State != cri.ContainerExited || st.ExitCode != ExitCodeKilled || st.Reason != ReasonOOMKilled {
			t.Errorf("state %v code %d reason %q, want EXITED 137 OOMKilled", st.State, st.ExitCode, st.Reason)
		}
	})
	t.Run("an exited container: its record only, as containerd", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		id := startResizable(t, r, burstable, "true")
		run(t, r, clk, time.Second)
		if st := status(t, r, id); st.State != cri.ContainerExited {
			t.Fatalf("state %v, want EXITED", st.State)
		}
		if err := r.UpdateContainerResources(ctx, id, &cri.ContainerResources{CPUShares: 2}); err != nil {
			t.Errorf("error %v, want none", err)
		}
		if st := status(t, r, id); st.Resources == nil || st.Resources.CPUShares != 2 || st.State != cri.ContainerExited {
			t.Errorf("status %v resources %+v, want EXITED with the new shares", st.State, st.Resources)
		}
	})
	t.Run("a fault", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		id := startResizable(t, r, burstable)
		if _, err := r.AddFault(fault.Spec{Method: "UpdateContainerResources", Type: fault.Error, Message: "boom"}); err != nil {
			t.Fatal(err)
		}
		err := r.UpdateContainerResources(ctx, id, &cri.ContainerResources{CPUShares: 2})
		var inj *InjectedError
		if !errors.As(err, &inj) || inj.Method != "UpdateContainerResources" {
			t.Errorf("error %v, want the injected fault", err)
		}
		if got := status(t, r, id).Resources.CPUShares; got != 512 {
			t.Errorf("CPUShares = %d after a failed update, want 512", got)
		}
	})
}

// TestDefaultCgroupParent: a sandbox without a CgroupParent (a kubelet that makes no pod
// cgroups) still gets one, removed with it. A container's own cgroup is made when a process
// first runs in it (here an exec), not before.
func TestDefaultCgroupParent(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	sb, cfg := runPod(t, r, "u1", nil)
	id := startContainer(t, r, sb, cfg, "app", "")
	if _, ok := r.CgroupFS().Get("/kubepods/besteffort/podu1/" + id); ok {
		t.Fatal("a container no process ran in has a cgroup")
	}
	if _, err := r.ExecSync(context.Background(), id, []string{"true"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.CgroupFS().Get("/kubepods/besteffort/podu1/" + id); !ok {
		t.Fatal("no container cgroup under /kubepods/besteffort/podu1 once a process ran")
	}
	if err := r.StopContainer(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.RemovePodSandbox(context.Background(), sb); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.CgroupFS().Get("/kubepods/besteffort/podu1"); ok {
		t.Error("the runtime's pod cgroup outlived its sandbox")
	}
}

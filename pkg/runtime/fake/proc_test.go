package fake

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// kubeletMasked and kubeletReadonly are the lists the kubelet sends by default
// (securitycontext.ConvertToRuntimeMaskedPaths on a node without thermal_throttle files).
var (
	kubeletMasked = []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	kubeletReadonly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// TestMaskedProcPaths: what a container sees of /proc by its masked and read-only paths,
// as upstream's ProcMount node e2e specs look at it (`mount | grep /proc`: more than one
// line and some read-only by default, one line and none read-only when unmasked), and what
// the masked files read: nothing, as /dev/null bound over them; their content unmasked.
// Containers with equal lists share one /proc.
func TestMaskedProcPaths(t *testing.T) {
	tests := []struct {
		name               string
		sec                *cri.SecurityContext
		wantLines, wantRO  int
		wantKeys, wantACPI string
		sysWritable        bool
	}{
		{name: "the kubelet's defaults", sec: &cri.SecurityContext{MaskedPaths: kubeletMasked, ReadonlyPaths: kubeletReadonly},
			wantLines: 12, wantRO: 7, wantKeys: "", wantACPI: ""},
		{name: "Unmasked", sec: &cri.SecurityContext{MaskedPaths: []string{}, ReadonlyPaths: []string{}},
			wantLines: 1, wantRO: 0, wantKeys: "keyring", wantACPI: "wakeup", sysWritable: true},
		{name: "privileged: containerd drops the lists", sec: &cri.SecurityContext{Privileged: true, MaskedPaths: kubeletMasked, ReadonlyPaths: kubeletReadonly},
			wantLines: 1, wantRO: 0, wantKeys: "keyring", wantACPI: "wakeup", sysWritable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			ctx := context.Background()
			const image = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
			if _, err := r.PullImage(ctx, cri.ImageSpec{Image: image}, nil); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, uid := range []string{"a", "b"} {
				sb, cfg := runPod(t, r, uid, nil)
				cc := containerConfig("main", "", image)
				cc.Command = []string{"sleep", "infinity"}
				cc.Security = tt.sec
				id, err := r.CreateContainer(ctx, sb, cc, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.StartContainer(ctx, id); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			exec := func(cmd string) string {
				t.Helper()
				var resp *cri.ExecSyncResponse
				if err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
					var err error
					resp, err = r.ExecSync(ctx, ids[0], []string{"sh", "-c", cmd}, 0)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				return string(resp.Stdout) + string(resp.Stderr)
			}
			mounts := strings.TrimSuffix(exec("mount | grep /proc"), "\n")
			if lines := strings.Split(mounts, "\n"); len(lines) != tt.wantLines || strings.Count(mounts, "(ro") != tt.wantRO {
				t.Errorf("mount | grep /proc: %d lines, %d read-only, want %d and %d:\n%s", len(lines), strings.Count(mounts, "(ro"), tt.wantLines, tt.wantRO, mounts)
			}
			if got := exec("cat /proc/keys"); !strings.Contains(got, tt.wantKeys) || tt.wantKeys == "" && got != "" {
				t.Errorf("cat /proc/keys = %q, want %q in it", got, tt.wantKeys)
			}
			if got := exec("ls /proc/acpi"); strings.TrimSpace(got) != tt.wantACPI {
				t.Errorf("ls /proc/acpi = %q, want %q", got, tt.wantACPI)
			}
			if got := exec("grep -c Uid /proc/self/status; cat /proc/1/oom_score_adj"); got != "1\n0\n" {
				t.Errorf("the process's own files: %q", got)
			}
			werr := exec("echo 1 > /proc/sys/kernel/shm_rmid_forced && echo written")
			if written := werr == "written\n"; written != tt.sysWritable {
				t.Errorf("writing /proc/sys: %q, want written %v", werr, tt.sysWritable)
			}
			if n := len(r.procTrees); n != 1 {
				t.Errorf("%d /proc trees for two containers with equal lists, want 1", n)
			}
		})
	}
}

// TestUserNamespaceMaps: a container of a sandbox with a user namespace of its own reads
// the pod's range in /proc/self/uid_map and gid_map, one in the node's namespace the
// identity map of every ID (what upstream's HostUsers specs look for: 65536, and
// 4294967295); a runtime whose handler lacks user namespaces refuses such a sandbox, and
// Status reports its handlers.
func TestUserNamespaceMaps(t *testing.T) {
	ns := &cri.UserNamespace{Mode: cri.NamespaceModePod,
		UIDs: []cri.IDMapping{{HostID: 1 << 30, ContainerID: 0, Length: 65536}},
		GIDs: []cri.IDMapping{{HostID: 1 << 30, ContainerID: 0, Length: 65536}}}
	tests := []struct {
		name     string
		ns       *cri.UserNamespace
		handlers []cri.RuntimeHandler
		want     string
		wantErr  string
	}{
		{name: "the node's namespace", want: "         0          0 4294967295\n"},
		{name: "NODE mode is the node's", ns: &cri.UserNamespace{Mode: cri.NamespaceModeNode}, want: "         0          0 4294967295\n"},
		{name: "the pod's", ns: ns, want: "         0 1073741824      65536\n"},
		{name: "a runtime without user namespaces", ns: ns, handlers: []cri.RuntimeHandler{{Name: ""}}, wantErr: "run pod sandbox: user namespaces are not supported by the runtime"},
		{name: "no mappings", ns: &cri.UserNamespace{Mode: cri.NamespaceModePod}, wantErr: "run pod sandbox: user namespace: a pod-level user namespace needs UID and GID mappings, got 0 and 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{Handlers: tt.handlers})
			ctx := context.Background()
			st, err := r.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantHandlers := DefaultHandlers
			if tt.handlers != nil {
				wantHandlers = tt.handlers
			}
			if !slices.Equal(st.Handlers, wantHandlers) {
				t.Errorf("Status handlers %+v, want %+v", st.Handlers, wantHandlers)
			}
			cfg := sandboxConfig("u", nil)
			cfg.UserNamespace = tt.ns
			sb, err := r.RunPodSandbox(ctx, cfg)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("RunPodSandbox: %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			const image = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
			if _, err := r.PullImage(ctx, cri.ImageSpec{Image: image}, nil); err != nil {
				t.Fatal(err)
			}
			cc := containerConfig("main", "", image)
			cc.Command = []string{"sh", "-c", "cat /proc/self/uid_map /proc/self/gid_map; id -u"}
			id, err := r.CreateContainer(ctx, sb, cc, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			run(t, r, clk, time.Second)
			if got, want := logText(t, r, id), "0s stdout "+strings.TrimSuffix(tt.want, "\n")+"\n0s stdout "+strings.TrimSuffix(tt.want, "\n")+"\n0s stdout 0\n"; got != want {
				t.Errorf("the container printed\n%s\nwant\n%s", got, want)
			}
			if err := r.StopPodSandbox(ctx, sb); err != nil {
				t.Fatal(err)
			}
			if err := r.RemovePodSandbox(ctx, sb); err != nil {
				t.Fatal(err)
			}
			if len(r.userns) != 0 {
				t.Errorf("%d user namespaces kept after the sandbox went", len(r.userns))
			}
		})
	}
}

package kubelet

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"
)

// containerLog is what the pod's first container printed, line by line.
func (h *harness) containerLog(full string) string {
	h.t.Helper()
	p := h.pod(full)
	if p == nil || len(p.Status.ContainerStatuses) == 0 {
		return ""
	}
	lines, err := h.k.Runtime().ContainerLog(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "fake://"), 0, 0)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Text + "\n")
	}
	return b.String()
}

// TestSupplementalGroupsPolicy follows the upstream e2e specs ("SupplementalGroupsPolicy
// [LinuxOnly]"): agnhost's user-defined-in-image (1000) is a member of
// group-defined-in-image (50000) in the image's /etc/group. Merge (or no policy) adds that
// group, Strict does not; the container status reports the process's user, as `id` prints
// it; the node says its runtime honours the policy. On a node whose runtime does not, a
// Strict pod is refused as upstream refuses it, and a Merge pod runs without a user in its
// status.
func TestSupplementalGroupsPolicy(t *testing.T) {
	user := func(groups ...int64) *v1.ContainerUser {
		return &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 1000, SupplementalGroups: groups}}
	}
	tests := []struct {
		name        string
		policy      string // "" : none
		unsupported bool   // runtime.features.supplementalGroupsPolicy: false
		wantLog     string
		wantUser    *v1.ContainerUser
		wantReason  string // a rejection
	}{
		{name: "no policy merges", wantLog: "1000 50000 60000\n", wantUser: user(1000, 50000, 60000)},
		{name: "Merge", policy: "Merge", wantLog: "1000 50000 60000\n", wantUser: user(1000, 50000, 60000)},
		{name: "Strict", policy: "Strict", wantLog: "1000 60000\n", wantUser: user(1000, 60000)},
		{name: "Strict on a runtime without the feature is refused", policy: "Strict", unsupported: true, wantReason: "SupplementalGroupsPolicyNotSupported"},
		{name: "Merge on a runtime without the feature reports no user", policy: "Merge", unsupported: true, wantLog: "1000 50000 60000\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, gate := loadConfig(t, dir)
			cfg.Simulator.Runtime.Features.SupplementalGroupsPolicy = !tt.unsupported
			h := newHarnessWithConfig(t, dir, cfg, gate)
			sc := "  securityContext:\n    runAsUser: 1000\n    supplementalGroups: [60000]\n"
			if tt.policy != "" {
				sc += "    supplementalGroupsPolicy: " + tt.policy + "\n"
			}
			h.write("p.yaml", podManifest("p", "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
				"    command: [sh, -c, 'id -G']\n  restartPolicy: Never\n"+sc))
			full := "p-" + testNode
			if tt.wantReason != "" {
				h.until(30, "the rejection", func() bool { return h.phase(full) == v1.PodFailed }, h.describe)
				p := h.pod(full)
				if p.Status.Reason != tt.wantReason || p.Status.Message != "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node" {
					t.Errorf("status reason %q message %q", p.Status.Reason, p.Status.Message)
				}
				if e := findEvent(h, tt.wantReason, full); e == nil || e.Type != v1.EventTypeWarning {
					t.Errorf("no Warning event %s: %+v", tt.wantReason, e)
				}
				return
			}
			h.until(60, "Succeeded", func() bool { return h.phase(full) == v1.PodSucceeded }, h.describe)
			if got := h.containerLog(full); got != tt.wantLog {
				t.Errorf("id -G printed %q, want %q", got, tt.wantLog)
			}
			if diff := cmp.Diff(tt.wantUser, h.pod(full).Status.ContainerStatuses[0].User); diff != "" {
				t.Errorf("status user (-want +got):\n%s", diff)
			}
			h.round(10 * time.Second) // a node status update
			features := h.k.nodeStatus.GetNode().Status.Features
			if features == nil || features.SupplementalGroupsPolicy == nil || *features.SupplementalGroupsPolicy == tt.unsupported {
				t.Errorf("node status.features = %+v, want supplementalGroupsPolicy %v", features, !tt.unsupported)
			}
		})
	}
}

// TestProcMount follows upstream's ProcMount node e2e specs: by default a container's /proc
// has the kubelet's masked and read-only paths (`mount | grep /proc` lists more than one
// line, some read-only) and /proc/keys and /proc/interrupts (the kubelet masks it,
// containerd's defaults do not) read empty; with procMount: Unmasked (in a pod with
// hostUsers: false) only /proc itself is mounted and /proc/keys has the kernel's keys.
func TestProcMount(t *testing.T) {
	tests := []struct {
		name, extra string
		check       string // a shell test that must pass in the container
	}{
		{"Default", "    securityContext: {procMount: Default}\n",
			`m=$(mount | grep /proc); test $(echo "$m" | wc -l) -gt 1 && echo "$m" | grep -q "(ro" && test -z "$(cat /proc/keys)" && test -z "$(cat /proc/interrupts)"`},
		{"Unmasked", "    securityContext: {procMount: Unmasked}\n  hostUsers: false\n",
			`m=$(mount | grep /proc); test $(echo "$m" | wc -l) -eq 1 && ! echo "$m" | grep -q "(ro" && grep -q keyring /proc/keys`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.write("p.yaml", podManifest("p", "registry.k8s.io/e2e-test-images/busybox:1.37.0-2",
				"    command: [sh, -c, '"+tt.check+"']\n"+tt.extra+"  restartPolicy: Never\n"))
			full := "p-" + testNode
			h.until(60, "a terminated container", func() bool {
				p := h.phase(full)
				return p == v1.PodSucceeded || p == v1.PodFailed
			}, h.describe)
			if p := h.phase(full); p != v1.PodSucceeded {
				t.Errorf("phase %s: the check failed: %s", p, h.containerLog(full))
			}
		})
	}
}

// counter reads an unlabelled counter; name is without the metrics prefix.
func counter(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	name = h.k.Registry().Name(name)
	mfs, err := h.k.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("counter %s not found", name)
	return 0
}

// TestUserNamespaces follows upstream's HostUsers specs: pods with hostUsers: false each get
// a range of 65536 IDs of their own, as /proc/self/uid_map shows; a pod in the node's
// namespace reads the identity map of every ID; the started_user_namespaced_pods counters
// count the pods and the failed starts (a command that is not there); the node lists its
// runtime's handlers with user namespaces; a pod's range is released once it terminated. On a
// node whose runtime lacks them, the sandbox is not made, with upstream's event.
func TestUserNamespaces(t *testing.T) {
	const uidMapPod = "    command: [cat, /proc/self/uid_map]\n  restartPolicy: Never\n"
	t.Run("ranges, metrics, release", func(t *testing.T) {
		h := newHarness(t)
		for _, name := range []string{"a", "b"} {
			h.write(name+".yaml", podManifest(name, "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", uidMapPod+"  hostUsers: false\n"))
		}
		h.write("host.yaml", podManifest("host", "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", uidMapPod+"  hostUsers: true\n"))
		h.write("bogus.yaml", podManifest("bogus", "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", "    command: [bogus]\n  restartPolicy: Never\n  hostUsers: false\n"))
		for _, name := range []string{"a", "b", "host"} {
			full := name + "-" + testNode
			h.until(60, full+" Succeeded", func() bool { return h.phase(full) == v1.PodSucceeded }, h.describe)
		}
		logA, logB, logHost := h.containerLog("a-"+testNode), h.containerLog("b-"+testNode), h.containerLog("host-"+testNode)
		for _, l := range []string{logA, logB} {
			f := strings.Fields(l)
			if len(f) != 3 || f[0] != "0" || f[2] != "65536" || f[1] == "0" {
				t.Errorf("uid_map %q: want 0 mapped for 65536 IDs from a host ID of its own", l)
			}
		}
		if logA == logB {
			t.Errorf("two pods with the same user namespace: %q", logA)
		}
		if logHost != "         0          0 4294967295\n" {
			t.Errorf("the node's namespace: uid_map %q", logHost)
		}
		h.until(30, "the bogus pod's failure", func() bool { return findEvent(h, "Failed", "bogus-"+testNode) != nil }, h.describe)
		if got := counter(t, h, "started_user_namespaced_pods_total"); got != 3 {
			t.Errorf("started_user_namespaced_pods_total = %v, want 3 (a, b, bogus)", got)
		}
		if got := counter(t, h, "started_user_namespaced_pods_errors_total"); got != 1 {
			t.Errorf("started_user_namespaced_pods_errors_total = %v, want 1 (bogus)", got)
		}
		h.round(10 * time.Second)
		handlers := h.k.nodeStatus.GetNode().Status.RuntimeHandlers
		if len(handlers) != 2 || handlers[0].Name != "" || !*handlers[0].Features.UserNamespaces {
			t.Errorf("status.runtimeHandlers %+v, want containerd's with user namespaces", handlers)
		}
		// Each pod's range is released once it terminated (SyncTerminatedPod), before its
		// manifest goes.
		h.until(60, "the ranges released", func() bool { return h.k.userns.InUse() == 0 }, h.describe)
	})
	t.Run("a runtime without user namespaces", func(t *testing.T) {
		dir := t.TempDir()
		cfg, gate := loadConfig(t, dir)
		cfg.Simulator.Runtime.Features.UserNamespaces = false
		h := newHarnessWithConfig(t, dir, cfg, gate)
		h.write("a.yaml", podManifest("a", "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", uidMapPod+"  hostUsers: false\n"))
		full := "a-" + testNode
		h.until(30, "FailedCreatePodSandBox", func() bool { return findEvent(h, "FailedCreatePodSandBox", full) != nil }, h.describe)
		if e := findEvent(h, "FailedCreatePodSandBox", full); e.Message != "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces" {
			t.Errorf("event message %q", e.Message)
		}
		if p := h.phase(full); p != v1.PodPending {
			t.Errorf("phase %s, want Pending", p)
		}
		if got := counter(t, h, "started_user_namespaced_pods_errors_total"); got < 1 {
			t.Errorf("started_user_namespaced_pods_errors_total = %v, want the failure counted", got)
		}
	})
	t.Run("idsPerPod too big for maxPods", func(t *testing.T) {
		dir := t.TempDir()
		cfg, gate := loadConfig(t, dir)
		n := int64(1) << 31
		cfg.Kubelet.UserNamespaces = &kubeletv1beta1.UserNamespaces{IDsPerPod: &n}
		_, err := New(Config{Config: cfg, Gate: gate, Clock: clocktesting.NewFakeClock(epoch)})
		if err == nil || err.Error() != "create user namespace manager: kubelet user assigned IDs are not enough to support 110 pods" {
			t.Errorf("New: %v", err)
		}
	})
}

package kubelet

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/pleg"
)

// TestPodLifecycle follows one static pod through the config paths end to end, through
// the real fake runtime: ADD (running with a full status), an edited manifest (a new UID:
// the old pod is killed, the new one runs), UPDATE with a deletion timestamp (graceful
// termination) and REMOVE (killed, then collected until the runtime is empty).
func TestPodLifecycle(t *testing.T) {
	h := newHarness(t)
	h.write("web.yaml", podManifest("web", "nginx:1.27", withRequests("250m", "128Mi")))
	const name = "web-" + testNode

	// ADD
	h.until(10, "web Running", func() bool { return h.phase(name) == v1.PodRunning }, h.describe)
	pod := h.pod(name)
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses = %+v", pod.Status.ContainerStatuses)
	}
	cs := pod.Status.ContainerStatuses[0]
	if cs.State.Running == nil || !cs.Ready || cs.Started == nil || !*cs.Started || cs.RestartCount != 0 ||
		cs.Image != "nginx:1.27" || !strings.HasPrefix(cs.ContainerID, "fake://") {
		t.Errorf("container status = %+v", cs)
	}
	for _, ct := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodReadyToStartContainers} {
		if c := condition(pod, ct); c == nil || c.Status != v1.ConditionTrue {
			t.Errorf("condition %s = %+v, want True", ct, c)
		}
	}
	if pod.Status.PodIP == "" || pod.Status.HostIP != "127.0.0.1" || pod.Status.StartTime == nil {
		t.Errorf("podIP=%q hostIP=%q startTime=%v", pod.Status.PodIP, pod.Status.HostIP, pod.Status.StartTime)
	}
	if pod.Annotations[kubetypes.ConfigSourceAnnotationKey] != kubetypes.FileSource || pod.Spec.NodeName != testNode {
		t.Errorf("static pod defaults missing: annotations=%v nodeName=%q", pod.Annotations, pod.Spec.NodeName)
	}
	if n := h.runningContainers(); n != 1 {
		t.Fatalf("running containers = %d, want 1: %s", n, h.runtimeSummary())
	}

	oldID := cs.ContainerID
	// An edited manifest is a new static pod (its UID is a hash of the content), so an
	// edit restarts the pod: the old one is killed and the new one runs.
	h.write("web.yaml", podManifest("web", "nginx:1.28", withRequests("250m", "128Mi")))
	h.until(15, "the edited web running alone", func() bool {
		p := h.pod(name)
		return p != nil && p.UID != pod.UID && p.Status.Phase == v1.PodRunning && h.runningContainers() == 1 &&
			p.Status.ContainerStatuses[0].Image == "nginx:1.28"
	}, h.describe)
	if cs := h.pod(name).Status.ContainerStatuses[0]; cs.ContainerID == oldID {
		t.Errorf("the edited pod kept container %s", oldID)
	}

	// UPDATE (a DELETE is delivered as one): a deletion timestamp terminates the pod
	// gracefully while its source still lists it.
	current := h.pod(name)
	deleting, _ := h.k.pods.GetPodByUID(current.UID)
	deleting = deleting.DeepCopy()
	now := metav1.NewTime(h.clk.Now())
	grace := int64(5)
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, &grace
	h.k.HandlePodUpdates([]*v1.Pod{deleting})
	// (A static pod keeps its phase: upstream does not force static pods into a terminal
	// phase, kubernetes#116484; the pod worker knows it is done.)
	h.until(10, "the deleted pod stopped", func() bool {
		return h.runningContainers() == 0 && h.k.PodWorkers().IsPodKnownTerminated(current.UID)
	}, h.describe)
	if cs := h.pod(name).Status.ContainerStatuses[0]; cs.State.Terminated == nil {
		t.Errorf("deleted pod's container status = %+v, want terminated", cs.State)
	}

	// REMOVE: killed, then the workers forget it and GC removes what is left.
	h.remove("web.yaml")
	h.until(15, "web gone from /pods and no container running", func() bool {
		return h.pod(name) == nil && h.runningContainers() == 0
	}, h.describe)
	h.until(15, "the runtime empty", func() bool {
		if err := h.k.GarbageCollect(h.ctx); err != nil {
			t.Fatalf("GarbageCollect: %v", err)
		}
		return len(h.runtimeContainers()) == 0 && len(h.runtimeSandboxes()) == 0
	}, h.describe)
	// Housekeeping forgets the finished workers and the statuses of pods no source wants.
	h.until(5, "workers and statuses forgotten", func() bool {
		_, known := h.k.PodWorkers().State(current.UID)
		return !known && h.k.StatusManager().Len() == 0
	}, h.describe)
}

// TestAdmissionRejections checks each resource the kubelet admits against: the rejected
// pod is Failed with the kubelet's reason and message, gets a Warning event and never
// reaches the runtime, while the pods admitted before it run.
func TestAdmissionRejections(t *testing.T) {
	tests := []struct {
		name        string
		flags       []string
		manifests   map[string]string
		rejected    string
		reason      string
		messagePart string
	}{
		{
			name: "node selector",
			manifests: map[string]string{
				"a.yaml": podManifest("a", "busybox", "  nodeSelector: {disktype: ssd}\n"),
			},
			rejected: "a", reason: "NodeAffinity",
			messagePart: "Pod was rejected: Predicate NodeAffinity failed",
		},
		{
			name: "unsafe sysctl",
			manifests: map[string]string{
				"a.yaml": podManifest("a", "busybox", "  securityContext:\n    sysctls: [{name: kernel.shm_rmid_forced, value: '1'}]\n"),
				"b.yaml": podManifest("b", "busybox", "  securityContext:\n    sysctls: [{name: kernel.msgmax, value: '10000000000'}]\n"),
			},
			rejected: "b", reason: "SysctlForbidden",
			messagePart: `forbidden sysctl: "kernel.msgmax" not allowlisted`,
		},
		{
			name:  "unsafe sysctl allowed, but not with the host's IPC namespace",
			flags: []string{"--allowed-unsafe-sysctls=kernel.msg*"},
			manifests: map[string]string{
				"a.yaml": podManifest("a", "busybox", "  securityContext:\n    sysctls: [{name: kernel.msgmax, value: '1'}]\n"),
				"b.yaml": podManifest("b", "busybox", "  hostIPC: true\n  securityContext:\n    sysctls: [{name: kernel.msgmax, value: '1'}]\n"),
			},
			rejected: "b", reason: "SysctlForbidden",
			messagePart: `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`,
		},
		{
			name: "another operating system",
			manifests: map[string]string{
				"a.yaml": podManifest("a", "busybox", "  os: {name: windows}\n"),
			},
			rejected: "a", reason: "PodOSNotSupported",
			messagePart: "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS",
		},
		{
			name:  "maxPods",
			flags: []string{"--max-pods=2"},
			manifests: map[string]string{
				"a.yaml": podManifest("a", "busybox", ""),
				"b.yaml": podManifest("b", "busybox", ""),
				"c.yaml": podManifest("c", "busybox", ""),
			},
			rejected: "c", reason: "OutOfpods",
			messagePart: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
		},
		{
			name: "cpu",
			manifests: map[string]string{
				"a.yaml": podManifest("a", "busybox", withRequests("3", "64Mi")),
				"b.yaml": podManifest("b", "busybox", withRequests("1500m", "64Mi")),
			},
			rejected: "b", reason: "OutOfcpu",
			messagePart: "Node didn't have enough resource: cpu, requested: 1500, used: 3000, capacity: 4000",
		},
		{
			name: "memory",
			manifests: map[string]string{
				"a.yaml": podManifest("a", "busybox", withRequests("100m", "9Gi")),
			},
			rejected: "a", reason: "OutOfmemory",
			messagePart: "Node didn't have enough resource: memory, requested: 9663676416, used: 0, capacity: 8485076992",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.flags...)
			for f, m := range tt.manifests {
				h.write(f, m)
			}
			rejected := tt.rejected + "-" + testNode
			h.until(10, "every admitted pod Running", func() bool {
				for f := range tt.manifests {
					n := strings.TrimSuffix(f, ".yaml") + "-" + testNode
					if n != rejected && h.phase(n) != v1.PodRunning {
						return false
					}
				}
				return h.phase(rejected) == v1.PodFailed
			}, h.describe)
			st := h.pod(rejected).Status
			if st.Reason != tt.reason || !strings.HasPrefix(st.Message, "Pod was rejected: ") || !strings.Contains(st.Message, tt.messagePart) {
				t.Errorf("rejected status reason=%q message=%q, want %q containing %q", st.Reason, st.Message, tt.reason, tt.messagePart)
			}
			ev := findEvent(h, tt.reason, rejected)
			if ev == nil || ev.Type != v1.EventTypeWarning {
				t.Errorf("no Warning %s event for %s: %+v", tt.reason, rejected, h.k.Events().List())
			}
			for _, sb := range h.runtimeSandboxes() {
				if sb.Metadata.Name == rejected {
					t.Errorf("the rejected pod got a sandbox")
				}
			}
			// The rejection sticks across later syncs and housekeeping.
			for i := 0; i < 5; i++ {
				h.round(time.Second)
			}
			if h.phase(rejected) != v1.PodFailed {
				t.Errorf("rejected pod phase became %s", h.phase(rejected))
			}
		})
	}
}

// TestActiveDeadline: a pod with activeDeadlineSeconds runs until that long after its start
// time, then is Failed with DeadlineExceeded (the kubelet's message, a Normal event) within
// the sync tick, and its containers are stopped; a pod without a deadline keeps running.
func TestActiveDeadline(t *testing.T) {
	h := newHarness(t)
	h.write("dl.yaml", podManifest("dl", "busybox", "  activeDeadlineSeconds: 30\n"))
	h.write("free.yaml", podManifest("free", "busybox", ""))
	dl, free := "dl-"+testNode, "free-"+testNode
	h.until(10, "both Running", func() bool {
		return h.phase(dl) == v1.PodRunning && h.phase(free) == v1.PodRunning
	}, h.describe)
	start := h.pod(dl).Status.StartTime.Time
	h.until(40, "the deadlined pod Failed", func() bool { return h.phase(dl) == v1.PodFailed }, h.describe)
	if late := h.clk.Now().Sub(start); late < 30*time.Second || late > 32*time.Second {
		t.Errorf("failed %v after its start, want within the sync tick after 30s", late)
	}
	st := h.pod(dl).Status
	if st.Reason != ReasonDeadlineExceeded || st.Message != MessageDeadlineExceeded {
		t.Errorf("status reason=%q message=%q", st.Reason, st.Message)
	}
	if ev := findEvent(h, ReasonDeadlineExceeded, dl); ev == nil || ev.Type != v1.EventTypeNormal {
		t.Errorf("no Normal %s event: %+v", ReasonDeadlineExceeded, ev)
	}
	h.until(40, "its containers stopped", func() bool {
		cs := h.pod(dl).Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Terminated != nil
	}, h.describe)
	for i := 0; i < 5; i++ {
		h.round(time.Second)
	}
	if h.phase(dl) != v1.PodFailed || h.phase(free) != v1.PodRunning {
		t.Errorf("after: dl %s, free %s; want Failed and Running", h.phase(dl), h.phase(free))
	}
}

// TestAllocatableFromMachineAndReservations: admission's allocatable is the machine minus
// systemReserved, kubeReserved and the hard eviction memory threshold, the same numbers
// the node reports.
func TestAllocatableFromMachineAndReservations(t *testing.T) {
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir)
	cfg.Kubelet.SystemReserved = map[string]string{"cpu": "500m", "memory": "1Gi"}
	cfg.Kubelet.KubeReserved = map[string]string{"cpu": "250m"}
	h := newHarnessWithConfig(t, dir, cfg, gate)
	h.round(time.Second)
	alloc := h.k.NodeInfo().Allocatable
	node := h.k.NodeStatus().GetNode()
	if node == nil {
		t.Fatal("node not registered")
	}
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
		a, n := alloc[r], node.Status.Allocatable[r]
		if a.Cmp(n) != 0 {
			t.Errorf("admission allocatable %s = %s, node reports %s", r, a.String(), n.String())
		}
	}
	wantCPU := resource.MustParse("3250m")
	if c := alloc[v1.ResourceCPU]; c.Cmp(wantCPU) != 0 {
		t.Errorf("allocatable cpu = %s, want 3250m", c.String())
	}
	wantMem := resource.MustParse("8Gi")
	wantMem.Sub(resource.MustParse("1Gi"))
	wantMem.Sub(resource.MustParse("100Mi"))
	if m := alloc[v1.ResourceMemory]; m.Cmp(wantMem) != 0 {
		t.Errorf("allocatable memory = %s, want %s", m.String(), wantMem.String())
	}
}

// TestHousekeepingKillsOrphans: a pod in the runtime that no source wants (left over
// from a previous run, here made directly through the CRI) is killed by housekeeping.
func TestHousekeepingKillsOrphans(t *testing.T) {
	h := newHarness(t)
	h.write("web.yaml", podManifest("web", "nginx", ""))
	rt := h.k.Runtime()
	sbCfg := &cri.PodSandboxConfig{Metadata: cri.PodSandboxMetadata{Name: "leftover", Namespace: "default", UID: "orphan-uid"}}
	sbID, err := rt.RunPodSandbox(h.ctx, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PullImage(h.ctx, cri.ImageSpec{Image: "busybox"}, sbCfg); err != nil {
		t.Fatal(err)
	}
	cID, err := rt.CreateContainer(h.ctx, sbID, &cri.ContainerConfig{Metadata: cri.ContainerMetadata{Name: "sleeper"}, Image: cri.ImageSpec{Image: "busybox"}}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(h.ctx, cID); err != nil {
		t.Fatal(err)
	}

	h.until(10, "web running and the orphan stopped", func() bool {
		st, err := rt.ContainerStatus(h.ctx, cID)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := rt.PodSandboxStatus(h.ctx, sbID)
		if err != nil {
			t.Fatal(err)
		}
		return h.phase("web-"+testNode) == v1.PodRunning && st.State == cri.ContainerExited && sb.State == cri.SandboxNotReady
	}, h.describe)
	if h.pod("leftover") != nil {
		t.Error("the orphan shows in /pods")
	}
	if n := h.runningContainers(); n != 1 {
		t.Errorf("running containers = %d, want only web's: %s", n, h.runtimeSummary())
	}
}

// TestPodReadyToStartContainersGate: the condition is reported; its gate is GA and locked on
// in v1.37, so turning it off is refused (pkg/podstatus tests the gate-off status).
func TestPodReadyToStartContainersGate(t *testing.T) {
	h := newHarness(t)
	h.write("web.yaml", podManifest("web", "nginx", ""))
	h.until(10, "web Running", func() bool { return h.phase("web-"+testNode) == v1.PodRunning }, h.describe)
	if c := condition(h.pod("web-"+testNode), v1.PodReadyToStartContainers); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers = %+v, want True", c)
	}
	_, err := config.Load([]string{"--feature-gates=PodReadyToStartContainersCondition=false"}, features.NewFeatureGate(), nil)
	if err == nil || !strings.Contains(err.Error(), "feature is locked to true") {
		t.Errorf("turning the locked gate off: %v, want the locked-gate error", err)
	}
}

// TestPodReadyToStartContainersBeforePull: as v1.37's OnPodSandboxReady, the condition is
// True as soon as the new sandbox is ready, while the image is still being pulled (the
// container waits ContainerCreating), not only once the container started.
func TestPodReadyToStartContainersBeforePull(t *testing.T) {
	h := newHarness(t)
	h.write("slow.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: slow
  annotations: {minikubelet.io/behavior.app: "pullDelay=30s"}
spec:
  containers:
  - {name: app, image: nginx:1.27, imagePullPolicy: Always}
`)
	name := "slow-" + testNode
	h.until(10, "slow has a status", func() bool { return h.pod(name) != nil && len(h.pod(name).Status.ContainerStatuses) > 0 }, h.describe)
	p := h.pod(name)
	if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
		t.Fatalf("app state = %+v, want waiting ContainerCreating during the 30s pull", p.Status.ContainerStatuses[0].State)
	}
	if c := condition(p, v1.PodReadyToStartContainers); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers during the pull = %+v, want True (the sandbox is ready)", c)
	}
	h.until(40, "slow Running", func() bool { return h.phase(name) == v1.PodRunning }, h.describe)
	if c := condition(h.pod(name), v1.PodReadyToStartContainers); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers once running = %+v, want True", c)
	}

	// A pull that fails after the sandbox was made leaves the condition True: the waiting
	// reason written right after the failed sync must not take it back (every status
	// stored is read, not only those between rounds).
	var flips []v1.ConditionStatus
	h.k.WatchPodStatuses(func(pod *v1.Pod, st *v1.PodStatus) {
		if pod.Name != "bad-"+testNode {
			return
		}
		for _, c := range st.Conditions {
			if c.Type == v1.PodReadyToStartContainers && (len(flips) == 0 || flips[len(flips)-1] != c.Status) {
				flips = append(flips, c.Status)
			}
		}
	})
	h.write("bad.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: bad
  annotations: {minikubelet.io/behavior.app: "pullError=ErrImagePull"}
spec:
  containers:
  - {name: app, image: nginx:1.27, imagePullPolicy: Always}
`)
	bad := "bad-" + testNode
	h.until(10, "bad waits with ErrImagePull or ImagePullBackOff", func() bool {
		p := h.pod(bad)
		if p == nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		r := p.Status.ContainerStatuses[0].State.Waiting.Reason
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	}, h.describe)
	if c := condition(h.pod(bad), v1.PodReadyToStartContainers); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers after the failed pull = %+v, want True", c)
	}
	if !slices.Equal(flips, []v1.ConditionStatus{v1.ConditionFalse, v1.ConditionTrue}) {
		t.Errorf("PodReadyToStartContainers went %v, want False, True", flips)
	}
}

// TestPLEGWiring: the EventedPLEG gate and the LegacyEventedPLEG option pick the PLEGs,
// the generic cadence and the health checks runtime state consults. v1.37 keeps the generic
// PLEG at pleg.* with the gate on; only v1.30's evented PLEG (legacy) slows it to 300s.
func TestPLEGWiring(t *testing.T) {
	tests := []struct {
		name          string
		flags         []string
		legacy        bool
		evented       bool // v1.37's watcher built
		legacyBuilt   bool // v1.30's evented PLEG built
		period, thres time.Duration
	}{
		{"generic with config defaults", nil, false, false, false, time.Second, 3 * time.Minute},
		{"generic with flags", []string{"--relist-period=2s", "--relist-threshold=7s"}, false, false, false, 2 * time.Second, 7 * time.Second},
		{"evented: the generic cadence stays", []string{"--feature-gates=EventedPLEG=true", "--relist-threshold=7s"}, false, true, false, time.Second, 7 * time.Second},
		{"legacy evented", []string{"--feature-gates=EventedPLEG=true", "--relist-threshold=7s"}, true, false, true, 300 * time.Second, 10 * time.Minute},
		{"legacy option without the gate: generic", nil, true, false, false, time.Second, 3 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, gate := loadConfig(t, dir, tt.flags...)
			h := newHarnessWithConfig(t, dir, cfg, gate, func(c *Config) { c.LegacyEventedPLEG = tt.legacy })
			k := h.k
			if got := k.EventedPLEG() != nil; got != tt.evented {
				t.Fatalf("evented PLEG built = %v, want %v", got, tt.evented)
			}
			if got := k.LegacyEventedPLEG() != nil; got != tt.legacyBuilt {
				t.Fatalf("legacy evented PLEG built = %v, want %v", got, tt.legacyBuilt)
			}
			if tt.legacyBuilt {
				if k.PLEG() != k.LegacyEventedPLEG() {
					t.Error("PLEG() is not v1.30's evented PLEG")
				}
			} else if k.PLEG() != k.GenericPLEG() {
				t.Error("PLEG() is not the generic PLEG")
			}
			wantActive := map[bool]string{true: pleg.TypeEvented, false: ""}[tt.evented || tt.legacyBuilt]
			if got := k.PLEGActiveType(); got != wantActive {
				t.Errorf("PLEGActiveType = %q, want %q", got, wantActive)
			}
			if d := k.GenericPLEG().RelistDuration(); d.RelistPeriod != tt.period || d.RelistThreshold != tt.thres {
				t.Errorf("generic relist cadence = %+v, want %v/%v", d, tt.period, tt.thres)
			}
			// Before any relist the PLEG check fails, and runtime state reports it by name.
			if err := h.k.RuntimeState().UpdateRuntimeUp(h.ctx); err != nil {
				t.Fatal(err)
			}
			err := k.RuntimeState().RuntimeErrors()
			if err == nil || !strings.Contains(err.Error(), "PLEG is not healthy: pleg has yet to be successful") {
				t.Errorf("RuntimeErrors = %v, want the PLEG check", err)
			}
			// The first relist (or the evented PLEG's first check) and the runtime status
			// loop that consults it.
			h.round(time.Second)
			if err := k.RuntimeState().RuntimeErrors(); err != nil {
				t.Errorf("RuntimeErrors after a relist = %v, want nil", err)
			}
		})
	}
}

// TestNodeReadyFollowsPLEG: a runtime that fails every listing stalls the relist; after
// the relist threshold the node is NotReady naming PLEG, and it recovers once the fault
// is gone.
func TestNodeReadyFollowsPLEG(t *testing.T) {
	h := newHarness(t, "--relist-threshold=10s")
	h.write("web.yaml", podManifest("web", "nginx", ""))
	h.until(10, "web Running", func() bool { return h.phase("web-"+testNode) == v1.PodRunning }, h.describe)
	ready := func() *v1.NodeCondition {
		for _, c := range h.k.NodeStatus().GetNode().Status.Conditions {
			if c.Type == v1.NodeReady {
				c := c
				return &c
			}
		}
		return nil
	}
	if c := ready(); c.Status != v1.ConditionTrue {
		t.Fatalf("node Ready = %+v before the fault", c)
	}
	if _, err := h.k.Runtime().AddFault(faultSpec("ListPodSandbox", "error")); err != nil {
		t.Fatal(err)
	}
	// The threshold (10s), then the runtime status poll (5s) and the node status update (10s).
	h.until(30, "node NotReady", func() bool { return ready().Status == v1.ConditionFalse }, h.describe)
	if c := ready(); c.Reason != "KubeletNotReady" || !strings.Contains(c.Message, "PLEG is not healthy: pleg was last seen active") {
		t.Errorf("Ready = %+v, want KubeletNotReady naming PLEG", c)
	}
	if ev := findEvent(h, "NodeNotReady", testNode); ev == nil {
		t.Error("no NodeNotReady event")
	}
	h.k.Runtime().ClearFaults()
	h.until(20, "node Ready again", func() bool { return ready().Status == v1.ConditionTrue }, h.describe)
}

// TestMemoryUsage: the node's simulated memory use is the running containers' requests,
// or their scripted memoryUsage when they have one.
func TestMemoryUsage(t *testing.T) {
	h := newHarness(t)
	h.write("a.yaml", podManifest("a", "nginx", withRequests("100m", "128Mi")))
	h.write("b.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: b
  annotations:
    minikubelet.io/behavior.main: "memoryUsage=64Mi"
spec:
  containers:
  - name: main
    image: nginx
`+withRequests("100m", "1Gi"))
	h.until(10, "both Running", func() bool {
		return h.phase("a-"+testNode) == v1.PodRunning && h.phase("b-"+testNode) == v1.PodRunning
	}, h.describe)
	want := int64(128<<20 + 64<<20)
	if got := h.k.Usage().MemoryBytes; got != want {
		t.Errorf("Usage().MemoryBytes = %d, want %d (128Mi request + 64Mi scripted)", got, want)
	}
}

// TestBackOffTiming: a crash-looping container is restarted at once, then at the first sync
// after each back-off (10s, 20s, 40s) ended: as in kubelet v1.30, a sync that finds the
// container backing off fails and is retried 10-15s later (the pod worker's error back-off,
// jittered), so a restart comes up to about 16s after its back-off ended. It shows
// CrashLoopBackOff while it waits; a failing pull
// shows ErrImagePull, then ImagePullBackOff while the pull back-off lasts, and is retried
// when it ends (10s, then 20s). Only PLEG events and requeues sync the pod here, as in the
// daemon: a back-off must bring its own resync (the 1m syncFrequency is far too late).
func TestBackOffTiming(t *testing.T) {
	t.Run("crash loop", func(t *testing.T) {
		h := newHarness(t)
		h.write("crash.yaml", strings.Replace(podManifest("crash", "busybox", ""), "metadata:\n", "metadata:\n  annotations:\n    minikubelet.io/behavior.main: \"exitCode=1\"\n", 1))
		const name = "crash-" + testNode
		var restarts []time.Duration // virtual time of each restart count increment
		last := int32(0)
		var sawBackOff []int32 // restart counts at which CrashLoopBackOff showed
		for i := 0; i < 100; i++ {
			h.round(time.Second)
			p := h.pod(name)
			if p == nil || len(p.Status.ContainerStatuses) == 0 {
				continue
			}
			cs := p.Status.ContainerStatuses[0]
			if cs.RestartCount > last {
				restarts = append(restarts, h.clk.Since(epoch))
				last = cs.RestartCount
			}
			if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" &&
				(len(sawBackOff) == 0 || sawBackOff[len(sawBackOff)-1] != cs.RestartCount) {
				sawBackOff = append(sawBackOff, cs.RestartCount)
			}
		}
		if len(restarts) < 4 {
			t.Fatalf("restarts at %v in 100s, want at least 4 (at once, then after 10s, 20s, 40s)", restarts)
		}
		for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
			// each restart comes after the back-off since the previous crash (1s after the
			// previous restart), at the first retry of the failing sync: within the 15s error
			// back-off, the PLEG's 1s relist and the 1s sync tick
			if got := restarts[i+1] - restarts[i]; got < want || got > want+17*time.Second {
				t.Errorf("restart %d came %v after the previous one, want %v (+ up to 17s)", i+2, got, want)
			}
		}
		if len(sawBackOff) < 3 {
			t.Errorf("CrashLoopBackOff showed at restart counts %v, want it during every back-off", sawBackOff)
		}
	})
	t.Run("image pull", func(t *testing.T) {
		h := newHarness(t)
		h.write("pull.yaml", strings.Replace(podManifest("pull", "nginx:1.27", ""), "metadata:\n", "metadata:\n  annotations:\n    minikubelet.io/behavior.main: \"pullError=ErrImagePull\"\n", 1))
		const name = "pull-" + testNode
		var seen []string // waiting reasons, in order, with the virtual time they appeared
		prev := ""
		for i := 0; i < 45; i++ {
			h.round(time.Second)
			p := h.pod(name)
			if p == nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
				continue
			}
			if r := p.Status.ContainerStatuses[0].State.Waiting.Reason; r != prev {
				seen = append(seen, fmt.Sprintf("%s@%v", r, h.clk.Since(epoch)))
				prev = r
			}
		}
		pulls := 0
		for _, e := range h.k.Events().List() {
			if e.Reason == "Pulling" {
				pulls += int(e.Count)
			}
		}
		// pulls at ~1s, ~11s (10s back-off) and ~31s (20s): 3 in 45s, ImagePullBackOff in between
		if pulls != 3 {
			t.Errorf("%d pulls in 45s, want 3 (back-off 10s, then 20s); reasons %v", pulls, seen)
		}
		backOffs := 0
		for _, s := range seen {
			if strings.HasPrefix(s, "ImagePullBackOff@") {
				backOffs++
			}
		}
		if backOffs < 2 {
			t.Errorf("waiting reasons %v, want ImagePullBackOff during each pull back-off", seen)
		}
	})
}

// TestNodeEventsOnStart: a starting kubelet records upstream's node events, in order: its
// birth cry, node allocatable enforced, then the conditions of its first status. As
// upstream's Ready setter, NodeReady is recorded only when Ready changes, not when the first
// status is already Ready (a real node usually starts NotReady until its network is up).
func TestNodeEventsOnStart(t *testing.T) {
	h := newHarness(t)
	h.round(time.Second)
	var got []string
	for _, e := range h.k.Events().List() {
		if e.InvolvedObject.Kind == "Node" {
			got = append(got, e.Reason+": "+e.Message)
		}
	}
	want := []string{
		"Starting: Starting kubelet.",
		"NodeAllocatableEnforced: Updated Node Allocatable limit across pods",
		"NodeHasSufficientMemory: Node node status is now: NodeHasSufficientMemory",
		"NodeHasNoDiskPressure: Node node status is now: NodeHasNoDiskPressure",
		"NodeHasSufficientPID: Node node status is now: NodeHasSufficientPID",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("node events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEventedPLEGFullChannelDoesNotStopSyncLoop: with the evented PLEG, a burst of pods
// fills the PLEG event channel, which fails the EventedPLEG health check. Upstream's sync
// loop then skips every iteration, and it is the only reader of the channel, so the node
// stayed NotReady with every pod Pending for good (the fault soak found it at 500 pods). The
// check still reports, but the sync loop goes on, drains the channel and the pods start.
func TestEventedPLEGFullChannelDoesNotStopSyncLoop(t *testing.T) {
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, "--feature-gates=EventedPLEG=true")
	cfg.Simulator.PLEG.ChannelCapacity = 2 // two pods' events fill it
	h := newHarnessWithConfig(t, dir, cfg, gate)
	const pods = 5
	for i := range pods {
		h.write(fmt.Sprintf("p%d.yaml", i), podManifest(fmt.Sprintf("p%d", i), "nginx", ""))
	}
	// The discarded events are not resent (as upstream): the pods they were about start at
	// their worker's resync, syncFrequency (1m) with 0.5 jitter, so within 90s.
	h.until(120, "every pod Running", func() bool {
		for i := range pods {
			if h.phase(fmt.Sprintf("p%d-%s", i, testNode)) != v1.PodRunning {
				return false
			}
		}
		return true
	}, h.describe)
	if h.k.GenericPLEG().DiscardedEvents() == 0 {
		t.Error("no PLEG event discarded: the channel never filled, the test proves nothing")
	}
	if err := h.k.RuntimeState().RuntimeErrors(); err != nil {
		t.Errorf("RuntimeErrors once the pods run = %v, want nil (the channel drained)", err)
	}
}

// TestEphemeralContainer: an ephemeral container added to a running pod (kubectl debug) is
// started once in the pod's sandbox, shows in ephemeralContainerStatuses, is a container
// logs and exec can name, and does not change the pod's phase or readiness.
func TestEphemeralContainer(t *testing.T) {
	h := newHarness(t)
	h.write("web.yaml", podManifest("web", "nginx", ""))
	name := "web-" + testNode
	h.until(10, "web Running", func() bool { return h.phase(name) == v1.PodRunning }, h.describe)

	current, ok := h.k.pods.GetPodByUID(h.pod(name).UID)
	if !ok {
		t.Fatal("web not in the pod manager")
	}
	debug := current.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox", Command: []string{"/bin/sh"}, Stdin: true, TTY: true},
	}}
	h.k.HandlePodUpdates([]*v1.Pod{debug})
	h.until(10, "the debugger Running in ephemeralContainerStatuses", func() bool {
		es := h.pod(name).Status.EphemeralContainerStatuses
		return len(es) == 1 && es[0].Name == "debugger" && es[0].State.Running != nil && es[0].ContainerID != ""
	}, h.describe)
	for i := 0; i < 5; i++ {
		h.round(time.Second)
	}
	instances := 0
	for _, c := range h.runtimeContainers() {
		if c.Metadata.Name == "debugger" {
			instances++
		}
	}
	if instances != 1 {
		t.Errorf("%d instances of the debugger in the runtime, want 1", instances)
	}
	p := h.pod(name)
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
		t.Errorf("the pod changed: phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
	if !hasContainer(debug, "debugger") {
		t.Error("logs and exec do not know the debugger")
	}
}

// TestPastActiveDeadline: the deadline counts from the status' start time; a pod not
// started, or without a deadline, is never past it; a deadline longer than a Duration
// holds saturates instead of wrapping round to a negative one that fails the pod at once.
func TestPastActiveDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	started := v1.PodStatus{StartTime: &metav1.Time{Time: start}}
	deadline := func(s int64) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{ActiveDeadlineSeconds: &s}} }
	tests := []struct {
		name   string
		pod    *v1.Pod
		status v1.PodStatus
		after  time.Duration
		want   bool
	}{
		{"before the deadline", deadline(30), started, 29 * time.Second, false},
		{"at the deadline", deadline(30), started, 30 * time.Second, true},
		{"no deadline", &v1.Pod{}, started, time.Hour, false},
		{"not started", deadline(1), v1.PodStatus{}, time.Hour, false},
		{"a deadline past any duration", deadline(math.MaxInt64), started, 100 * 365 * 24 * time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PastActiveDeadline(tt.pod, tt.status, start.Add(tt.after)); got != tt.want {
				t.Errorf("PastActiveDeadline = %t, want %t", got, tt.want)
			}
		})
	}
}

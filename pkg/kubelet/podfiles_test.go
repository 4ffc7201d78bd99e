package kubelet

import (
	"context"
	"errors"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// containerStatusOf is the runtime's status of the pod's newest instance of the container.
func (h *harness) containerStatusOf(podUID types.UID, name string) *cri.ContainerStatus {
	h.t.Helper()
	var newest *cri.Container
	for _, c := range h.runtimeContainers() {
		if c.Labels[cri.PodUIDLabel] == string(podUID) && c.Metadata.Name == name && (newest == nil || c.CreatedAt > newest.CreatedAt) {
			c := c
			newest = &c
		}
	}
	if newest == nil {
		return nil
	}
	st, err := h.k.Runtime().ContainerStatus(h.ctx, newest.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func (h *harness) readNode(p string) string {
	h.t.Helper()
	data, err := h.k.NodeFS().ReadFile(p)
	if err != nil {
		h.t.Fatalf("read %s on the node: %v", p, err)
	}
	return string(data)
}

// TestPodFilesOnTheNode: a running pod's files are where a real kubelet keeps them, and
// its container's mounts name them: /etc/hosts from etc-hosts (with the pod's IP),
// /etc/hostname and /etc/resolv.conf, the termination log, an emptyDir. Once the pod is
// gone, its volumes and then its directory are removed.
func TestPodFilesOnTheNode(t *testing.T) {
	h := newHarness(t)
	h.write("web.yaml", podManifest("web", "busybox", `    volumeMounts:
    - name: scratch
      mountPath: /scratch
  hostname: www
  volumes:
  - name: scratch
    emptyDir: {}
`))
	name := "web-" + testNode
	h.until(10, "web Running", func() bool { return h.phase(name) == v1.PodRunning }, h.describe)
	pod := h.pod(name)
	dir := podDir(pod.UID)

	st := h.containerStatusOf(pod.UID, "main")
	mounts := map[string]cri.Mount{}
	for _, m := range st.Mounts {
		mounts[m.ContainerPath] = m
	}
	for path, want := range map[string]string{
		"/scratch":         dir + "/volumes/kubernetes.io~empty-dir/scratch",
		"/etc/hosts":       dir + "/etc-hosts",
		"/etc/hostname":    dir + "/hostname",
		"/etc/resolv.conf": dir + "/resolv.conf",
	} {
		if got := mounts[path].HostPath; got != want {
			t.Errorf("mount at %s from %q, want %q (mounts %+v)", path, got, want, st.Mounts)
		}
	}
	if term := mounts["/dev/termination-log"].HostPath; !regexp.MustCompile(`^` + dir + `/containers/main/[0-9a-f]{8}$`).MatchString(term) {
		t.Errorf("termination log from %q, want %s/containers/main/<8 hex digits>", term, dir)
	}
	if hosts := h.readNode(dir + "/etc-hosts"); !strings.HasPrefix(hosts, managedHostsHeader) || !strings.Contains(hosts, pod.Status.PodIP+"\twww\n") {
		t.Errorf("etc-hosts = %q, want the managed file with %s www", hosts, pod.Status.PodIP)
	}
	if got := h.readNode(dir + "/hostname"); got != "www\n" {
		t.Errorf("hostname = %q", got)
	}
	// No clusterDNS configured: the node's resolver, with the MissingClusterDNS warning.
	if got := h.readNode(dir + "/resolv.conf"); got != "nameserver 8.8.8.8\n" {
		t.Errorf("resolv.conf = %q, want the node's", got)
	}
	if findEvent(h, "MissingClusterDNS", name) == nil {
		t.Error("no MissingClusterDNS event for the pod")
	}

	h.remove("web.yaml")
	h.until(60, "web's volumes torn down", func() bool {
		_, err := h.k.NodeFS().Stat(dir + "/volumes")
		return errors.Is(err, fs.ErrNotExist)
	}, h.describe)
	h.until(60, "web's directory removed", func() bool {
		_, err := h.k.NodeFS().Stat(dir)
		return errors.Is(err, fs.ErrNotExist)
	}, h.describe)
}

// TestTerminationMessage: what a container writes to its terminationMessagePath is its
// terminated state's message; with FallbackToLogsOnError a failed container that wrote
// nothing gets the end of its log.
func TestTerminationMessage(t *testing.T) {
	tests := []struct {
		name, script, policy, want string
	}{
		{name: "file", script: "printf bye > /dev/termination-log; exit 3", want: "bye"},
		{name: "fallback to the log", script: "echo started; echo failing; exit 1", policy: "FallbackToLogsOnError", want: "started\nfailing\n"},
		{name: "file policy ignores the log", script: "echo failing; exit 1", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			extra := "    command: [\"sh\", \"-c\", \"" + tt.script + "\"]\n"
			if tt.policy != "" {
				extra += "    terminationMessagePolicy: " + tt.policy + "\n"
			}
			h.write("job.yaml", podManifest("job", "busybox", extra+"  restartPolicy: Never\n"))
			name := "job-" + testNode
			h.until(30, "job Failed", func() bool { return h.phase(name) == v1.PodFailed }, h.describe)
			term := h.pod(name).Status.ContainerStatuses[0].State.Terminated
			if term == nil || term.Message != tt.want {
				t.Errorf("terminated state %+v, want message %q", term, tt.want)
			}
		})
	}
}

// TestClusterConfigMapVolume: in cluster mode a pod's configMap volume holds the ConfigMap's
// keys; a change of the ConfigMap reaches it within a sync period; a pod whose ConfigMap
// does not exist waits in ContainerCreating with upstream's FailedMount event, and starts
// within a couple of seconds once the ConfigMap is created (upstream's syncPod waits for the
// mount, retried with a back-off from 500ms: not a cache TTL or the 10s error back-off).
func TestClusterConfigMapVolume(t *testing.T) {
	client := fake.NewSimpleClientset(configMap("default", "settings", map[string]string{"mode": "blue"}))
	h := newClusterHarness(t, client)
	ctx := context.Background()
	apiPod := func(name, cm string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(epoch)},
			Spec: v1.PodSpec{
				NodeName: testNode, RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst,
				Containers: []v1.Container{{
					Name: "app", Image: "busybox", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
					VolumeMounts: []v1.VolumeMount{{Name: "conf", MountPath: "/etc/app"}},
					Env:          []v1.EnvVar{{Name: "MODE", ValueFrom: cmKeyRef(cm, "mode", true)}},
				}},
				Volumes: []v1.Volume{{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}}},
			},
			Status: v1.PodStatus{Phase: v1.PodPending},
		}
	}
	good, missing := apiPod("good", "settings"), apiPod("missing", "absent")
	h.k.UpdateAPIPods(ctx, []*v1.Pod{good, missing})
	h.until(10, "good Running", func() bool { return h.phase("good") == v1.PodRunning }, h.describe)
	file := podVolumeDir(good.UID, pluginConfigMap, "conf") + "/mode"
	if got := h.readNode(file); got != "blue" {
		t.Fatalf("mode = %q, want blue", got)
	}

	if _, err := client.CoreV1().ConfigMaps("default").Update(ctx, configMap("default", "settings", map[string]string{"mode": "green"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := h.clk.Now()
	h.until(120, "the ConfigMap's change in the volume", func() bool {
		b, _ := h.k.NodeFS().ReadFile(file)
		return string(b) == "green"
	}, h.describe)
	if took := h.clk.Since(start); took > 100*time.Second {
		t.Errorf("the change took %v to reach the volume, want about a sync period", took)
	}

	p := h.pod("missing")
	if p == nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil || p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("pod with a missing ConfigMap: %s, want its container waiting in ContainerCreating", h.describe())
	}
	e := findEvent(h, "FailedMount", "missing")
	if e == nil || e.Message != `MountVolume.SetUp failed for volume "conf" : configmap "absent" not found` || e.Type != v1.EventTypeWarning {
		t.Errorf("FailedMount event %+v, want upstream's message for the missing ConfigMap", e)
	}

	// Created now, the ConfigMap is read at the pod's next mount retry (upstream's volume
	// manager retries with a back-off from 500ms doubling to 2m2s), not later.
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "absent", map[string]string{"mode": "red"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	retry := h.k.volumes.retry[missing.UID]
	start = h.clk.Now()
	h.until(150, "missing Running once its ConfigMap exists", func() bool { return h.phase("missing") == v1.PodRunning }, h.describe)
	if took := h.clk.Since(start); retry == 0 || took > retry+time.Second {
		t.Errorf("the pod started %v after its ConfigMap was created, want within its mount retry back-off (%v)", took, retry)
	}

	// A pod whose ConfigMap comes a moment after it: running within two seconds.
	late := apiPod("late", "later")
	h.k.UpdateAPIPods(ctx, []*v1.Pod{good, apiPod("missing", "absent"), late})
	h.round(100 * time.Millisecond)
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "later", map[string]string{"mode": "late"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start = h.clk.Now()
	h.until(10, "late Running", func() bool { return h.phase("late") == v1.PodRunning }, h.describe)
	if took := h.clk.Since(start); took > 2*time.Second {
		t.Errorf("the pod started %v after its ConfigMap was created, want within 2s", took)
	}
}

// TestTruncateTerminationMessages: all of a pod's termination messages share 12 KiB, cut
// evenly among its init and app containers, the previous status left untouched.
func TestTruncateTerminationMessages(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name       string
		containers int
		initCs     int
		want       int
	}{
		{name: "one container: all 12 KiB, the message stays whole", containers: 1, want: 5000},
		{name: "three containers: 4096 each", containers: 3, want: 4096},
		{name: "four containers and two init containers: 2048 each", containers: 4, initCs: 2, want: 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: make([]v1.Container, tt.containers), InitContainers: make([]v1.Container, tt.initCs)}}
			shared := &v1.ContainerStateTerminated{Message: long}
			status := v1.PodStatus{
				ContainerStatuses:     []v1.ContainerStatus{{State: v1.ContainerState{Terminated: shared}, LastTerminationState: v1.ContainerState{Terminated: shared}}},
				InitContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: long}}}},
			}
			truncateTerminationMessages(pod, &status)
			for _, got := range []int{
				len(status.ContainerStatuses[0].State.Terminated.Message),
				len(status.ContainerStatuses[0].LastTerminationState.Terminated.Message),
				len(status.InitContainerStatuses[0].State.Terminated.Message),
			} {
				if got != tt.want {
					t.Errorf("message cut to %d bytes, want %d", got, tt.want)
				}
			}
			if len(shared.Message) != len(long) {
				t.Errorf("the shared state was changed in place")
			}
		})
	}
}

// TestNodeFSShared: the kubelet writes into the filesystem the runtime binds mounts from,
// whether it builds the runtime or is given one (the daemon and simulate mode build it
// first), and the node has its own /etc files.
func TestNodeFSShared(t *testing.T) {
	tests := []struct {
		name    string
		runtime bool
	}{{name: "runtime built by New"}, {name: "runtime given", runtime: true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, gate := loadConfig(t, t.TempDir())
			clk := clocktesting.NewFakeClock(epoch)
			kc := Config{Config: cfg, Gate: gate, Clock: clk}
			if tt.runtime {
				rt, err := NewRuntime(cfg, clk, nil)
				if err != nil {
					t.Fatal(err)
				}
				kc.Runtime = rt
			}
			k, err := New(kc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(k.Stop)
			if k.NodeFS() == nil || k.NodeFS() != k.Runtime().NodeFS() {
				t.Fatalf("kubelet's node filesystem %p, runtime's %p: want one, shared", k.NodeFS(), k.Runtime().NodeFS())
			}
			for _, p := range []string{"/etc/hosts", "/etc/resolv.conf", "/etc/hostname"} {
				if _, err := k.NodeFS().Stat(p); err != nil {
					t.Errorf("node file %s: %v", p, err)
				}
			}
		})
	}
}

// TestMountRetries: a pod whose volumes fail is retried after 500ms, 1s, 2s, ... doubling to
// upstream's 2m2s, and stays there for as long as it keeps failing (the delay never wraps).
func TestMountRetries(t *testing.T) {
	var m mountedVolumes
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, 122 * time.Second}
	for i := 0; i < 200; i++ {
		d := m.nextRetry("uid")
		w := want[min(i, len(want)-1)]
		if d != w {
			t.Fatalf("retry %d: %v, want %v", i, d, w)
		}
	}
	m.forget("uid")
	if d := m.nextRetry("uid"); d != firstMountRetry {
		t.Errorf("after the pod is forgotten: %v, want a first retry", d)
	}
}

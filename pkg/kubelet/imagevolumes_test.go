package kubelet

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
)

// kitten is the e2e suite's image volume (manifest.go Kitten).
const kitten = "registry.k8s.io/e2e-test-images/kitten:1.8"

// imageVolumePod is a busybox pod "p" whose container runs command with the volumes and its
// mounts (YAML indented for a container and a pod spec).
func imageVolumePod(command, mounts, volumes string) string {
	return podManifest("p", "busybox:1.36", "    command: [sh, -c, '"+command+"']\n"+mounts+"  restartPolicy: Never\n"+volumes)
}

// TestImageVolumes: through the whole node, a pod's image volume is pulled and its files
// read where the container mounts it, read-only (a subPath of it too); what cannot be
// pulled or mounted keeps the container waiting with upstream's reasons, an unused volume
// that cannot be pulled holds nothing back, and the node writes nothing for the volume.
func TestImageVolumes(t *testing.T) {
	const volume = "  volumes: [{name: v, image: {reference: '" + kitten + "'}}]\n"
	const mount = "    volumeMounts: [{name: v, mountPath: /volume}]\n"
	tests := []struct {
		name     string
		manifest string
		// Either the pod ends with phase and its log says each of logs, or its container
		// waits with reason and a message containing message.
		phase           v1.PodPhase
		logs            []string
		reason, message string
	}{
		{
			name:     "the image's files, read-only",
			manifest: imageVolumePod("cat /volume/data.json; grep NAME= /volume/etc/os-release; echo x > /volume/f", mount, volume),
			phase:    v1.PodFailed,
			logs:     []string{`  "image": "kitten.jpg"`, `NAME="Alpine Linux"`, "sh: can't create /volume/f: Read-only file system"},
		},
		{
			name:     "a subPath, and a subPathExpr",
			manifest: imageVolumePod("head -1 /volume/passwd; ls /bin-dir/sh", "    env: [{name: DIR, value: bin}]\n    volumeMounts: [{name: v, mountPath: /volume, subPath: etc}, {name: v, mountPath: /bin-dir, subPathExpr: $(DIR)}]\n", volume),
			phase:    v1.PodSucceeded,
			logs:     []string{"root:x:0:0:root:/root:/bin/ash", "/bin-dir/sh"},
		},
		{
			name:     "an unused volume that cannot be pulled",
			manifest: imageVolumePod("ls /", "", "  volumes: [{name: v, image: {reference: localhost/invalid}}]\n"),
			phase:    v1.PodSucceeded,
		},
		{
			name:     "an image that cannot be pulled",
			manifest: imageVolumePod("true", mount, "  volumes: [{name: v, image: {reference: localhost/invalid}}]\n"),
			reason:   "ImagePullBackOff",
			message:  `Back-off pulling image "localhost/invalid": ErrImagePull: rpc error: code = Unknown desc = failed to pull and unpack image "localhost/invalid:latest"`,
		},
		{
			name:     "absent with pullPolicy Never",
			manifest: imageVolumePod("true", mount, "  volumes: [{name: v, image: {reference: '"+kitten+"', pullPolicy: Never}}]\n"),
			reason:   "ErrImageNeverPull",
			message:  `Container image "` + kitten + `" is not present with pull policy of Never`,
		},
		{
			name:     "a subPath the image lacks",
			manifest: imageVolumePod("true", "    volumeMounts: [{name: v, mountPath: /volume, subPath: not-existing}]\n", volume),
			reason:   "CreateContainerError",
			message:  `failed to mount image volume: ImageVolumeMountFailed: failed to ensure image subpath "not-existing" in "/run/containerd/io.containerd.grpc.v1.cri/image-volumes/`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.write("p.yaml", tt.manifest)
			full := "p-" + testNode
			if tt.reason == "" {
				h.until(60, string(tt.phase), func() bool { return h.phase(full) == tt.phase }, h.describe)
				id := strings.TrimPrefix(h.pod(full).Status.ContainerStatuses[0].ContainerID, "fake://")
				lines, err := h.k.Runtime().ContainerLog(id, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, l := range lines {
					got = append(got, l.Text)
				}
				for _, want := range tt.logs {
					if !strings.Contains(strings.Join(got, "\n"), want) {
						t.Errorf("log %q lacks %q", got, want)
					}
				}
			} else {
				waiting := func() *v1.ContainerStateWaiting {
					p := h.pod(full)
					if p == nil || len(p.Status.ContainerStatuses) == 0 {
						return nil
					}
					return p.Status.ContainerStatuses[0].State.Waiting
				}
				h.until(60, tt.reason, func() bool { w := waiting(); return w != nil && w.Reason == tt.reason }, h.describe)
				if w := waiting(); !strings.Contains(w.Message, tt.message) {
					t.Errorf("waiting message %q, want it to contain %q", w.Message, tt.message)
				}
				if h.runningContainers() != 0 {
					t.Errorf("a container runs: %s", h.runtimeSummary())
				}
			}
			if _, err := h.k.nodeFS.Stat("/var/lib/kubelet/pods"); err == nil {
				names, _ := h.k.nodeFS.SelectDirNames("/var/lib/kubelet/pods", func(string) bool { return true })
				for _, uid := range names {
					if _, err := h.k.nodeFS.Stat("/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~image"); err == nil {
						t.Errorf("the node has a directory for the image volume of pod %s: the runtime mounts the image", uid)
					}
				}
			}
		})
	}
}

// TestImageVolumeEventsAndMetrics: the volume's pull is the pod's event; each mount of it
// in a started container counts as requested and mounted.
func TestImageVolumeEventsAndMetrics(t *testing.T) {
	h := newHarness(t)
	h.write("p.yaml", podManifest("p", "busybox:1.36", sleeper+
		"    volumeMounts: [{name: v, mountPath: /a}, {name: v, mountPath: /b}]\n"+
		"  volumes: [{name: v, image: {reference: '"+kitten+"'}}]\n"))
	full := "p-" + testNode
	h.until(30, "Running", func() bool { return h.phase(full) == v1.PodRunning }, h.describe)
	var pulled *v1.Event
	for _, e := range h.k.Events().List() {
		if e.Reason == "Pulled" && strings.Contains(e.Message, kitten) {
			pulled = &e
		}
	}
	if pulled == nil || pulled.InvolvedObject.Kind != "Pod" || pulled.InvolvedObject.Name != full || pulled.InvolvedObject.FieldPath != "" {
		t.Errorf("the volume's Pulled event %+v, want one on the pod, of no container", pulled)
	}
	want := `# HELP kubelet_image_volume_mounted_errors_total Number of failed image volume mounts.
# TYPE kubelet_image_volume_mounted_errors_total counter
kubelet_image_volume_mounted_errors_total 0
# HELP kubelet_image_volume_mounted_succeed_total Number of successful image volume mounts.
# TYPE kubelet_image_volume_mounted_succeed_total counter
kubelet_image_volume_mounted_succeed_total 2
# HELP kubelet_image_volume_requested_total Number of requested image volumes.
# TYPE kubelet_image_volume_requested_total counter
kubelet_image_volume_requested_total 1
`
	if err := testutil.GatherAndCompare(h.k.Registry(), strings.NewReader(want), "kubelet_image_volume_requested_total", "kubelet_image_volume_mounted_succeed_total", "kubelet_image_volume_mounted_errors_total"); err != nil {
		t.Error(err)
	}
}

// TestReclaimDiskKeepsImageVolumes: the node's disk reclaim removes the images no running
// container uses, and keeps the one a running container mounts as an image volume.
func TestReclaimDiskKeepsImageVolumes(t *testing.T) {
	h := newHarness(t)
	h.write("p.yaml", podManifest("p", "busybox:1.36", sleeper+
		"    volumeMounts: [{name: v, mountPath: /volume}]\n"+
		"  volumes: [{name: v, image: {reference: '"+kitten+"'}}]\n"))
	full := "p-" + testNode
	h.until(30, "Running", func() bool { return h.phase(full) == v1.PodRunning }, h.describe)
	const unused = "ghcr.io/minikubelet/unused:1.0"
	h.k.Runtime().LoadImage(unused)
	if err := h.k.reclaimDisk(h.ctx); err != nil {
		t.Fatal(err)
	}
	images, err := h.k.Runtime().ListImages(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, img := range images {
		got = append(got, img.RepoTags...)
	}
	if want := []string{kitten, "busybox:1.36"}; !slices.Equal(got, want) {
		t.Errorf("images after the reclaim %q, want %q: the container's and its image volume's", got, want)
	}
}

// TestImageVolumeSharedByPods: two pods mount volumes of one image (the e2e_node spec "with
// multiple pods and same image on the same node"): pulled once (IfNotPresent for a tag),
// both read it, and the first still does after the second started.
func TestImageVolumeSharedByPods(t *testing.T) {
	h := newHarness(t)
	pod := func(name string) string {
		return podManifest(name, "busybox:1.36", sleeper+
			"    volumeMounts: [{name: v, mountPath: /volume}]\n"+
			"  volumes: [{name: v, image: {reference: '"+kitten+"'}}]\n")
	}
	read := func(full string) string {
		id := strings.TrimPrefix(h.pod(full).Status.ContainerStatuses[0].ContainerID, "fake://")
		resp, err := h.k.Runtime().ExecSync(h.ctx, id, []string{"cat", "/volume/data.json"}, 0)
		if err != nil {
			t.Fatalf("exec in %s: %v", full, err)
		}
		return string(resp.Stdout)
	}
	h.write("a.yaml", pod("a"))
	h.until(30, "a Running", func() bool { return h.phase("a-"+testNode) == v1.PodRunning }, h.describe)
	h.write("b.yaml", pod("b"))
	h.until(30, "b Running", func() bool { return h.phase("b-"+testNode) == v1.PodRunning }, h.describe)
	for _, full := range []string{"b-" + testNode, "a-" + testNode} {
		if got := read(full); !strings.Contains(got, "kitten.jpg") {
			t.Errorf("%s reads %q in its image volume, want kitten's data.json", full, got)
		}
	}
	var pulls, present int
	for _, e := range h.k.Events().List() {
		switch {
		case e.Reason == "Pulling" && strings.Contains(e.Message, kitten):
			pulls += int(e.Count)
		case e.Reason == "Pulled" && strings.Contains(e.Message, "already present") && strings.Contains(e.Message, kitten):
			present += int(e.Count)
		}
	}
	if pulls != 1 || present != 1 {
		t.Errorf("kitten pulled %d times and found present %d, want 1 and 1 (the second pod's)", pulls, present)
	}
}

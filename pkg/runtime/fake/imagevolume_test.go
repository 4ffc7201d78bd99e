package fake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

const (
	kittenImage  = "registry.k8s.io/e2e-test-images/kitten:1.8"
	agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.47"
	debianImage  = "debian:bookworm"
)

// createWithImageVolumes runs a sandbox and creates a busybox container that sleeps, with
// image volumes and kubelet mounts; pulled are the images put on the node first.
func createWithImageVolumes(t *testing.T, r *Runtime, pulled []string, volumes []cri.ImageMount, mounts []cri.Mount) (string, string, error) {
	t.Helper()
	ctx := context.Background()
	sbID, sbCfg := runPod(t, r, "uid-iv", nil)
	for _, img := range append([]string{"busybox:1.36"}, pulled...) {
		if _, err := r.PullImage(ctx, cri.ImageSpec{Image: img}, nil); err != nil {
			t.Fatalf("PullImage(%s): %v", img, err)
		}
	}
	cc := containerConfig("app", "", "busybox:1.36")
	cc.Command = []string{"sleep", "infinity"}
	cc.ImageMounts = volumes
	cc.Mounts = mounts
	id, err := r.CreateContainer(ctx, sbID, cc, sbCfg)
	return sbID, id, err
}

// execIn runs cmd in container id and returns what it printed (stdout, then stderr) and
// its exit code.
func execIn(t *testing.T, r *Runtime, clk *testclock.FakeClock, id string, cmd ...string) (string, int32) {
	t.Helper()
	var resp *cri.ExecSyncResponse
	err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
		var err error
		resp, err = r.ExecSync(ctx, id, cmd, 0)
		return err
	})
	if err != nil {
		t.Fatalf("ExecSync(%q): %v", cmd, err)
	}
	return string(resp.Stdout) + string(resp.Stderr), resp.ExitCode
}

// TestImageVolumeContents: a container sees the image's files at its image volume's path
// (the whole tree, or the directory subPath names), cannot write there, and sees the
// kubelet's mounts inside it, whatever order they came in.
func TestImageVolumeContents(t *testing.T) {
	type run struct {
		cmd      string
		want     string // a substring of the output
		wantCode int32
	}
	tests := []struct {
		name    string
		volumes []cri.ImageMount
		mounts  []cri.Mount
		runs    []run
	}{
		{
			name:    "the whole image",
			volumes: []cri.ImageMount{{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kittenImage}}},
			runs: []run{
				{"cat /volume/data.json", `"image": "kitten.jpg"`, 0},
				{"cat /volume/etc/os-release", `NAME="Alpine Linux"`, 0},
				{"echo x > /volume/new", "sh: can't create /volume/new: Read-only file system", 1},
				{"rm /volume/data.json", "rm: can't remove '/volume/data.json': Read-only file system", 1},
				{"grep ' /volume ' /proc/mounts", "overlay /volume overlay ro,relatime 0 0", 0},
				// The container's own root filesystem is its image's, not the volume's.
				{"test -e /data.json || echo absent", "absent", 0},
			},
		},
		{
			name:    "a subPath",
			volumes: []cri.ImageMount{{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kittenImage}, SubPath: "etc"}},
			runs: []run{
				{"cat /volume/passwd", "root:x:0:0:root:/root:/bin/ash", 0},
				{"test -e /volume/data.json || echo absent", "absent", 0},
				{"touch /volume/new", "touch: /volume/new: Read-only file system", 1},
			},
		},
		{
			name:    "a subPath through a relative link",
			volumes: []cri.ImageMount{{ContainerPath: "/tools", Image: cri.ImageSpec{Image: debianImage}, SubPath: "bin"}},
			runs:    []run{{"ls /tools/bash", "/tools/bash", 0}},
		},
		{
			name: "two volumes of one image, and a kubelet mount inside one",
			volumes: []cri.ImageMount{
				{ContainerPath: "/volume-0", Image: cri.ImageSpec{Image: kittenImage}},
				{ContainerPath: "/volume-1", Image: cri.ImageSpec{Image: kittenImage}},
			},
			// Listed before the image volume it lies in: bound after it all the same.
			mounts: []cri.Mount{{ContainerPath: "/volume-1/cache", HostPath: "/var/lib/kubelet/pods/uid-iv/volumes/kubernetes.io~empty-dir/cache"}},
			runs: []run{
				{"cat /volume-0/data.json /volume-1/data.json", `"image": "kitten.jpg"`, 0},
				{"echo hi > /volume-1/cache/f && cat /volume-1/cache/f", "hi", 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			_, id, err := createWithImageVolumes(t, r, []string{kittenImage, debianImage}, tt.volumes, tt.mounts)
			if err != nil {
				t.Fatalf("CreateContainer: %v", err)
			}
			if err := r.StartContainer(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			for _, rn := range tt.runs {
				out, code := execIn(t, r, clk, id, "sh", "-c", rn.cmd)
				if !strings.Contains(out, rn.want) || code != rn.wantCode {
					t.Errorf("%s: printed %q, exit %d; want %q, exit %d", rn.cmd, out, code, rn.want, rn.wantCode)
				}
			}
		})
	}
}

// TestImageVolumeMountErrors: a volume containerd cannot mount fails CreateContainer with
// containerd's message, which the kubelet shows as the container's CreateContainerError,
// and creates nothing.
func TestImageVolumeMountErrors(t *testing.T) {
	target := func(sbID, image string) string {
		img, _ := imageID(image)
		return imageVolumeDir + "/" + sbID + "/" + strings.TrimPrefix(img, "sha256:")
	}
	tests := []struct {
		name    string
		pulled  []string
		volume  cri.ImageMount
		wantErr func(sbID string) string
	}{
		{
			name:   "the image is not on the node",
			volume: cri.ImageMount{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kittenImage}},
			wantErr: func(string) string {
				return `failed to mount image volume: ImageVolumeMountFailed: failed to resolve image "` + kittenImage + `": not found`
			},
		},
		{
			name:   "a subPath the image lacks",
			pulled: []string{kittenImage},
			volume: cri.ImageMount{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kittenImage}, SubPath: "not-existing"},
			wantErr: func(sbID string) string {
				return `failed to mount image volume: ImageVolumeMountFailed: failed to ensure image subpath "not-existing" in "` + target(sbID, kittenImage) + `": openat not-existing: no such file or directory`
			},
		},
		{
			name:   "a subPath that is a file",
			pulled: []string{kittenImage},
			volume: cri.ImageMount{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kittenImage}, SubPath: "data.json"},
			wantErr: func(sbID string) string {
				tg := target(sbID, kittenImage)
				return `failed to mount image volume: ImageVolumeMountFailed: failed to ensure image subpath "data.json" in "` + tg + `": only directory subpath is supported, subpath: "data.json", mountpoint: "` + tg + `" `
			},
		},
		{
			name:   "a subPath under a file",
			pulled: []string{kittenImage},
			volume: cri.ImageMount{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kittenImage}, SubPath: "data.json/x"},
			wantErr: func(sbID string) string {
				return `failed to mount image volume: ImageVolumeMountFailed: failed to ensure image subpath "data.json/x" in "` + target(sbID, kittenImage) + `": openat data.json/x: not a directory`
			},
		},
		{
			name:   "a subPath through an absolute link",
			pulled: []string{agnhostImage},
			volume: cri.ImageMount{ContainerPath: "/volume", Image: cri.ImageSpec{Image: agnhostImage}, SubPath: "usr/local/bin/iperf"},
			wantErr: func(sbID string) string {
				return `failed to mount image volume: ImageVolumeMountFailed: failed to ensure image subpath "usr/local/bin/iperf" in "` + target(sbID, agnhostImage) + `": openat usr/local/bin/iperf: path escapes from parent`
			},
		},
		{
			name:   "a subPath out of the image",
			pulled: []string{kittenImage},
			volume: cri.ImageMount{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kittenImage}, SubPath: "etc/../.."},
			wantErr: func(sbID string) string {
				return `failed to mount image volume: ImageVolumeMountFailed: failed to ensure image subpath "etc/../.." in "` + target(sbID, kittenImage) + `": openat etc/../..: path escapes from parent`
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newRuntime(t, Config{})
			sbID, id, err := createWithImageVolumes(t, r, tt.pulled, []cri.ImageMount{tt.volume}, nil)
			if err == nil || err.Error() != tt.wantErr(sbID) {
				t.Errorf("CreateContainer error:\n %v\nwant\n %s", err, tt.wantErr(sbID))
			}
			if id != "" || len(r.containers) != 0 || len(r.ctrNames) != 0 {
				t.Errorf("created %q (%d containers, %d names reserved), want nothing", id, len(r.containers), len(r.ctrNames))
			}
		})
	}
}

// imageID is the id the runtime gives an image pulled as ref.
func imageID(ref string) (string, bool) {
	r := &Runtime{}
	return r.addImageLocked(ref).ID, true
}

// TestImageVolumeStatus: ContainerStatus lists the image volumes by the id of the image
// mounted (what the kubelet keeps from its image garbage collection) and binds each from
// where containerd mounts it; a container without any has none, and removing the
// container forgets them.
func TestImageVolumeStatus(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	sbID, id, err := createWithImageVolumes(t, r, []string{kittenImage},
		[]cri.ImageMount{{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kittenImage}, SubPath: "etc"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kitten, _ := imageID(kittenImage)
	st := status(t, r, id)
	wantImages := []cri.ImageMount{{ContainerPath: "/volume", Image: cri.ImageSpec{Image: kitten}, SubPath: "etc"}}
	if diff := cmp.Diff(wantImages, st.ImageMounts); diff != "" {
		t.Errorf("ImageMounts (-want +got):\n%s", diff)
	}
	wantMounts := []cri.Mount{{ContainerPath: "/volume", HostPath: imageVolumeDir + "/" + sbID + "/" + strings.TrimPrefix(kitten, "sha256:") + "/etc", Readonly: true}}
	if diff := cmp.Diff(wantMounts, st.Mounts); diff != "" {
		t.Errorf("Mounts (-want +got):\n%s", diff)
	}

	plain := createContainer(t, r, sbID, sandboxConfig("uid-iv", nil), "plain", "")
	if got := status(t, r, plain).ImageMounts; got != nil {
		t.Errorf("a container without image volumes has ImageMounts %v, want none", got)
	}
	if err := r.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if len(r.imageMounts) != 0 {
		t.Errorf("after RemoveContainer the runtime keeps %d containers' image volumes, want 0", len(r.imageMounts))
	}
}

// TestImageVolumePullScript: a pull for an image volume gets the default behaviour, not the
// scripted pull of some container of the pod, while a container's own pull keeps its script.
func TestImageVolumePullScript(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sbCfg := sandboxConfig("uid-iv", annotate("app", "pullError=ErrImagePull"))
	volume := cri.ImageSpec{Image: kittenImage, Annotations: map[string]string{cri.ImageVolumeAnnotation: "volume"}}
	if err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
		_, err := r.PullImage(ctx, volume, sbCfg)
		return err
	}); err != nil {
		t.Errorf("the volume's pull failed: %v; want the default behaviour (a pull that succeeds)", err)
	}
	app := cri.ImageSpec{Image: "busybox:1.36", Annotations: map[string]string{cri.ContainerNameLabel: "app"}}
	if err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
		_, err := r.PullImage(ctx, app, sbCfg)
		return err
	}); err == nil {
		t.Error("the container's scripted pullError did not fail its own pull")
	}
}

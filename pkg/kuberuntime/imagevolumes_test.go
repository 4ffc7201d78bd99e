package kuberuntime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
)

const (
	kittenImage     = "registry.k8s.io/e2e-test-images/kitten:1.8"
	testImagePulled = `Successfully pulled image "` + testImage + `" in 0s (0s including waiting). Image size: 114294784 bytes.`
	// missingImage is the e2e suite's invalidImageRef: no registry listens on localhost.
	missingImage = "localhost/invalid"
)

// newImageVolumeHarness is a harness whose manager has the ImageVolume gate as given and
// mounts image volumes as the kubelet's makeMounts does (without subPathExpr).
func newImageVolumeHarness(t *testing.T, gate bool) *harness {
	t.Helper()
	h := newHarness(t, true)
	reg := metrics.NewRegistry("kubelet_")
	m, err := NewManager(Config{Runtime: h.rt, Images: h.rt, View: h.rt, Clock: h.clk, Recorder: h.events, Registry: reg,
		SidecarContainers: true, ImageVolume: gate,
		RunContainerOptions: func(_ context.Context, _ *v1.Pod, c *v1.Container, _ []string, volumes ImageVolumes) (*ContainerOptions, error) {
			opts := &ContainerOptions{}
			for _, vm := range c.VolumeMounts {
				if spec, ok := volumes[vm.Name]; ok {
					opts.ImageMounts = append(opts.ImageMounts, cri.ImageMount{ContainerPath: vm.MountPath, Image: spec, SubPath: vm.SubPath})
				}
			}
			return opts, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	h.m, h.reg = m, reg
	return h
}

// withImageVolume adds an image volume and mounts it in the first app container (mountPath
// "": not mounted).
func withImageVolume(name, reference string, policy v1.PullPolicy, mountPath, subPath string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: reference, PullPolicy: policy}}})
		if mountPath != "" {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: name, MountPath: mountPath, SubPath: subPath})
		}
	}
}

// event is an event as these tests compare them: on the pod ("") or a container's field path.
type event struct{ Object, Reason, Message string }

func (h *harness) eventList() []event {
	var out []event
	for _, e := range h.events.List() {
		out = append(out, event{e.InvolvedObject.FieldPath, e.Reason, e.Message})
	}
	return out
}

// TestImageVolumePull: a pod's image volumes are pulled as images, with the events on the
// pod, before its containers start; a container that mounts one whose pull failed waits
// with the pull's reason and message, while an unused one does not hold the pod back.
func TestImageVolumePull(t *testing.T) {
	const app = "spec.containers{app}"
	missingMsg := `rpc error: code = Unknown desc = failed to pull and unpack image "localhost/invalid:latest": failed to resolve reference "localhost/invalid:latest": failed to do request: Head "https://localhost/v2/invalid/manifests/latest": dial tcp 127.0.0.1:443: connect: connection refused`
	tests := []struct {
		name    string
		pod     *v1.Pod
		preload string // an image on the node before the sync
		syncs   int    // syncs in a row, at once
		// The app container after the last sync: its start result's reason and message,
		// or running.
		wantErr    error
		wantMsg    string
		wantEvents []event // in order, those about images and the app's start
	}{
		{
			name:    "pulled, then the container starts",
			pod:     newPod("pulled", withImageVolume("volume", kittenImage, v1.PullAlways, "/volume", "")),
			syncs:   1,
			wantErr: nil,
			wantEvents: []event{
				{"", "Pulling", `Pulling image "` + kittenImage + `"`},
				{"", "Pulled", `Successfully pulled image "` + kittenImage + `" in 0s (0s including waiting). Image size: 248512512 bytes.`},
				{app, "Pulling", `Pulling image "` + testImage + `"`},
				{app, "Pulled", testImagePulled},
				{app, "Created", "Created container app"},
				{app, "Started", "Started container app"},
			},
		},
		{
			name:    "present with IfNotPresent: not pulled again",
			pod:     newPod("present", withImageVolume("volume", kittenImage, v1.PullIfNotPresent, "/volume", "")),
			preload: kittenImage,
			syncs:   1,
			wantEvents: []event{
				{"", "Pulled", `Container image "` + kittenImage + `" already present on machine`},
				{app, "Pulling", `Pulling image "` + testImage + `"`},
				{app, "Pulled", testImagePulled},
				{app, "Created", "Created container app"},
				{app, "Started", "Started container app"},
			},
		},
		{
			name:    "absent with Never",
			pod:     newPod("never", withImageVolume("volume", kittenImage, v1.PullNever, "/volume", "")),
			syncs:   1,
			wantErr: ErrImageNeverPull,
			wantMsg: `Container image "` + kittenImage + `" is not present with pull policy of Never`,
			wantEvents: []event{
				{"", "ErrImageNeverPull", `Container image "` + kittenImage + `" is not present with pull policy of Never`},
				{app, "Failed", "Error: ErrImageNeverPull"},
			},
		},
		{
			name:    "a failed pull",
			pod:     newPod("missing", withImageVolume("volume", missingImage, "", "/volume", "")),
			syncs:   1,
			wantErr: ErrImagePull,
			wantMsg: missingMsg,
			wantEvents: []event{
				{"", "Pulling", `Pulling image "localhost/invalid"`},
				{"", "Failed", `Failed to pull image "localhost/invalid": ` + missingMsg},
				{app, "Failed", "Error: ErrImagePull"},
			},
		},
		{
			name:    "a failed pull, then its back-off",
			pod:     newPod("backoff", withImageVolume("volume", missingImage, "", "/volume", "")),
			syncs:   2,
			wantErr: ErrImagePullBackOff,
			wantMsg: `Back-off pulling image "localhost/invalid": ErrImagePull: ` + missingMsg,
			wantEvents: []event{
				{"", "Pulling", `Pulling image "localhost/invalid"`},
				{"", "Failed", `Failed to pull image "localhost/invalid": ` + missingMsg},
				{app, "Failed", "Error: ErrImagePull"},
				{"", "BackOff", `Back-off pulling image "localhost/invalid"`},
				{app, "Failed", "Error: ImagePullBackOff"},
			},
		},
		{
			name:  "a failed pull of a volume nobody mounts",
			pod:   newPod("unused", withImageVolume("volume", missingImage, "", "", "")),
			syncs: 1,
			wantEvents: []event{
				{"", "Pulling", `Pulling image "localhost/invalid"`},
				{"", "Failed", `Failed to pull image "localhost/invalid": ` + missingMsg},
				{app, "Pulling", `Pulling image "` + testImage + `"`},
				{app, "Pulled", testImagePulled},
				{app, "Created", "Created container app"},
				{app, "Started", "Started container app"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newImageVolumeHarness(t, true)
			if tt.preload != "" {
				h.rt.LoadImage(tt.preload)
			}
			var r *SyncResult
			for range tt.syncs {
				r = startResult(h.sync(tt.pod), "app")
			}
			if r == nil || r.Error != tt.wantErr || r.Message != tt.wantMsg {
				t.Errorf("app's start: %+v, want %v %q", r, tt.wantErr, tt.wantMsg)
			}
			st, _ := h.state(tt.pod, "app")
			if running := st == container.ContainerStateRunning; running != (tt.wantErr == nil) {
				t.Errorf("app is %q, want running=%t", st, tt.wantErr == nil)
			}
			var got []event
			for _, e := range h.eventList() {
				if e.Object == "" || e.Object == app {
					got = append(got, e)
				}
			}
			if diff := cmp.Diff(tt.wantEvents, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestImageVolumePullOrder: the volumes are pulled once a sync, before the first container
// starts, an init container that does not mount them included, and the container that
// mounts them gets them mounted by the runtime; a back-off ends when the pull may be
// retried, and the pull is retried then.
func TestImageVolumePullOrder(t *testing.T) {
	h := newImageVolumeHarness(t, true)
	pod := newPod("order", withInit("init", false), withImageVolume("volume", kittenImage, v1.PullAlways, "/volume", "etc"))
	h.sync(pod)
	got := h.eventList()
	if len(got) < 2 || got[0] != (event{"", "Pulling", `Pulling image "` + kittenImage + `"`}) || got[1].Reason != "Pulled" {
		t.Fatalf("first events %+v, want the volume's Pulling and Pulled before anything of the init container", got)
	}
	h.step(time.Minute) // the init container completes
	r := h.sync(pod)
	if r := startResult(r, "app"); r == nil || r.Error != nil {
		t.Fatalf("app's start: %+v", r)
	}
	pulls := 0
	for _, e := range h.events.List() {
		if e.Reason == "Pulling" && e.InvolvedObject.FieldPath == "" {
			pulls += int(e.Count)
		}
	}
	if pulls != 2 {
		t.Errorf("the volume was pulled %d times, want 2: at each sync that starts a container (policy Always)", pulls)
	}
	var appID string
	for _, s := range h.status(pod).ContainerStatuses {
		if s.Name == "app" {
			appID = s.ID.ID
		}
	}
	st, err := h.rt.ContainerStatus(h.ctx, appID)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ImageMounts) != 1 || st.ImageMounts[0].ContainerPath != "/volume" || st.ImageMounts[0].SubPath != "etc" {
		t.Errorf("the app's image volumes %+v, want kitten's etc at /volume", st.ImageMounts)
	}

	// A failed pull: ImagePullBackOff until its back-off ends, ErrImagePull at the retry.
	h2 := newImageVolumeHarness(t, true)
	bad := newPod("retry", withImageVolume("volume", missingImage, "", "/volume", ""))
	failedAt := h2.clk.Now()
	h2.sync(bad)
	r2 := startResult(h2.sync(bad), "app")
	if want := failedAt.Add(DefaultImageBackOff); r2.Error != ErrImagePullBackOff || !r2.BackOffUntil.Equal(want) {
		t.Errorf("in the back-off: %v until %v, want ImagePullBackOff until %v", r2.Error, r2.BackOffUntil, want)
	}
	h2.step(DefaultImageBackOff)
	if r := startResult(h2.sync(bad), "app"); r.Error != ErrImagePull {
		t.Errorf("after the back-off: %v, want ErrImagePull (pulled again)", r.Error)
	}
}

// TestImageVolumeGateOff: without the gate no image volume is pulled or mounted.
func TestImageVolumeGateOff(t *testing.T) {
	h := newImageVolumeHarness(t, false)
	pod := newPod("off", withImageVolume("volume", missingImage, "", "/volume", ""))
	if r := startResult(h.sync(pod), "app"); r == nil || r.Error != nil {
		t.Fatalf("app's start: %+v, want it started", r)
	}
	for _, e := range h.eventList() {
		if e.Object == "" {
			t.Errorf("pod event %+v, want none: nothing pulled for the volume", e)
		}
	}
	if n, err := testutil.GatherAndCount(h.reg, "kubelet_image_volume_requested_total"); err != nil || n != 0 {
		t.Errorf("image_volume_requested_total: %d series (%v), want it unregistered without the gate", n, err)
	}
}

// TestImageVolumeMetrics: each start of a container counts the image volumes it mounts as
// requested and each of its mounts of one as a mount that succeeded, unless the runtime's
// message begins ImageVolumeMountFailed (CRI-O's); containerd's ("failed to mount image
// volume: ImageVolumeMountFailed: ...") counts as a success, as upstream's prefix test does.
func TestImageVolumeMetrics(t *testing.T) {
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "volume", MountPath: "/a"}, {Name: "volume", MountPath: "/b"}, {Name: "data", MountPath: "/data"},
	}}
	volumes := ImageVolumes{"volume": {Image: kittenImage}}
	tests := []struct {
		name                        string
		err                         error
		msg                         string
		volumes                     ImageVolumes
		requested, succeeded, fails float64
	}{
		{"started", nil, "", volumes, 1, 2, 0},
		{"no image volume", nil, "", nil, 0, 0, 0},
		{"CRI-O's mount failure", ErrCreateContainer, "ImageVolumeMountFailed: subpath does not exist", volumes, 1, 0, 2},
		{"containerd's mount failure", ErrCreateContainer, "failed to mount image volume: ImageVolumeMountFailed: ...", volumes, 1, 2, 0},
		{"another start failure", ErrRunContainer, "ImageVolumeMountFailed", volumes, 1, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newImageVolumeHarness(t, true)
			h.m.countImageVolumeMounts(tt.err, tt.msg, c, tt.volumes)
			want := fmt.Sprintf(`# HELP kubelet_image_volume_mounted_errors_total Number of failed image volume mounts.
# TYPE kubelet_image_volume_mounted_errors_total counter
kubelet_image_volume_mounted_errors_total %v
# HELP kubelet_image_volume_mounted_succeed_total Number of successful image volume mounts.
# TYPE kubelet_image_volume_mounted_succeed_total counter
kubelet_image_volume_mounted_succeed_total %v
# HELP kubelet_image_volume_requested_total Number of requested image volumes.
# TYPE kubelet_image_volume_requested_total counter
kubelet_image_volume_requested_total %v
`, tt.fails, tt.succeeded, tt.requested)
			if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want), "kubelet_image_volume_requested_total", "kubelet_image_volume_mounted_succeed_total", "kubelet_image_volume_mounted_errors_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestImageVolumeMountFailure: a subPath the image lacks fails the container's creation
// with containerd's message (CreateContainerError); the pod's next sync tries again.
func TestImageVolumeMountFailure(t *testing.T) {
	h := newImageVolumeHarness(t, true)
	pod := newPod("subpath", withImageVolume("volume", kittenImage, "", "/volume", "not-existing"))
	r := startResult(h.sync(pod), "app")
	if r == nil || r.Error != ErrCreateContainer || !strings.HasPrefix(r.Message, `failed to mount image volume: ImageVolumeMountFailed: failed to ensure image subpath "not-existing" in "/run/containerd/io.containerd.grpc.v1.cri/image-volumes/`) ||
		!strings.HasSuffix(r.Message, `": openat not-existing: no such file or directory`) {
		t.Errorf("app's start: %+v, want CreateContainerError with containerd's message", r)
	}
	if !contains(h.eventMessages("Failed"), "Error: failed to mount image volume: ImageVolumeMountFailed") {
		t.Errorf("Failed events %q, want the runtime's error", h.eventMessages("Failed"))
	}
	if r := startResult(h.sync(pod), "app"); r == nil || r.Error != ErrCreateContainer {
		t.Errorf("next sync: %+v, want CreateContainerError again", r)
	}
}

// TestPrevPullErrorsForgotten: the failure that started a back-off is forgotten once the
// back-off is (its pod gone, nothing pulls it again).
func TestPrevPullErrorsForgotten(t *testing.T) {
	h := newImageVolumeHarness(t, true)
	pod := newPod("gone", withImageVolume("volume", missingImage, "", "/volume", ""))
	h.sync(pod)
	if len(h.m.prevPullErr) != 1 {
		t.Fatalf("%d failures kept, want 1", len(h.m.prevPullErr))
	}
	h.step(2*DefaultMaxImageBackOff + time.Second)
	if err := h.m.GarbageCollect(h.ctx, contentRemoved{}, true); err != nil {
		t.Fatal(err)
	}
	if len(h.m.prevPullErr) != 0 {
		t.Errorf("%d failures kept after their back-off expired, want 0", len(h.m.prevPullErr))
	}
}

package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
)

func TestSyncPodStartsInitContainersOneAtATime(t *testing.T) {
	for _, sidecars := range []bool{true, false} {
		t.Run(fmt.Sprintf("SidecarContainers=%t", sidecars), func(t *testing.T) {
			h := newHarness(t, sidecars)
			pod := newPod("init", withInit("first", false), withInit("second", false),
				withBehavior("first", "runFor=5s"), withBehavior("second", "runFor=5s"))

			if err := h.sync(pod).Error(); err != nil {
				t.Fatalf("first sync: %v", err)
			}
			if st, _ := h.state(pod, "first"); st != container.ContainerStateRunning {
				t.Fatalf("first init container = %q, want running", st)
			}
			// While the first runs nothing else starts, however often the pod syncs.
			h.sync(pod)
			h.step(4 * time.Second)
			h.sync(pod)
			if st, _ := h.state(pod, "second"); st != "" {
				t.Fatalf("second init container is %q while the first still runs", st)
			}
			if st, _ := h.state(pod, "app"); st != "" {
				t.Fatalf("app container is %q before initialization", st)
			}

			h.step(time.Second) // first exits 0
			h.sync(pod)
			if st, _ := h.state(pod, "second"); st != container.ContainerStateRunning {
				t.Fatalf("second init container = %q after the first completed, want running", st)
			}
			if st, _ := h.state(pod, "app"); st != "" {
				t.Fatalf("app container is %q while the second init container runs", st)
			}

			h.step(5 * time.Second)
			h.sync(pod)
			if st, _ := h.state(pod, "app"); st != container.ContainerStateRunning {
				t.Fatalf("app container = %q after initialization, want running", st)
			}
			if st, _ := h.state(pod, "first"); st != container.ContainerStateExited {
				t.Fatalf("first init container = %q, want exited (kept for status)", st)
			}
		})
	}
}

func TestSyncPodFailedInitContainer(t *testing.T) {
	tests := []struct {
		policy      v1.RestartPolicy
		wantRestart bool
	}{
		{v1.RestartPolicyNever, false},
		{v1.RestartPolicyOnFailure, true},
		{v1.RestartPolicyAlways, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy), func(t *testing.T) {
			h := newHarness(t, true)
			pod := newPod("initfail", withRestartPolicy(tc.policy), withInit("setup", false), withInit("next", false),
				withBehavior("setup", "runFor=1s,exitCode=3"))
			h.sync(pod)
			h.step(time.Second)
			h.sync(pod)

			st, attempt := h.state(pod, "setup")
			if tc.wantRestart {
				if st != container.ContainerStateRunning || attempt != 1 {
					t.Fatalf("setup = %q attempt %d, want running attempt 1", st, attempt)
				}
			} else {
				if st != container.ContainerStateExited {
					t.Fatalf("setup = %q, want exited", st)
				}
				if sb := h.status(pod).SandboxStatuses[0]; sb.State != cri.SandboxNotReady {
					t.Fatalf("sandbox = %v, want stopped: the pod failed", sb.State)
				}
			}
			if st, _ := h.state(pod, "next"); st != "" {
				t.Fatalf("next init container = %q after a failed one, want not started", st)
			}
		})
	}
}

func TestSyncPodSidecars(t *testing.T) {
	tests := []struct {
		sidecars bool
		// after the sidecar started and the pod synced again
		wantInitStarted bool
		wantType        string
	}{
		// a sidecar keeps running and the next init container starts right away
		{sidecars: true, wantInitStarted: true, wantType: ContainerTypeSidecar},
		// without the gate the field is dropped: an ordinary init container that must exit first
		{sidecars: false, wantInitStarted: false, wantType: ContainerTypeInit},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("SidecarContainers=%t", tc.sidecars), func(t *testing.T) {
			h := newHarness(t, tc.sidecars)
			pod := newPod("side", withInit("proxy", true), withInit("migrate", false),
				withBehavior("proxy", "runFor=30s"), withBehavior("migrate", "runFor=1s"))
			h.sync(pod)
			if st, _ := h.state(pod, "proxy"); st != container.ContainerStateRunning {
				t.Fatalf("proxy = %q, want running", st)
			}
			if got := containerType(t, h, "proxy"); got != tc.wantType {
				t.Errorf("proxy %s = %q, want %q", ContainerTypeAnnotation, got, tc.wantType)
			}
			h.sync(pod)
			st, _ := h.state(pod, "migrate")
			if started := st != ""; started != tc.wantInitStarted {
				t.Fatalf("migrate started = %t while proxy runs, want %t", started, tc.wantInitStarted)
			}
			if !tc.sidecars {
				return
			}
			h.step(time.Second) // migrate completes
			h.sync(pod)
			if st, _ := h.state(pod, "app"); st != container.ContainerStateRunning {
				t.Fatalf("app = %q after init, want running", st)
			}
			if st, _ := h.state(pod, "proxy"); st != container.ContainerStateRunning {
				t.Fatalf("proxy = %q next to the app, want running", st)
			}
			h.step(30 * time.Second) // the sidecar exits: it is restarted, the init container is not
			h.sync(pod)
			if st, attempt := h.state(pod, "proxy"); st != container.ContainerStateRunning || attempt != 1 {
				t.Fatalf("proxy = %q attempt %d after it exited, want running attempt 1", st, attempt)
			}
			if _, attempt := h.state(pod, "migrate"); attempt != 0 {
				t.Fatalf("migrate restarted (attempt %d) after initialization", attempt)
			}
		})
	}
}

func TestSandboxRecreatedWhenItDies(t *testing.T) {
	tests := []struct {
		policy v1.RestartPolicy
		// restartPolicy Never: a pod that already ran is not brought back in a new sandbox
		wantNewSandbox bool
	}{
		{v1.RestartPolicyAlways, true},
		{v1.RestartPolicyOnFailure, true},
		{v1.RestartPolicyNever, false},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy), func(t *testing.T) {
			h := newHarness(t, true)
			pod := newPod("sb", withRestartPolicy(tc.policy), withInit("setup", false), withBehavior("setup", "runFor=1s"))
			h.sync(pod)
			h.step(time.Second)
			h.sync(pod)
			if st, _ := h.state(pod, "app"); st != container.ContainerStateRunning {
				t.Fatalf("app = %q, want running before the sandbox dies", st)
			}
			old := h.status(pod).SandboxStatuses[0]
			if err := h.rt.StopPodSandbox(h.ctx, old.ID); err != nil { // the sandbox dies, taking the app with it
				t.Fatal(err)
			}

			h.sync(pod)
			sbs := h.status(pod).SandboxStatuses
			if !tc.wantNewSandbox {
				if len(sbs) != 1 || sbs[0].State != cri.SandboxNotReady {
					t.Fatalf("sandboxes %+v, want only the dead one", sbs)
				}
				if st, _ := h.state(pod, "setup"); st != container.ContainerStateExited {
					t.Fatalf("setup = %q, want the old instance kept (nothing re-run)", st)
				}
				return
			}
			if len(sbs) != 2 || sbs[0].State != cri.SandboxReady || sbs[0].Metadata.Attempt != 1 || sbs[1].ID != old.ID {
				t.Fatalf("sandboxes %+v, want a new ready sandbox with attempt 1 before the old one", sbs)
			}
			if !contains(h.eventMessages("SandboxChanged"), "Pod sandbox changed, it will be killed and re-created.") {
				t.Errorf("SandboxChanged events = %v", h.eventMessages("SandboxChanged"))
			}
			// initialization starts over in the new sandbox: the old init instance is purged and
			// the re-run counts as a restart (upstream derives it from the status of the sync)
			st := h.status(pod)
			setup := st.FindContainerStatusByName("setup")
			if setup == nil || setup.State != container.ContainerStateRunning || setup.RestartCount != 1 {
				t.Fatalf("setup = %+v, want a running re-run with restart count 1", setup)
			}
			if n := len(containersNamed(st, "setup")); n != 1 {
				t.Fatalf("%d instances of setup, want the old one purged", n)
			}
			if app := st.FindContainerStatusByName("app"); app == nil || app.State != container.ContainerStateExited {
				t.Fatalf("app = %+v, want its dead instance waiting for initialization", app)
			}
			h.step(time.Second)
			h.sync(pod)
			if st, attempt := h.state(pod, "app"); st != container.ContainerStateRunning || attempt != 1 {
				t.Fatalf("app = %q attempt %d after the new initialization, want running attempt 1", st, attempt)
			}
		})
	}
}

func containersNamed(st *container.PodStatus, name string) []*container.ContainerStatus {
	var out []*container.ContainerStatus
	for _, c := range st.ContainerStatuses {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

func containerType(t *testing.T, h *harness, name string) string {
	t.Helper()
	cs, err := h.rt.ListContainers(h.ctx, &cri.ContainerFilter{LabelSelector: map[string]string{cri.ContainerNameLabel: name}})
	if err != nil || len(cs) == 0 {
		t.Fatalf("ListContainers(%s): %v, %d found", name, err, len(cs))
	}
	return cs[0].Annotations[ContainerTypeAnnotation]
}

func TestCrashLoopBackOffTiming(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("crash", withBehavior("app", "exitCode=1"))
	h.sync(pod) // attempt 0 starts and exits at once
	h.sync(pod) // the first restart is immediate
	if _, attempt := h.state(pod, "app"); attempt != 1 {
		t.Fatalf("attempt = %d after the first crash, want 1 (immediate restart)", attempt)
	}
	attempt := 1
	for _, d := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second} {
		r := startResult(h.sync(pod), "app")
		want := fmt.Sprintf("back-off %s restarting failed container=app pod=crash_default(uid-crash)", d)
		if r == nil || r.Error != ErrCrashLoopBackOff || r.Message != want {
			t.Fatalf("start result = %+v, want CrashLoopBackOff %q", r, want)
		}
		// the instance exited at once, at this instant: the back-off ends d from now
		if until := h.clk.Now().Add(d); !r.BackOffUntil.Equal(until) {
			t.Fatalf("BackOffUntil = %v, want %v (exit + %v)", r.BackOffUntil, until, d)
		}
		h.step(d - time.Second)
		if r := startResult(h.sync(pod), "app"); r == nil || r.Error != ErrCrashLoopBackOff {
			t.Fatalf("restarted %v before the %v back-off ended", d-time.Second, d)
		}
		h.step(time.Second)
		if r := startResult(h.sync(pod), "app"); r == nil || r.Error != nil {
			t.Fatalf("not restarted when the %v back-off ended: %+v", d, r)
		}
		attempt++
		if _, got := h.state(pod, "app"); got != attempt {
			t.Fatalf("attempt = %d, want %d", got, attempt)
		}
	}
	if !contains(h.eventMessages("BackOff"), "Back-off restarting failed container app in pod crash_default(uid-crash)") {
		t.Errorf("no BackOff event, got %v", h.eventMessages("BackOff"))
	}
}

func TestCrashLoopBackOffResetsAfterTenMinutesRunning(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("reset", withBehavior("app", "exitCode=1"))
	h.sync(pod)
	h.sync(pod) // immediate restart, back-off 10s
	h.step(10 * time.Second)
	h.sync(pod) // restart, back-off 20s
	key := BackOffKey(pod, &pod.Spec.Containers[0])
	if got := h.m.ContainerBackOff().Get(key); got != 20*time.Second {
		t.Fatalf("back-off = %v, want 20s", got)
	}
	// The next instance runs 11 minutes before crashing: the back-off starts over.
	pod.Annotations[behavior.AnnotationKey("app")] = "runFor=11m,exitCode=1"
	h.step(20 * time.Second)
	h.sync(pod)
	h.step(11 * time.Minute)
	if r := startResult(h.sync(pod), "app"); r == nil || r.Error != nil {
		t.Fatalf("not restarted at once after running 11m: %+v", r)
	}
	if got := h.m.ContainerBackOff().Get(key); got != 10*time.Second {
		t.Fatalf("back-off = %v after 11m running, want reset to 10s", got)
	}
}

func TestRestartPolicies(t *testing.T) {
	tests := []struct {
		policy      v1.RestartPolicy
		exitCode    int
		wantRestart bool
	}{
		{v1.RestartPolicyAlways, 0, true},
		{v1.RestartPolicyAlways, 1, true},
		{v1.RestartPolicyOnFailure, 0, false},
		{v1.RestartPolicyOnFailure, 1, true},
		{v1.RestartPolicyNever, 0, false},
		{v1.RestartPolicyNever, 1, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/exit%d", tc.policy, tc.exitCode), func(t *testing.T) {
			h := newHarness(t, true)
			pod := newPod("rp", withRestartPolicy(tc.policy), withBehavior("app", fmt.Sprintf("runFor=5s,exitCode=%d", tc.exitCode)))
			h.sync(pod)
			h.step(5 * time.Second)
			h.sync(pod)
			st, attempt := h.state(pod, "app")
			if restarted := attempt == 1 && st == container.ContainerStateRunning; restarted != tc.wantRestart {
				t.Fatalf("app = %q attempt %d, want restarted=%t", st, attempt, tc.wantRestart)
			}
			if !tc.wantRestart {
				// nothing runs any more: the kubelet stops the sandbox
				if sb := h.status(pod).SandboxStatuses[0]; sb.State != cri.SandboxNotReady {
					t.Fatalf("sandbox = %v, want stopped once the pod is done", sb.State)
				}
			}
		})
	}
}

func TestImagePullFailureBacksOff(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("pull", withBehavior("app", "pullError=ErrImagePull"))
	pod.Spec.Containers[0].Image = "registry.example/app:1.0"

	type want struct {
		after  time.Duration
		reason error
	}
	// a failed pull sets a 10s back-off, doubling after each failed pull
	var failedAt time.Time
	delay := 5 * time.Second
	for i, w := range []want{
		{0, ErrImagePull},
		{0, ErrImagePullBackOff},
		{9 * time.Second, ErrImagePullBackOff},
		{time.Second, ErrImagePull}, // 10s passed: pull again, fails, back-off 20s
		{10 * time.Second, ErrImagePullBackOff},
		{10 * time.Second, ErrImagePull},
	} {
		h.step(w.after)
		r := startResult(h.sync(pod), "app")
		if r == nil || r.Error != w.reason {
			t.Fatalf("sync %d: start result %+v, want %v", i, r, w.reason)
		}
		// The back-off's message carries the failure that started it (upstream since v1.33).
		if want := `Back-off pulling image "registry.example/app:1.0": ErrImagePull: pull image "registry.example/app:1.0": ErrImagePull (scripted by annotation minikubelet.io/behavior.app)`; w.reason == ErrImagePullBackOff && r.Message != want {
			t.Errorf("sync %d: message %q", i, r.Message)
		}
		switch w.reason {
		case ErrImagePull:
			failedAt, delay = h.clk.Now(), 2*delay
			if !r.BackOffUntil.IsZero() {
				t.Errorf("sync %d: a failed pull is not a back-off, BackOffUntil = %v", i, r.BackOffUntil)
			}
		case ErrImagePullBackOff:
			if until := failedAt.Add(delay); !r.BackOffUntil.Equal(until) {
				t.Errorf("sync %d: BackOffUntil = %v, want %v (last failed pull + %v)", i, r.BackOffUntil, until, delay)
			}
		}
		if w.reason == ErrImagePull && !strings.Contains(r.Message, "ErrImagePull") {
			t.Errorf("sync %d: message %q does not carry the runtime's error", i, r.Message)
		}
	}
	if !contains(h.eventMessages("Pulling"), `Pulling image "registry.example/app:1.0"`) {
		t.Errorf("Pulling events = %v", h.eventMessages("Pulling"))
	}
	if !contains(h.eventMessages("Failed"), "Error: ErrImagePull") || !contains(h.eventMessages("Failed"), "Error: ImagePullBackOff") {
		t.Errorf("Failed events = %v", h.eventMessages("Failed"))
	}
}

func TestImagePullReasons(t *testing.T) {
	tests := []struct {
		name   string
		script string
		policy v1.PullPolicy
		want   error
	}{
		{"registry unavailable", "pullError=ErrRegistryUnavailable", v1.PullIfNotPresent, ErrRegistryUnavailable},
		{"never pull an absent image", "", v1.PullNever, ErrImageNeverPull},
		{"pulled fine", "", v1.PullAlways, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			pod := newPod("img")
			if tc.script != "" {
				pod.Annotations[behavior.AnnotationKey("app")] = tc.script
			}
			pod.Spec.Containers[0].ImagePullPolicy = tc.policy
			r := startResult(h.sync(pod), "app")
			if r == nil || r.Error != tc.want {
				t.Fatalf("start result %+v, want %v", r, tc.want)
			}
		})
	}
}

func TestBadBehaviourAnnotationIsAConfigError(t *testing.T) {
	tests := []struct {
		name         string
		annotations  map[string]string
		imagePresent bool
		wantInMsg    []string
	}{
		{"bad value, image to pull", map[string]string{behavior.AnnotationKey("app"): "runFor=banana"}, false,
			[]string{`annotation "minikubelet.io/behavior.app"`, `key "runFor"`, `bad value "banana"`}},
		{"bad value, image present", map[string]string{behavior.AnnotationKey("app"): "runFor=banana"}, true,
			[]string{`annotation "minikubelet.io/behavior.app"`, `bad value "banana"`}},
		{"unknown key", map[string]string{behavior.AnnotationKey("app"): "pullErr=ErrImagePull"}, false,
			[]string{`annotation "minikubelet.io/behavior.app"`, `key "pullErr"`, "unknown key"}},
		{"annotation naming no container", map[string]string{behavior.AnnotationKey("ap"): "exitCode=1"}, false,
			[]string{`annotation "minikubelet.io/behavior.ap"`, `no container named "ap"`}},
		{"two bad annotations on one line", map[string]string{behavior.AnnotationKey("app"): "exitCode=300", behavior.AnnotationKey("web"): "runFor=x"}, false,
			[]string{`annotation "minikubelet.io/behavior.app"`, "; ", `annotation "minikubelet.io/behavior.web"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			if tc.imagePresent {
				if _, err := h.rt.PullImage(h.ctx, cri.ImageSpec{Image: testImage}, nil); err != nil {
					t.Fatal(err)
				}
			}
			pod := newPod("bad")
			pod.Annotations = tc.annotations
			r := startResult(h.sync(pod), "app")
			if r == nil || r.Error != ErrCreateContainerConfig {
				t.Fatalf("start result %+v, want CreateContainerConfigError", r)
			}
			for _, want := range tc.wantInMsg {
				if !strings.Contains(r.Message, want) {
					t.Errorf("message %q does not contain %q", r.Message, want)
				}
			}
			if strings.Contains(r.Message, "\n") {
				t.Errorf("message %q spans lines", r.Message)
			}
			if got := h.eventMessages("Failed"); len(got) != 1 || got[0] != "Error: "+r.Message {
				t.Errorf("Failed events = %q, want one %q", got, "Error: "+r.Message)
			}
			for _, e := range h.events.List() {
				if e.Reason == "Failed" && (e.Type != v1.EventTypeWarning || e.InvolvedObject.FieldPath != "spec.containers{app}") {
					t.Errorf("Failed event %s on %q, want a Warning on spec.containers{app}", e.Type, e.InvolvedObject.FieldPath)
				}
			}
			// checked before the image: no pull is attempted and nothing is created
			if got := h.eventMessages("Pulling"); len(got) != 0 {
				t.Errorf("Pulling events %v: the image was pulled despite the bad script", got)
			}
			if n := countContainers(t, h); n != 0 {
				t.Errorf("%d containers created, want none", n)
			}
			// a fixed annotation lets the container start at the next sync
			pod.Annotations = map[string]string{}
			if r := startResult(h.sync(pod), "app"); r == nil || r.Error != nil {
				t.Fatalf("after fixing the annotation: %+v, want the container started", r)
			}
		})
	}
}

func TestSandboxAndContainerConfig(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("cfg", withInit("setup", false), withBehavior("app", "exitCode=2"))
	pod.Labels = map[string]string{"team": "node"}
	h.sync(pod)
	h.step(time.Second) // default init duration
	h.sync(pod)         // app starts, exits
	h.sync(pod)         // app restarts: attempt 1

	sbs, err := h.rt.ListPodSandbox(h.ctx, nil)
	if err != nil || len(sbs) != 1 {
		t.Fatalf("ListPodSandbox: %v, %d", err, len(sbs))
	}
	sb := sbs[0]
	for k, want := range map[string]string{cri.PodNameLabel: "cfg", cri.PodNamespaceLabel: "default", cri.PodUIDLabel: "uid-cfg", "team": "node"} {
		if sb.Labels[k] != want {
			t.Errorf("sandbox label %s = %q, want %q", k, sb.Labels[k], want)
		}
	}
	if sb.Annotations[behavior.AnnotationKey("app")] != "exitCode=2" {
		t.Errorf("sandbox annotations %v miss the pod's annotations", sb.Annotations)
	}
	cs, _ := h.rt.ListContainers(h.ctx, nil)
	got := map[string]bool{}
	for _, c := range cs {
		key := fmt.Sprintf("%s/%d/%s", c.Metadata.Name, c.Metadata.Attempt, c.Annotations[ContainerTypeAnnotation])
		got[key] = true
		if c.Labels[cri.ContainerNameLabel] != c.Metadata.Name || c.Labels[cri.PodUIDLabel] != "uid-cfg" {
			t.Errorf("container %s labels %v", c.Metadata.Name, c.Labels)
		}
	}
	for _, want := range []string{"setup/0/init", "app/0/app", "app/1/app"} {
		if !got[want] {
			t.Errorf("no container %s (name/attempt/type) in %v", want, got)
		}
	}
}

func TestKillPodGracePeriodAndStopDelay(t *testing.T) {
	tests := []struct {
		name      string
		stopDelay string
		grace     int64
		wantAfter time.Duration
		wantExit  int
	}{
		{"stops within the grace period", "stopDelay=5s", 30, 5 * time.Second, 0},
		{"killed at the end of the grace period", "stopDelay=60s", 10, 10 * time.Second, 137},
		{"the 2s minimum applies", "stopDelay=60s", 1, 2 * time.Second, 137},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			pod := newPod("kill", withBehavior("app", tc.stopDelay))
			h.sync(pod)
			start := h.clk.Now()
			status := h.status(pod)
			err := h.await(time.Minute, func(ctx context.Context) error {
				return h.m.KillPod(ctx, pod, ConvertPodStatusToRunningPod(status), &tc.grace)
			})
			if err != nil {
				t.Fatalf("KillPod: %v", err)
			}
			if got := h.clk.Since(start); got != tc.wantAfter {
				t.Errorf("KillPod returned after %v, want %v", got, tc.wantAfter)
			}
			app := h.status(pod).FindContainerStatusByName("app")
			if app.State != container.ContainerStateExited || app.ExitCode != tc.wantExit {
				t.Fatalf("app = %s exit %d, want exited %d", app.State, app.ExitCode, tc.wantExit)
			}
			if got := app.FinishedAt.Sub(start); got != tc.wantAfter {
				t.Errorf("app stopped after %v, want %v", got, tc.wantAfter)
			}
			if sb := h.status(pod).SandboxStatuses[0]; sb.State != cri.SandboxNotReady {
				t.Errorf("sandbox %v after KillPod, want stopped", sb.State)
			}
			if !contains(h.eventMessages("Killing"), "Stopping container app") {
				t.Errorf("Killing events = %v", h.eventMessages("Killing"))
			}
		})
	}
}

func TestKillPodStopsSidecarsAfterAppContainers(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("order", withInit("proxy", true), withBehavior("proxy", "stopDelay=3s"), withBehavior("app", "stopDelay=3s"))
	h.sync(pod) // proxy
	h.sync(pod) // app
	if st, _ := h.state(pod, "app"); st != container.ContainerStateRunning {
		t.Fatalf("app = %q, want running", st)
	}
	start := h.clk.Now()
	grace := int64(30)
	status := h.status(pod)
	err := h.await(time.Minute, func(ctx context.Context) error {
		return h.m.KillPod(ctx, pod, ConvertPodStatusToRunningPod(status), &grace)
	})
	if err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	after := h.status(pod)
	if got := after.FindContainerStatusByName("app").FinishedAt.Sub(start); got != 3*time.Second {
		t.Errorf("app stopped after %v, want 3s", got)
	}
	if got := after.FindContainerStatusByName("proxy").FinishedAt.Sub(start); got != 6*time.Second {
		t.Errorf("sidecar stopped after %v, want 6s (after the app)", got)
	}
}

func TestRuntimeMetrics(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("m", withContainers("web", "done"), withBehavior("done", "runFor=1s"), withRestartPolicy(v1.RestartPolicyOnFailure))
	h.sync(pod)
	h.step(time.Second)
	if _, err := h.m.GetPods(h.ctx, true); err != nil {
		t.Fatal(err)
	}
	expected := `
# HELP kubelet_running_containers Number of containers currently running
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 1
kubelet_running_containers{container_state="running"} 1
kubelet_running_containers{container_state="unknown"} 0
# HELP kubelet_running_pods Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 1
# HELP kubelet_started_containers_total Cumulative number of containers started
# TYPE kubelet_started_containers_total counter
kubelet_started_containers_total{container_type="container"} 2
# HELP kubelet_started_pods_total Cumulative number of pods started
# TYPE kubelet_started_pods_total counter
kubelet_started_pods_total 1
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(expected), "kubelet_running_containers", "kubelet_running_pods", "kubelet_started_containers_total", "kubelet_started_pods_total"); err != nil {
		t.Fatal(err)
	}
}

type contentRemoved map[string]bool

func (c contentRemoved) ShouldPodContentBeRemoved(uid types.UID) bool { return c[string(uid)] }

func TestGarbageCollection(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("gc", withBehavior("app", "exitCode=1"))
	h.sync(pod) // attempt 0 exits
	h.sync(pod) // attempt 1 exits
	h.step(10 * time.Second)
	h.sync(pod) // attempt 2 exits
	if n := countContainers(t, h); n != 3 {
		t.Fatalf("%d containers before GC, want 3", n)
	}
	// A ContainerDied event cleans the older instances of that container, keeping the newest.
	newest := h.status(pod).FindContainerStatusByName("app")
	if err := h.m.CleanUpContainersInPod(h.ctx, h.status(pod), newest.ID.ID, false); err != nil {
		t.Fatal(err)
	}
	if n := countContainers(t, h); n != 1 {
		t.Fatalf("%d containers after cleanup, want the newest only", n)
	}
	if got := h.status(pod).FindContainerStatusByName("app"); got.ID != newest.ID {
		t.Fatalf("kept %s, want the newest %s", got.ID, newest.ID)
	}

	// Housekeeping of a pod still wanted keeps it; of a deleted, stopped pod removes everything.
	if err := h.m.GarbageCollect(h.ctx, contentRemoved{}, true); err != nil {
		t.Fatal(err)
	}
	if n := countContainers(t, h); n != 1 {
		t.Fatalf("%d containers after GC of a live pod, want 1", n)
	}
	if err := h.m.KillPod(h.ctx, pod, ConvertPodStatusToRunningPod(h.status(pod)), nil); err != nil {
		t.Fatal(err)
	}
	if err := h.m.GarbageCollect(h.ctx, contentRemoved{"uid-gc": true}, false); err != nil {
		t.Fatal(err)
	}
	if n := countContainers(t, h); n != 1 {
		t.Fatalf("GC removed the pod before all sources were ready (%d left)", n)
	}
	if err := h.m.GarbageCollect(h.ctx, contentRemoved{"uid-gc": true}, true); err != nil {
		t.Fatal(err)
	}
	sbs, _ := h.rt.ListPodSandbox(h.ctx, nil)
	if n := countContainers(t, h); n != 0 || len(sbs) != 0 {
		t.Fatalf("%d containers and %d sandboxes left after GC of a removed pod, want none", n, len(sbs))
	}
}

func countContainers(t *testing.T, h *harness) int {
	t.Helper()
	cs, err := h.rt.ListContainers(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

func TestNewManagerValidates(t *testing.T) {
	h := newHarness(t, true)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no runtime", Config{Images: h.rt, View: h.rt, Clock: h.clk}, "Runtime is required"},
		{"no clock", Config{Runtime: h.rt, Images: h.rt, View: h.rt}, "Clock is required"},
		{"negative back-off", Config{Runtime: h.rt, Images: h.rt, View: h.rt, Clock: h.clk, ContainerBackOff: -time.Second}, "ContainerBackOff must not be negative"},
		{"cap below start", Config{Runtime: h.rt, Images: h.rt, View: h.rt, Clock: h.clk, ImageBackOff: time.Minute, MaxImageBackOff: time.Second}, "MaxImageBackOff 1s is below ImageBackOff 1m0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewManager(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewManager() error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestProbeFailuresKillTheContainer: a running container whose liveness or startup probe
// failed is killed with upstream's message and restarted unless the policy is Never.
func TestProbeFailuresKillTheContainer(t *testing.T) {
	tests := []struct {
		probe       string
		policy      v1.RestartPolicy
		wantMessage string
		wantRestart bool
	}{
		{"liveness", v1.RestartPolicyAlways, "Container app failed liveness probe, will be restarted", true},
		{"startup", v1.RestartPolicyOnFailure, "Container app failed startup probe, will be restarted", true},
		// Never: no container would be left running, so the whole pod is killed (upstream's
		// KillPod), with the plain stop message.
		{"liveness", v1.RestartPolicyNever, "Stopping container app", false},
	}
	for _, tc := range tests {
		t.Run(tc.probe+"/"+string(tc.policy), func(t *testing.T) {
			h := newHarness(t, true)
			live, startup := results.NewManager(nil), results.NewManager(nil)
			h.m.cfg.Liveness, h.m.cfg.Startup = live, startup
			pod := newPod("probed", withRestartPolicy(tc.policy))
			h.sync(pod)
			id := h.status(pod).FindContainerStatusByName("app").ID.ID
			// A passing probe keeps it running.
			live.Set(id, results.Success, pod.UID)
			h.sync(pod)
			if msgs := h.eventMessages("Killing"); len(msgs) != 0 {
				t.Fatalf("killed with a passing probe: %q", msgs)
			}
			map[string]*results.Manager{"liveness": live, "startup": startup}[tc.probe].Set(id, results.Failure, pod.UID)
			h.sync(pod)
			if msgs := h.eventMessages("Killing"); len(msgs) != 1 || msgs[0] != tc.wantMessage {
				t.Fatalf("Killing events %q, want %q", msgs, tc.wantMessage)
			}
			st, attempt := h.state(pod, "app")
			if restarted := attempt == 1 && st == container.ContainerStateRunning; restarted != tc.wantRestart {
				t.Fatalf("app = %q attempt %d, want restarted=%t", st, attempt, tc.wantRestart)
			}
		})
	}
}

// TestPulledEventMessage: the Pulled event reads as v1.30's, with the pull's duration and
// the image size the runtime reports.
func TestPulledEventMessage(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("pull", withBehavior("app", "pullDelay=1500ms"))
	if err := h.await(time.Minute, func(ctx context.Context) error { h.m.SyncPod(ctx, pod, h.status(pod), false); return nil }); err != nil {
		t.Fatal(err)
	}
	img, err := h.rt.ImageStatus(h.ctx, cri.ImageSpec{Image: pod.Spec.Containers[0].Image})
	if err != nil || img == nil {
		t.Fatalf("ImageStatus = %v, %v", img, err)
	}
	want := fmt.Sprintf("Successfully pulled image %q in 1.5s (1.5s including waiting). Image size: %d bytes.", pod.Spec.Containers[0].Image, img.Size)
	if got := h.eventMessages("Pulled"); len(got) != 1 || got[0] != want {
		t.Errorf("Pulled events %q, want %q", got, want)
	}
}

// TestSyncResultErrorIsAnAggregate: several failures read as upstream's
// utilerrors.NewAggregate ("[a, b]"), one failure as its message alone.
func TestSyncResultErrorIsAnAggregate(t *testing.T) {
	one := PodSyncResult{}
	one.add(StartContainer, "a").Fail(ErrCrashLoopBackOff, "back-off 10s")
	if got, want := one.Error().Error(), `failed to "StartContainer" for "a" with CrashLoopBackOff: "back-off 10s"`; got != want {
		t.Errorf("one failure: %q, want %q", got, want)
	}
	two := one
	two.add(StartContainer, "b").Fail(ErrImagePullBackOff, `Back-off pulling image "x"`)
	want := `[failed to "StartContainer" for "a" with CrashLoopBackOff: "back-off 10s", failed to "StartContainer" for "b" with ImagePullBackOff: "Back-off pulling image \"x\""]`
	if got := two.Error().Error(); got != want {
		t.Errorf("two failures: %q, want %q", got, want)
	}
	if !errors.Is(two.Error(), ErrImagePullBackOff) {
		t.Error("the aggregate does not wrap its errors")
	}
	if (PodSyncResult{}).Error() != nil {
		t.Error("no failure is not nil")
	}
}

// TestChangedSpecRestartsTheContainer: a running container whose pod spec no longer hashes
// to what it was created with (an image update of an API pod) is killed and started again,
// as upstream's containerChanged, with a fresh crash-loop back-off.
func TestChangedSpecRestartsTheContainer(t *testing.T) {
	h := newHarness(t, true)
	pod := newPod("upd")
	h.sync(pod)
	if st, attempt := h.state(pod, "app"); st != container.ContainerStateRunning || attempt != 0 {
		t.Fatalf("app %v attempt %d, want running", st, attempt)
	}
	oldKey := BackOffKey(pod, &pod.Spec.Containers[0])
	// An update is a new pod object from the source, as the merger and informers give.
	pod = pod.DeepCopy()
	pod.Spec.Containers[0].Image = "ghcr.io/minikubelet/test-app:2.0"
	if BackOffKey(pod, &pod.Spec.Containers[0]) == oldKey {
		t.Error("the back-off key does not change with the image")
	}
	h.sync(pod)
	if msgs := h.eventMessages("Killing"); len(msgs) != 1 || msgs[0] != "Container app definition changed, will be restarted" {
		t.Errorf("Killing events %q", msgs)
	}
	h.sync(pod)
	if st, attempt := h.state(pod, "app"); st != container.ContainerStateRunning || attempt != 1 {
		t.Errorf("app %v attempt %d, want running again (attempt 1)", st, attempt)
	}
	h.sync(pod)
	if msgs := h.eventMessages("Killing"); len(msgs) != 1 {
		t.Errorf("the restarted container is killed again: %q", msgs)
	}
}

// TestCredentialFor: a pull secret's credential is used for the registry it names.
func TestCredentialFor(t *testing.T) {
	creds := []cri.AuthConfig{{ServerAddress: "https://gcr.io", Auth: "a"}, {ServerAddress: "index.docker.io/v1/", Auth: "b"}}
	for image, want := range map[string]string{
		"gcr.io/authenticated-image-pulling/alpine:3.7": "a",
		"busybox":                   "b",
		"registry.k8s.io/pause:3.9": "",
	} {
		got := credentialFor(image, creds)
		if (got == nil) != (want == "") || got != nil && got.Auth != want {
			t.Errorf("%s: %+v, want auth %q", image, got, want)
		}
	}
}

// TestGarbageCollectionOfSandboxes: a sandbox that is not ready and holds no container is
// removed unless it is its pod's newest (kept while the pod may still run); a ready one
// stays, and a pod whose content should be removed loses every such sandbox.
func TestGarbageCollectionOfSandboxes(t *testing.T) {
	tests := []struct {
		name    string
		ready   []bool // per attempt, oldest first; every one is made one second apart
		removed bool   // the pod's content should be removed
		want    []uint32
	}{
		{"one dead sandbox of a live pod stays", []bool{false}, false, []uint32{0}},
		{"older dead sandboxes go, the newest stays", []bool{false, false, false}, false, []uint32{2}},
		{"a ready sandbox stays", []bool{true, false}, false, []uint32{0, 1}},
		{"an older dead one goes beside a ready newest", []bool{false, true}, false, []uint32{1}},
		{"a removed pod loses every dead one", []bool{false, false}, true, nil},
		{"but not a ready one", []bool{false, true}, true, []uint32{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			// Another pod's sandbox, dead, is its pod's newest: it stays whatever happens here.
			other, err := h.rt.RunPodSandbox(h.ctx, &cri.PodSandboxConfig{Metadata: cri.PodSandboxMetadata{Name: "other", Namespace: "ns", UID: "uid-other"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := h.rt.StopPodSandbox(h.ctx, other); err != nil {
				t.Fatal(err)
			}
			for attempt, ready := range tc.ready {
				h.step(time.Second)
				id, err := h.rt.RunPodSandbox(h.ctx, &cri.PodSandboxConfig{Metadata: cri.PodSandboxMetadata{Name: "p", Namespace: "ns", UID: "uid-p", Attempt: uint32(attempt)}})
				if err != nil {
					t.Fatal(err)
				}
				if !ready {
					if err := h.rt.StopPodSandbox(h.ctx, id); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := h.m.GarbageCollect(h.ctx, contentRemoved{"uid-p": tc.removed}, true); err != nil {
				t.Fatal(err)
			}
			sbs, err := h.rt.ListPodSandbox(h.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []uint32
			otherLeft := false
			for _, s := range sbs {
				switch s.Metadata.UID {
				case "uid-p":
					got = append(got, s.Metadata.Attempt)
				case "uid-other":
					otherLeft = true
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) || !otherLeft {
				t.Fatalf("sandboxes left %v (other pod's kept: %v), want %v and the other pod's", got, otherLeft, tc.want)
			}
		})
	}
}

package podstatus

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func pod(opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "app", Image: "nginx:1.25"}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func policy(rp v1.RestartPolicy) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.RestartPolicy = rp } }

func inits(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "busybox"})
		}
	}
}

func sidecar(name string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		always := v1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: name, Image: "envoy", RestartPolicy: &always})
	}
}

func static(p *v1.Pod) {
	p.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}
}

// ctr is one runtime container instance; n orders creation (higher is newer).
func ctr(name string, state container.State, attempt, exitCode, n int) *container.ContainerStatus {
	s := &container.ContainerStatus{
		ID:           container.ContainerID{Type: container.RuntimeType, ID: fmt.Sprintf("%s-%d", name, attempt)},
		Name:         name,
		PodSandboxID: "sb", // runtime's sandbox
		State:        state,
		CreatedAt:    t0.Add(time.Duration(n) * time.Second),
		Image:        "nginx:1.25",
		ImageID:      "sha256:abc",
		RestartCount: attempt,
		ExitCode:     exitCode,
	}
	if state == container.ContainerStateRunning || state == container.ContainerStateExited {
		s.StartedAt = s.CreatedAt
	}
	if state == container.ContainerStateExited {
		s.FinishedAt = s.CreatedAt.Add(time.Second)
		s.Reason = "Completed"
		if exitCode != 0 {
			s.Reason = "Error"
		}
	}
	return s
}

// runtime builds a runtime status: a ready sandbox with an IP plus the containers, newest
// first as the runtime view sorts them.
func runtime(cs ...*container.ContainerStatus) *container.PodStatus {
	s := &container.PodStatus{ID: "uid-web", Name: "web", Namespace: "default", IPs: []string{"10.88.0.2"},
		SandboxStatuses: []*cri.PodSandboxStatus{{ID: "sb", State: cri.SandboxReady, IP: "10.88.0.2", Metadata: cri.PodSandboxMetadata{Name: "web", UID: "uid-web", Namespace: "default"}}}}
	for i := len(cs) - 1; i >= 0; i-- {
		s.ContainerStatuses = append(s.ContainerStatuses, cs[i])
	}
	return s
}

type reasons map[string]Reason

func (r reasons) Get(_ types.UID, name string) (Reason, bool) { v, ok := r[name]; return v, ok }

func cond(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

func find(list []v1.ContainerStatus, name string) v1.ContainerStatus {
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	return v1.ContainerStatus{}
}

func waitingReason(s v1.ContainerStatus) string {
	if s.State.Waiting == nil {
		return "<not waiting>"
	}
	return s.State.Waiting.Reason
}

func TestGeneratePhaseConditionsAndReasons(t *testing.T) {
	type condWant struct {
		status  v1.ConditionStatus
		reason  string
		message string
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		rt       *container.PodStatus
		reasons  reasons
		terminal bool
		old      v1.PodStatus
		features Features

		phase       v1.PodPhase
		waiting     map[string]string // container -> waiting reason
		initialized condWant
		ready       condWant
	}{
		{
			name: "new pod without sandbox", pod: pod(), rt: &container.PodStatus{ID: "uid-web"},
			phase:       v1.PodPending,
			waiting:     map[string]string{"app": ContainerCreating},
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "init containers not started", pod: pod(inits("a", "b")), rt: runtime(),
			phase:       v1.PodPending,
			waiting:     map[string]string{"app": PodInitializing, "a": PodInitializing, "b": PodInitializing},
			initialized: condWant{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [a b]"},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "second init container running", pod: pod(inits("a", "b")),
			rt:          runtime(ctr("a", container.ContainerStateExited, 0, 0, 1), ctr("b", container.ContainerStateRunning, 0, 0, 2)),
			phase:       v1.PodPending,
			waiting:     map[string]string{"app": PodInitializing},
			initialized: condWant{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [b]"},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "running", pod: pod(inits("a")),
			rt:          runtime(ctr("a", container.ContainerStateExited, 0, 0, 1), ctr("app", container.ContainerStateRunning, 0, 0, 2)),
			phase:       v1.PodRunning,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{status: v1.ConditionTrue},
		},
		{
			name: "crash loop", pod: pod(),
			rt:          runtime(ctr("app", container.ContainerStateExited, 3, 1, 1)),
			reasons:     reasons{"app": {Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=app pod=web_default(uid-web)"}},
			phase:       v1.PodRunning,
			waiting:     map[string]string{"app": "CrashLoopBackOff"},
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "image pull back-off", pod: pod(), rt: runtime(),
			reasons:     reasons{"app": {Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:1.25"`}},
			phase:       v1.PodPending,
			waiting:     map[string]string{"app": "ImagePullBackOff"},
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "never, succeeded", pod: pod(policy(v1.RestartPolicyNever)),
			rt:          runtime(ctr("app", container.ContainerStateExited, 0, 0, 1)),
			phase:       v1.PodSucceeded,
			initialized: condWant{v1.ConditionTrue, PodCompleted, ""},
			ready:       condWant{v1.ConditionFalse, PodCompleted, ""},
		},
		{
			name: "never, failed", pod: pod(policy(v1.RestartPolicyNever)),
			rt:          runtime(ctr("app", container.ContainerStateExited, 0, 2, 1)),
			phase:       v1.PodFailed,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, PodFailed, ""},
		},
		{
			name: "on failure, restarting", pod: pod(policy(v1.RestartPolicyOnFailure)),
			rt:          runtime(ctr("app", container.ContainerStateExited, 0, 2, 1)),
			phase:       v1.PodRunning,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "never, init container failed", pod: pod(policy(v1.RestartPolicyNever), inits("a")),
			rt:          runtime(ctr("a", container.ContainerStateExited, 0, 1, 1)),
			phase:       v1.PodFailed,
			waiting:     map[string]string{"app": PodInitializing},
			initialized: condWant{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [a]"},
			ready:       condWant{v1.ConditionFalse, PodFailed, ""},
		},
		{
			name: "on failure, init container failed: retried, pod stays pending", pod: pod(policy(v1.RestartPolicyOnFailure), inits("a")),
			rt:          runtime(ctr("a", container.ContainerStateExited, 0, 1, 1)),
			phase:       v1.PodPending,
			waiting:     map[string]string{"app": PodInitializing},
			initialized: condWant{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [a]"},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "always, init container in crash loop", pod: pod(inits("a")),
			rt:          runtime(ctr("a", container.ContainerStateExited, 2, 1, 1)),
			reasons:     reasons{"a": {Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container=a pod=web_default(uid-web)"}},
			phase:       v1.PodPending,
			waiting:     map[string]string{"a": "CrashLoopBackOff", "app": PodInitializing},
			initialized: condWant{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [a]"},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "never, initialized, app failed", pod: pod(policy(v1.RestartPolicyNever), inits("a")),
			rt:          runtime(ctr("a", container.ContainerStateExited, 0, 0, 1), ctr("app", container.ContainerStateExited, 0, 3, 2)),
			phase:       v1.PodFailed,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, PodFailed, ""},
		},
		{
			name: "on failure, initialized, app succeeded", pod: pod(policy(v1.RestartPolicyOnFailure), inits("a")),
			rt:          runtime(ctr("a", container.ContainerStateExited, 0, 0, 1), ctr("app", container.ContainerStateExited, 0, 0, 2)),
			phase:       v1.PodSucceeded,
			initialized: condWant{v1.ConditionTrue, PodCompleted, ""},
			ready:       condWant{v1.ConditionFalse, PodCompleted, ""},
		},
		{
			name: "never, init container running", pod: pod(policy(v1.RestartPolicyNever), inits("a", "b")),
			rt:          runtime(ctr("a", container.ContainerStateRunning, 0, 0, 1)),
			phase:       v1.PodPending,
			waiting:     map[string]string{"b": PodInitializing, "app": PodInitializing},
			initialized: condWant{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [a b]"},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "sidecar running next to the app", pod: pod(sidecar("proxy")), features: Features{SidecarContainers: true},
			rt:          runtime(ctr("proxy", container.ContainerStateRunning, 0, 0, 1), ctr("app", container.ContainerStateRunning, 0, 0, 2)),
			phase:       v1.PodRunning,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{status: v1.ConditionTrue},
		},
		{
			name: "sidecar started, app not yet", pod: pod(sidecar("proxy")), features: Features{SidecarContainers: true},
			rt:          runtime(ctr("proxy", container.ContainerStateRunning, 0, 0, 1)),
			phase:       v1.PodPending,
			waiting:     map[string]string{"app": PodInitializing},
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "gate off: a running restartable init container still initializes", pod: pod(sidecar("proxy")),
			rt:          runtime(ctr("proxy", container.ContainerStateRunning, 0, 0, 1)),
			phase:       v1.PodPending,
			waiting:     map[string]string{"app": PodInitializing},
			initialized: condWant{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [proxy]"},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			name: "terminal after kill", pod: pod(), terminal: true,
			rt:          runtime(ctr("app", container.ContainerStateExited, 0, 137, 1)),
			phase:       v1.PodFailed,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, PodFailed, ""},
		},
		{
			name: "static pods keep their phase after a kill (upstream #116484)", pod: pod(static), terminal: true,
			rt:          runtime(ctr("app", container.ContainerStateExited, 0, 137, 1)),
			phase:       v1.PodRunning,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [app]"},
		},
		{
			// The node shutdown's kill wrote Failed/Terminated when the termination started;
			// the container then honoured SIGTERM (exit 0), which alone means Succeeded.
			name: "a kill's terminal phase sticks when the containers exit 0", pod: pod(), terminal: true,
			old:         v1.PodStatus{Phase: v1.PodFailed, Reason: "Terminated", Message: "Pod was terminated in response to imminent node shutdown."},
			rt:          runtime(ctr("app", container.ContainerStateExited, 0, 0, 1)),
			phase:       v1.PodFailed,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, PodFailed, ""},
		},
		{
			name: "a succeeded pod stays succeeded", pod: pod(), terminal: true, old: v1.PodStatus{Phase: v1.PodSucceeded},
			rt:          runtime(ctr("app", container.ContainerStateExited, 0, 137, 1)),
			phase:       v1.PodSucceeded,
			initialized: condWant{v1.ConditionTrue, PodCompleted, ""},
			ready:       condWant{v1.ConditionFalse, PodCompleted, ""},
		},
		{
			name: "a failed pod never runs again", pod: pod(), old: v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu"},
			rt:          runtime(ctr("app", container.ContainerStateRunning, 0, 0, 1)),
			phase:       v1.PodFailed,
			initialized: condWant{status: v1.ConditionTrue},
			ready:       condWant{v1.ConditionFalse, PodFailed, ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGenerator(GeneratorConfig{Features: tc.features, Reasons: tc.reasons})
			s := g.Generate(tc.pod, tc.rt, tc.old, tc.terminal)
			if s.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", s.Phase, tc.phase)
			}
			for name, want := range tc.waiting {
				cs := find(append(append([]v1.ContainerStatus{}, s.ContainerStatuses...), s.InitContainerStatuses...), name)
				if got := waitingReason(cs); got != want {
					t.Errorf("%s waiting reason = %q, want %q", name, got, want)
				}
			}
			for _, c := range []struct {
				typ  v1.PodConditionType
				want condWant
			}{{v1.PodInitialized, tc.initialized}, {v1.PodReady, tc.ready}, {v1.ContainersReady, tc.ready}} {
				got := cond(s, c.typ)
				if got == nil {
					t.Errorf("no %s condition", c.typ)
					continue
				}
				if got.Status != c.want.status || got.Reason != c.want.reason || got.Message != c.want.message {
					t.Errorf("%s = %s/%q/%q, want %s/%q/%q", c.typ, got.Status, got.Reason, got.Message, c.want.status, c.want.reason, c.want.message)
				}
			}
			if sc := cond(s, v1.PodScheduled); sc == nil || sc.Status != v1.ConditionTrue {
				t.Errorf("PodScheduled = %v, want True", sc)
			}
			if tc.old.Phase == s.Phase && s.Reason != tc.old.Reason {
				t.Errorf("reason %q not kept with phase %s, want %q", s.Reason, s.Phase, tc.old.Reason)
			}
		})
	}
}

func TestGenerateContainerStatusFields(t *testing.T) {
	g := NewGenerator(GeneratorConfig{HostIP: "192.168.1.10", Reasons: reasons{}})
	p := pod()
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}}
	rt := runtime(ctr("app", container.ContainerStateExited, 0, 137, 1), ctr("app", container.ContainerStateRunning, 1, 0, 2))
	s := g.Generate(p, rt, v1.PodStatus{}, false)
	app := find(s.ContainerStatuses, "app")
	if app.State.Running == nil || !app.State.Running.StartedAt.Time.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("state = %+v, want running since t0+2s", app.State)
	}
	last := app.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 137 || last.Reason != "Error" || last.ContainerID != "fake://app-0" {
		t.Errorf("lastState = %+v, want the previous instance's exit 137", app.LastTerminationState)
	}
	if app.RestartCount != 1 || app.ContainerID != "fake://app-1" || app.ImageID != "sha256:abc" || app.Image != "nginx:1.25" {
		t.Errorf("status = %+v", app)
	}
	if !app.Ready || app.Started == nil || !*app.Started {
		t.Errorf("ready=%t started=%v, want a running container without probes ready and started", app.Ready, app.Started)
	}
	if s.PodIP != "10.88.0.2" || len(s.PodIPs) != 1 || s.HostIP != "192.168.1.10" {
		t.Errorf("podIP=%q podIPs=%v hostIP=%q", s.PodIP, s.PodIPs, s.HostIP)
	}
	if s.QOSClass != v1.PodQOSGuaranteed {
		t.Errorf("qosClass = %s, want Guaranteed (limits only default the requests)", s.QOSClass)
	}
}

func TestGenerateCrashLoopKeepsLastTermination(t *testing.T) {
	g := NewGenerator(GeneratorConfig{Reasons: reasons{"app": {Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=app pod=web_default(uid-web)"}}})
	s := g.Generate(pod(), runtime(ctr("app", container.ContainerStateExited, 1, 2, 1)), v1.PodStatus{}, false)
	app := find(s.ContainerStatuses, "app")
	if app.State.Waiting == nil || app.State.Waiting.Message != "back-off 10s restarting failed container=app pod=web_default(uid-web)" {
		t.Fatalf("state = %+v", app.State)
	}
	if app.LastTerminationState.Terminated == nil || app.LastTerminationState.Terminated.ExitCode != 2 {
		t.Errorf("lastState = %+v, want the crash's exit code 2", app.LastTerminationState)
	}
	if app.RestartCount != 1 {
		t.Errorf("restartCount = %d, want 1", app.RestartCount)
	}
}

func TestGeneratePodReadyToStartContainers(t *testing.T) {
	notReady := runtime()
	notReady.SandboxStatuses[0].State = cri.SandboxNotReady
	tests := []struct {
		name string
		gate bool
		rt   *container.PodStatus
		want v1.ConditionStatus // "" means absent
	}{
		{"gate off", false, runtime(), ""},
		{"no sandbox", true, &container.PodStatus{ID: "uid-web"}, v1.ConditionFalse},
		{"sandbox ready with IP", true, runtime(), v1.ConditionTrue},
		{"sandbox died", true, notReady, v1.ConditionFalse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGenerator(GeneratorConfig{Features: Features{PodReadyToStartContainersCondition: tc.gate}})
			c := cond(g.Generate(pod(), tc.rt, v1.PodStatus{}, false), v1.PodReadyToStartContainers)
			switch {
			case tc.want == "" && c != nil:
				t.Fatalf("condition %+v present with the gate off", c)
			case tc.want != "" && (c == nil || c.Status != tc.want):
				t.Fatalf("condition = %+v, want %s", c, tc.want)
			}
		})
	}
}

func TestGenerateKeepsDisruptionTarget(t *testing.T) {
	g := NewGenerator(GeneratorConfig{})
	disruption := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet", Message: "Pod was terminated in response to imminent node shutdown.",
		LastTransitionTime: metav1.NewTime(t0)}
	old := v1.PodStatus{Phase: v1.PodFailed, Reason: "Terminated", Conditions: []v1.PodCondition{disruption, {Type: v1.PodReady, Status: v1.ConditionFalse}}}
	s := g.Generate(pod(), runtime(ctr("app", container.ContainerStateExited, 0, 137, 1)), old, true)
	got := cond(s, v1.DisruptionTarget)
	if got == nil || *got != disruption {
		t.Fatalf("DisruptionTarget = %+v, want the one the kill wrote: %+v", got, disruption)
	}
	n := 0
	for _, c := range s.Conditions {
		if c.Type == v1.DisruptionTarget {
			n++
		}
	}
	if n != 1 || s.Reason != "Terminated" {
		t.Errorf("%d DisruptionTarget conditions, reason %q; want one and the kill's reason kept", n, s.Reason)
	}
	if cond(g.Generate(pod(), runtime(), v1.PodStatus{}, false), v1.DisruptionTarget) != nil {
		t.Errorf("a DisruptionTarget condition appeared from nowhere")
	}
}

func TestGenerateKeepsOldTerminatedStatusOfRemovedContainer(t *testing.T) {
	g := NewGenerator(GeneratorConfig{})
	p := pod(policy(v1.RestartPolicyNever))
	first := g.Generate(p, runtime(ctr("app", container.ContainerStateExited, 0, 0, 1)), v1.PodStatus{}, false)
	// the container was garbage collected: the exit code must survive
	again := g.Generate(p, runtime(), first, false)
	app := find(again.ContainerStatuses, "app")
	if app.State.Terminated == nil || app.State.Terminated.ExitCode != 0 || again.Phase != v1.PodSucceeded {
		t.Fatalf("after removal: state %+v phase %s, want terminated 0 and Succeeded", app.State, again.Phase)
	}
}

func BenchmarkGenerate(b *testing.B) {
	g := NewGenerator(GeneratorConfig{Features: Features{SidecarContainers: true, PodReadyToStartContainersCondition: true}, Reasons: NewReasonCache()})
	p := pod(inits("a"), sidecar("proxy"))
	rt := runtime(ctr("a", container.ContainerStateExited, 0, 0, 1), ctr("proxy", container.ContainerStateRunning, 0, 0, 2), ctr("app", container.ContainerStateRunning, 0, 0, 3))
	old := g.Generate(p, rt, v1.PodStatus{}, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		old = g.Generate(p, rt, old, false)
	}
}

package kubelet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
	"github.com/minikubelet/minikubelet/pkg/podworkers"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
)

// stack is the whole pod lifecycle without the sync loop: pod workers -> Syncer -> runtime
// manager -> fake runtime, stepped on a fake clock, with a minimal relist filling the
// status cache.
type stack struct {
	t      *testing.T
	ctx    context.Context
	clk    *testclock.FakeClock
	rt     *fake.Runtime
	cache  *statuscache.Cache
	status *podstatus.Manager
	p      *podworkers.PodWorkers
	sim    *runner.Sim
	reg    *metrics.Registry
	events *events.Store
	pods   map[types.UID]*v1.Pod
}

func newStack(t *testing.T, f podstatus.Features) *stack {
	t.Helper()
	clk := testclock.NewFakeClock(epoch)
	rt, err := fake.New(fake.Config{Clock: clk, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry("kubelet_")
	store := events.NewStore(clk, "node-1", 0)
	mgr, err := kuberuntime.NewManager(kuberuntime.Config{Runtime: rt, Images: rt, View: rt, Clock: clk, Recorder: store, Registry: reg, SidecarContainers: f.SidecarContainers})
	if err != nil {
		t.Fatal(err)
	}
	statusMgr, err := podstatus.NewManager(podstatus.ManagerConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	reasons := podstatus.NewReasonCache()
	syncer, err := NewSyncer(SyncerConfig{
		Runtime: mgr, Status: statusMgr, Reasons: reasons, Clock: clk, Recorder: store, Registry: reg,
		Generator: podstatus.NewGenerator(podstatus.GeneratorConfig{Features: f, Reasons: reasons, HostIP: "192.168.0.10"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	cache := statuscache.New(statuscache.Config{})
	p, err := podworkers.New(podworkers.Config{Handler: syncer, Cache: cache, Clock: clk, Recorder: store, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	sim := runner.NewSim(clk, []runner.Loop{
		{Name: "runtime", Due: rt.Due, Step: rt.Step, Wake: rt.Wake()},
		{Name: "pod-workers", Due: p.Due, Step: p.Step, Wake: p.Wake()},
	})
	return &stack{t: t, ctx: context.Background(), clk: clk, rt: rt, cache: cache, status: statusMgr, p: p, sim: sim, reg: reg, events: store, pods: map[types.UID]*v1.Pod{}}
}

func (s *stack) add(pod *v1.Pod) {
	s.pods[pod.UID] = pod
	s.p.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
}

// run steps the runtime and the pod workers for d of virtual time.
func (s *stack) run(d time.Duration) {
	s.t.Helper()
	if err := s.sim.RunUntil(s.ctx, s.clk.Now().Add(d), nil); err != nil {
		s.t.Fatal(err)
	}
}

// tick moves virtual time, relists every pod into the cache, and gives every pod a sync.
func (s *stack) tick(d time.Duration) {
	s.t.Helper()
	s.run(d)
	for uid, pod := range s.pods {
		st, err := s.rt.GetPodStatus(s.ctx, uid, pod.Name, pod.Namespace)
		if err != nil {
			s.t.Fatal(err)
		}
		s.cache.Set(uid, st, nil, s.clk.Now())
	}
	s.cache.UpdateTime(s.clk.Now())
	// Every pod gets a sync, as a PLEG event or the resync tick would bring it; pods whose
	// requeue is due are among them.
	s.p.PodsToSync(s.clk.Now())
	for _, pod := range s.pods {
		s.p.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodSync})
	}
	s.run(0)
}

func (s *stack) podStatus(pod *v1.Pod) v1.PodStatus {
	s.t.Helper()
	st, ok := s.status.GetPodStatus(pod.UID)
	if !ok {
		s.t.Fatalf("no status for %s", pod.Name)
	}
	return st
}

func containerStatus(st v1.PodStatus, name string) v1.ContainerStatus {
	for _, cs := range append(append([]v1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	return v1.ContainerStatus{}
}

func statusCondition(st v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func lifecyclePod(name string, annotations map[string]string, opts ...func(*v1.Pod)) *v1.Pod {
	grace := int64(10)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: annotations},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "app", Image: "nginx:1.25"}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestLifecycleToRunning(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("PodReadyToStartContainersCondition=%t", gate), func(t *testing.T) {
			s := newStack(t, podstatus.Features{SidecarContainers: true, PodReadyToStartContainersCondition: gate})
			pod := lifecyclePod("web", map[string]string{behavior.AnnotationKey("setup"): "runFor=3s"}, func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox:1.36"}}
			})
			s.add(pod)
			s.tick(time.Second) // first sync: status from an empty runtime, then sandbox + setup
			st := s.podStatus(pod)
			if st.Phase != v1.PodPending || waitingReasonOf(containerStatus(st, "app")) != podstatus.PodInitializing {
				t.Fatalf("first status: phase %s, app %+v", st.Phase, containerStatus(st, "app").State)
			}
			if c := statusCondition(st, v1.PodReadyToStartContainers); gate != (c.Type != "") || (gate && c.Status != v1.ConditionFalse) {
				t.Fatalf("PodReadyToStartContainers = %+v with the gate %t before any sandbox", c, gate)
			}

			s.tick(time.Second) // setup runs
			st = s.podStatus(pod)
			if c := statusCondition(st, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Message != "containers with incomplete status: [setup]" {
				t.Fatalf("Initialized = %+v while setup runs", c)
			}
			if gate && statusCondition(st, v1.PodReadyToStartContainers).Status != v1.ConditionTrue {
				t.Fatal("PodReadyToStartContainers not True with a ready sandbox")
			}
			for i := 0; i < 4 && s.podStatus(pod).Phase != v1.PodRunning; i++ {
				s.tick(time.Second)
			}
			st = s.podStatus(pod)
			app := containerStatus(st, "app")
			if st.Phase != v1.PodRunning || app.State.Running == nil || !app.Ready {
				t.Fatalf("phase %s app %+v, want Running with app running and ready", st.Phase, app)
			}
			if statusCondition(st, v1.PodReady).Status != v1.ConditionTrue || !strings.HasPrefix(app.ContainerID, "fake://") || app.Image != "nginx:1.25" || !strings.HasPrefix(app.ImageID, "sha256:") {
				t.Fatalf("status %+v", st)
			}
			if st.PodIP == "" || st.HostIP != "192.168.0.10" || st.StartTime == nil {
				t.Fatalf("podIP %q hostIP %q startTime %v", st.PodIP, st.HostIP, st.StartTime)
			}
			if n := testutil.CollectAndCount(s.reg, "kubelet_pod_start_duration_seconds"); n != 1 {
				t.Fatalf("pod_start_duration_seconds has %d series", n)
			}
		})
	}
}

func waitingReasonOf(cs v1.ContainerStatus) string {
	if cs.State.Waiting == nil {
		return ""
	}
	return cs.State.Waiting.Reason
}

func TestSidecarGateInStatus(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("SidecarContainers=%t", gate), func(t *testing.T) {
			s := newStack(t, podstatus.Features{SidecarContainers: gate})
			always := v1.ContainerRestartPolicyAlways
			// the proxy runs an hour: as a sidecar next to the app, as a plain init container
			// before it
			pod := lifecyclePod("mesh", map[string]string{behavior.AnnotationKey("proxy"): "runFor=1h"}, func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: "envoyproxy/envoy:v1.30.1", RestartPolicy: &always}}
			})
			s.add(pod)
			for i := 0; i < 5; i++ {
				s.tick(time.Second)
			}
			st := s.podStatus(pod)
			if gate {
				if st.Phase != v1.PodRunning || containerStatus(st, "proxy").State.Running == nil || containerStatus(st, "app").State.Running == nil {
					t.Fatalf("phase %s, want Running with proxy and app running", st.Phase)
				}
				return
			}
			// without the gate the proxy is an init container that never ends
			if st.Phase != v1.PodPending || containerStatus(st, "app").State.Running != nil {
				t.Fatalf("phase %s app %+v, want Pending with app not started", st.Phase, containerStatus(st, "app").State)
			}
		})
	}
}

func TestCrashLoopAndImagePullStatus(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantReason string
		wantMsg    string
	}{
		{"crash loop", "exitCode=1", "CrashLoopBackOff", "back-off 10s restarting failed container=app pod=bad_default(uid-bad)"},
		// The back-off's message says what failed the pull that started it (since v1.33).
		{"image pull", "pullError=ErrImagePull", "ImagePullBackOff", `Back-off pulling image "nginx:1.25": ErrImagePull: pull image "nginx:1.25": ErrImagePull (scripted by annotation minikubelet.io/behavior.app)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, podstatus.Features{SidecarContainers: true})
			pod := lifecyclePod("bad", map[string]string{behavior.AnnotationKey("app"): tc.script})
			s.add(pod)
			var seen []string
			for i := 0; i < 6; i++ {
				s.tick(time.Second)
				cs := containerStatus(s.podStatus(pod), "app")
				if r := waitingReasonOf(cs); r != "" && (len(seen) == 0 || seen[len(seen)-1] != r) {
					seen = append(seen, r)
				}
				if cs.State.Waiting != nil && cs.State.Waiting.Reason == tc.wantReason {
					if cs.State.Waiting.Message != tc.wantMsg {
						t.Fatalf("message %q, want %q", cs.State.Waiting.Message, tc.wantMsg)
					}
					if tc.name == "crash loop" && (cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 || cs.RestartCount < 1) {
						t.Fatalf("crash loop status %+v, want lastState exit 1 and restarts", cs)
					}
					return
				}
			}
			t.Fatalf("waiting reasons seen %v, never %s", seen, tc.wantReason)
		})
	}
}

// TestBadBehaviourAnnotationInStatus: a bad script is the container's configuration error,
// shown before any pull with a message naming the annotation, and retried as a failed sync.
func TestBadBehaviourAnnotationInStatus(t *testing.T) {
	s := newStack(t, podstatus.Features{SidecarContainers: true})
	key := behavior.AnnotationKey("app")
	pod := lifecyclePod("typo", map[string]string{key: "runFor=30"})
	s.add(pod)
	s.tick(time.Second)
	s.tick(time.Second)
	st := s.podStatus(pod)
	app := containerStatus(st, "app")
	want := `annotation "minikubelet.io/behavior.app": key "runFor": bad value "30": want a duration such as 30s or 1m`
	if app.State.Waiting == nil || app.State.Waiting.Reason != "CreateContainerConfigError" || app.State.Waiting.Message != want {
		t.Fatalf("app state %+v, want waiting CreateContainerConfigError %q", app.State, want)
	}
	if st.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", st.Phase)
	}
	var warned bool
	for _, e := range s.events.List() {
		if e.Type == v1.EventTypeWarning && e.Reason == "Failed" && e.Message == "Error: "+want {
			warned = true
		}
		if e.Reason == "Pulling" {
			t.Errorf("image pulled despite the bad script: %q", e.Message)
		}
	}
	if !warned {
		t.Errorf("no Warning Failed event naming the annotation in %+v", s.events.List())
	}
	// a failed sync: retried after the 10s back-off (plus jitter), not the 1m resync
	next, ok := s.p.NextRequeue()
	if d := next.Sub(s.clk.Now()); !ok || d < 10*time.Second || d >= 15*time.Second {
		t.Errorf("requeue in %v, want within [10s, 15s)", d)
	}
}

func TestTerminationWithGracePeriodAndStopDelay(t *testing.T) {
	tests := []struct {
		name      string
		stopDelay string
		override  *int64
		wantAfter time.Duration
		wantExit  int32
		// a pod whose containers all exit 0 when stopped succeeded
		wantPhase v1.PodPhase
	}{
		{"stops on SIGTERM", "stopDelay=4s", nil, 4 * time.Second, 0, v1.PodSucceeded},
		{"killed at the pod's grace period", "stopDelay=60s", nil, 10 * time.Second, 137, v1.PodFailed},
		{"killed at a shorter override", "stopDelay=60s", ptr.To[int64](3), 3 * time.Second, 137, v1.PodFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, podstatus.Features{})
			pod := lifecyclePod("stop", map[string]string{behavior.AnnotationKey("app"): tc.stopDelay})
			s.add(pod)
			s.tick(time.Second)
			s.tick(time.Second)
			if containerStatus(s.podStatus(pod), "app").State.Running == nil {
				t.Fatal("app not running")
			}
			var opts *podworkers.KillPodOptions
			if tc.override != nil {
				opts = &podworkers.KillPodOptions{PodTerminationGracePeriodSecondsOverride: tc.override}
			}
			s.p.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: opts})
			s.clk.Step(time.Second)
			s.cache.UpdateTime(s.clk.Now())
			start := s.clk.Now()
			// The terminating sync waits for StopContainer, a pending operation of the
			// runtime: a second short of the stop, the pod is still terminating.
			s.run(tc.wantAfter - time.Second)
			if s.p.IsPodKnownTerminated(pod.UID) || containerStatus(s.podStatus(pod), "app").State.Terminated != nil {
				t.Fatalf("pod terminated %v into a stop that takes %v", tc.wantAfter-time.Second, tc.wantAfter)
			}
			if s.p.SyncsInFlight() != 1 {
				t.Fatalf("syncs in flight = %d, want the terminating sync waiting for the stop", s.p.SyncsInFlight())
			}
			s.run(time.Second)
			st := s.podStatus(pod)
			term := containerStatus(st, "app").State.Terminated
			if term == nil || term.ExitCode != tc.wantExit || term.FinishedAt.Time.Sub(start) != tc.wantAfter {
				t.Fatalf("app %+v, want terminated with %d after %v", containerStatus(st, "app").State, tc.wantExit, tc.wantAfter)
			}
			if !s.p.IsPodKnownTerminated(pod.UID) {
				t.Fatal("pod not terminated after the kill")
			}
			s.tick(time.Second)
			if !s.p.ShouldPodBeFinished(pod.UID) || s.podStatus(pod).Phase != tc.wantPhase {
				t.Fatalf("finished=%t phase=%s, want finished and %s", s.p.ShouldPodBeFinished(pod.UID), s.podStatus(pod).Phase, tc.wantPhase)
			}
		})
	}
}

func TestNeverPodSucceedsAndStays(t *testing.T) {
	s := newStack(t, podstatus.Features{})
	pod := lifecyclePod("job", map[string]string{behavior.AnnotationKey("app"): "runFor=2s"}, func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever })
	s.add(pod)
	for i := 0; i < 8; i++ {
		s.tick(time.Second)
	}
	st := s.podStatus(pod)
	if st.Phase != v1.PodSucceeded || statusCondition(st, v1.PodReady).Reason != podstatus.PodCompleted {
		t.Fatalf("phase %s Ready %+v, want Succeeded / PodCompleted", st.Phase, statusCondition(st, v1.PodReady))
	}
	if !s.p.ShouldPodBeFinished(pod.UID) {
		t.Fatal("a succeeded pod's worker did not finish")
	}
	sbs, _ := s.rt.ListPodSandbox(s.ctx, nil)
	if len(sbs) != 1 || sbs[0].State.String() != "SANDBOX_NOTREADY" {
		t.Fatalf("sandboxes %+v, want the one sandbox stopped", sbs)
	}
}

// TestPodsStopInParallel: the terminations of many pods wait for the runtime side by side,
// not one after the other: ten pods that take 2s each to stop are all gone 2s after the kill.
func TestPodsStopInParallel(t *testing.T) {
	s := newStack(t, podstatus.Features{SidecarContainers: true})
	const n = 10
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		pod := lifecyclePod(fmt.Sprint("d", i), map[string]string{behavior.AnnotationKey("app"): "stopDelay=2s"})
		pods = append(pods, pod)
		s.add(pod)
	}
	running := func() bool {
		for _, pod := range pods {
			if st, ok := s.status.GetPodStatus(pod.UID); !ok || st.Phase != v1.PodRunning {
				return false
			}
		}
		return true
	}
	for i := 0; !running(); i++ {
		if i == 10 {
			t.Fatal("pods did not all reach Running in 10s")
		}
		s.tick(time.Second)
	}
	for _, pod := range pods {
		s.p.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill})
	}
	// A sync reads a status newer than the previous sync's: the relist the PLEG would make.
	s.clk.Step(time.Second)
	s.cache.UpdateTime(s.clk.Now())
	start := s.clk.Now()
	s.run(2 * time.Second)
	for _, pod := range pods {
		if !s.p.IsPodKnownTerminated(pod.UID) {
			t.Fatalf("%s not terminated 2s after the kill: the stops ran one after another", pod.Name)
		}
		st := s.podStatus(pod)
		term := containerStatus(st, "app").State.Terminated
		if term == nil || term.ExitCode != 0 || !term.FinishedAt.Time.Equal(start.Add(2*time.Second)) {
			t.Fatalf("%s: app %+v, want stopped gracefully at +2s", pod.Name, containerStatus(st, "app").State)
		}
	}
	s.tick(time.Second)
	for _, pod := range pods {
		if st := s.podStatus(pod); !s.p.ShouldPodBeFinished(pod.UID) || st.Phase != v1.PodSucceeded {
			t.Fatalf("%s: finished=%t phase=%s, want finished and Succeeded", pod.Name, s.p.ShouldPodBeFinished(pod.UID), st.Phase)
		}
	}
}

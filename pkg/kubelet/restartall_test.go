package kubelet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
)

// restartAllPod is a pod of the e2e "Pod Extended (RestartAllContainers)" specs
// (sig-node container_restart_policy.go): busybox containers with a workdir emptyDir,
// which the source container uses to exit 42 (its rule's code) on its first run only.
func restartAllPod(name string, policy v1.RestartPolicy, inits, apps []v1.Container) *v1.Pod {
	fill := func(list []v1.Container) {
		for i := range list {
			list[i].Image = "busybox"
			list[i].TerminationMessagePath = "/dev/termination-log"
			list[i].TerminationMessagePolicy = v1.TerminationMessageReadFile
			list[i].ImagePullPolicy = v1.PullIfNotPresent
		}
	}
	fill(inits)
	fill(apps)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(epoch)},
		Spec: v1.PodSpec{
			NodeName: testNode, RestartPolicy: policy, DNSPolicy: v1.DNSClusterFirst,
			InitContainers: inits, Containers: apps,
			Volumes: []v1.Volume{{Name: "workdir", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

// TestRestartAllContainers runs the five e2e RestartAllContainers pods on a node with the
// default gates and checks what the specs check (every listed container restarted once,
// with a lastState, then the app containers running again) and what upstream shows on the
// way: the AllContainersRestarting condition True with its reason and message while the
// containers are reset, then False; the removed containers waiting with
// RestartingAllContainers; a Killing event "killing" for each one still running; and no
// second restart (the containers killed by the reset do not trigger another).
func TestRestartAllContainers(t *testing.T) {
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever
	on42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	sh := func(script string) []string { return []string{"/bin/sh", "-c", script} }
	mnt := []v1.VolumeMount{{Name: "workdir", MountPath: "/mnt"}}
	sleep := sh("sleep 10000")
	tests := []struct {
		name      string
		pod       *v1.Pod
		restarted []string // the containers the spec checks restarted
		running   []string // then running
		killed    []string // the ones the reset stopped (Killing "killing"), in order
	}{
		{
			name: "regular container exit",
			pod: restartAllPod("regular-exit", v1.RestartPolicyNever,
				[]v1.Container{{Name: "init", Command: sh("exit 0")}, {Name: "sidecar", Command: sleep, RestartPolicy: &always}},
				[]v1.Container{
					{Name: "source-container", Command: sh("if [ -f /mnt/restart-complete ]; then sleep 10000; else touch /mnt/restart-complete; exit 42; fi"),
						RestartPolicy: &never, RestartPolicyRules: on42, VolumeMounts: mnt},
					{Name: "regular", Command: sleep},
				}),
			restarted: []string{"init", "sidecar", "source-container", "regular"},
			running:   []string{"source-container", "regular"},
			killed:    []string{"regular", "sidecar"},
		},
		{
			name: "sidecar container exit",
			pod: restartAllPod("sidecar-exit", v1.RestartPolicyNever,
				[]v1.Container{
					{Name: "init", Command: sh("exit 0")},
					{Name: "sidecar", Command: sleep, RestartPolicy: &always},
					{Name: "source-sidecar", Command: sh("if [ -f /mnt/init-complete ]; then sleep 10000; else touch /mnt/init-complete; sleep 30; exit 42; fi"),
						RestartPolicy: &always, RestartPolicyRules: on42, VolumeMounts: mnt},
				},
				[]v1.Container{{Name: "regular", Command: sleep}}),
			restarted: []string{"init", "sidecar", "source-sidecar", "regular"},
			running:   []string{"regular", "source-sidecar"},
			killed:    []string{"regular", "sidecar"},
		},
		{
			name: "init container exit",
			pod: restartAllPod("init-exit", v1.RestartPolicyNever,
				[]v1.Container{
					{Name: "sidecar", Command: sleep, RestartPolicy: &always},
					{Name: "init", Command: sh("exit 0")},
					{Name: "source-init", Command: sh("if [ -f /mnt/init-complete ]; then exit 0; else touch /mnt/init-complete; exit 42; fi"),
						RestartPolicy: &never, RestartPolicyRules: on42, VolumeMounts: mnt},
				},
				[]v1.Container{{Name: "regular", Command: sleep}}),
			restarted: []string{"init", "sidecar", "source-init"},
			running:   []string{"regular"},
			killed:    []string{"sidecar"},
		},
		{
			name: "two containers with rules, no loop",
			pod: restartAllPod("no-loop", v1.RestartPolicyNever, nil, []v1.Container{
				{Name: "source-container", Command: sh("if [ -f /mnt/restart-complete ]; then sleep 10000; else touch /mnt/restart-complete; sleep 10; exit 42; fi"),
					RestartPolicy: &never, RestartPolicyRules: on42, VolumeMounts: mnt},
				{Name: "regular", Command: sleep, RestartPolicy: &never, RestartPolicyRules: on42},
			}),
			restarted: []string{"source-container", "regular"},
			running:   []string{"source-container", "regular"},
			killed:    []string{"regular"},
		},
		{
			name: "previously restarted regular container exit",
			pod: restartAllPod("restarted-before", v1.RestartPolicyAlways, nil, []v1.Container{
				{Name: "source-container", Command: sh("if [ -f /mnt/restart-complete ]; then sleep 10000; elif [ -f /mnt/restart-1 ]; then touch /mnt/restart-complete; exit 42; else touch /mnt/restart-1; exit 1; fi"),
					RestartPolicy: &always, RestartPolicyRules: on42, VolumeMounts: mnt},
				{Name: "regular", Command: sleep},
			}),
			restarted: []string{"source-container", "regular"},
			running:   []string{"source-container", "regular"},
			killed:    []string{"regular"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset(tc.pod.DeepCopy())
			// What a user watching the pod sees: every status the node patches. The whole
			// reset can happen within one instant of the clock (the exit, the kills and the
			// relist after the sync), so sampling the node between rounds could miss it.
			w, err := client.CoreV1().Pods(tc.pod.Namespace).Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			h := newClusterHarness(t, client)
			h.k.UpdateAPIPods(context.Background(), []*v1.Pod{tc.pod})
			name := tc.pod.Name
			var restarting []v1.PodCondition // AllContainersRestarting as each patch changed it
			var waitingReasons []string      // the removed containers' waiting states
			seen := func(p *v1.Pod) {
				if c := condition(p, v1.AllContainersRestarting); c != nil && (len(restarting) == 0 || restarting[len(restarting)-1].Status != c.Status) {
					restarting = append(restarting, *c)
				}
				for _, cs := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
					if w := cs.State.Waiting; w != nil && w.Reason == "RestartingAllContainers" {
						waitingReasons = append(waitingReasons, cs.Name+": "+w.Message)
					}
				}
			}
			observe := func() *v1.Pod {
				for {
					select {
					case ev := <-w.ResultChan():
						if p, ok := ev.Object.(*v1.Pod); ok {
							seen(p)
						}
						continue
					default:
					}
					break
				}
				return h.pod(name)
			}
			status := func(p *v1.Pod, c string) *v1.ContainerStatus {
				for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
					for i := range list {
						if list[i].Name == c {
							return &list[i]
						}
					}
				}
				return nil
			}
			allRestarted := func() bool {
				p := observe()
				if p == nil {
					return false
				}
				for _, c := range tc.restarted {
					cs := status(p, c)
					if cs == nil || cs.RestartCount == 0 || cs.LastTerminationState.Terminated == nil {
						return false
					}
				}
				return true
			}
			h.until(180, "every listed container restarted", allRestarted, func() string { return describeRestartAll(h.pod(name)) })
			allRunning := func() bool {
				p := observe()
				for _, c := range tc.running {
					if cs := status(p, c); cs == nil || cs.State.Running == nil {
						return false
					}
				}
				return true
			}
			h.until(180, "the app containers running again", allRunning, func() string { return describeRestartAll(h.pod(name)) })

			p := h.pod(name)
			if p.Status.Phase != v1.PodRunning {
				t.Errorf("phase = %s, want Running", p.Status.Phase)
			}
			if len(restarting) != 3 || restarting[0].Status != v1.ConditionFalse || restarting[1].Status != v1.ConditionTrue || restarting[2].Status != v1.ConditionFalse {
				t.Fatalf("AllContainersRestarting went %+v, want False, True, False", restarting)
			}
			if c := restarting[1]; c.Reason != "RestartAllContainersStarted" || c.Message != "container exited with restart policy rule" {
				t.Errorf("AllContainersRestarting True = %q %q, want RestartAllContainersStarted, container exited with restart policy rule", c.Reason, c.Message)
			}
			if len(waitingReasons) == 0 || !strings.HasSuffix(waitingReasons[0], ": The container is removed because RestartAllContainers in place") {
				t.Errorf("removed containers waiting with %q, want RestartingAllContainers with upstream's message", waitingReasons)
			}
			// The store folds events alike but for their container into one (the first's
			// field path, counted): the reset stops the regular containers first.
			killings := 0
			for _, e := range h.k.Events().List() {
				if e.Reason == "Killing" && e.InvolvedObject.Name == name {
					if e.Message != "killing" {
						t.Errorf("Killing event %q, want upstream's \"killing\"", e.Message)
					}
					if want := "{" + tc.killed[0] + "}"; !strings.HasSuffix(e.InvolvedObject.FieldPath, want) {
						t.Errorf("first Killing event for %s, want %s", e.InvolvedObject.FieldPath, tc.killed[0])
					}
					killings += int(e.Count)
				}
			}
			if killings != len(tc.killed) {
				t.Errorf("%d Killing events, want %d (%v)", killings, len(tc.killed), tc.killed)
			}

			// Long after: nothing restarted again (the containers the reset killed did not
			// trigger another), and the restart counts stay.
			counts := map[string]int32{}
			for _, c := range tc.restarted {
				counts[c] = status(p, c).RestartCount
			}
			h.round(2 * time.Minute)
			p = observe()
			for _, c := range tc.restarted {
				if got := status(p, c).RestartCount; got != counts[c] {
					t.Errorf("%s restartCount %d two minutes later, want %d still", c, got, counts[c])
				}
			}
			if len(restarting) != 3 {
				t.Errorf("AllContainersRestarting went %+v, want no second restart", restarting)
			}
		})
	}
}

func describeRestartAll(p *v1.Pod) string {
	if p == nil {
		return "no pod"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s;", p.Status.Phase)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			last := "-"
			if t := cs.LastTerminationState.Terminated; t != nil {
				last = fmt.Sprintf("%s/%d", t.Reason, t.ExitCode)
			}
			fmt.Fprintf(&b, "; %s %s restarts=%d last=%s", cs.Name, containerState(cs), cs.RestartCount, last)
		}
	}
	return b.String()
}

// resetRuntime is a PodRuntime that records what SyncPod was asked and returns result.
type resetRuntime struct {
	result  kuberuntime.PodSyncResult
	asked   []bool // restartAllContainers of each SyncPod
	runtime *container.PodStatus
}

func (r *resetRuntime) SyncPod(_ context.Context, _ *v1.Pod, _ *container.PodStatus, restartAll bool) kuberuntime.PodSyncResult {
	r.asked = append(r.asked, restartAll)
	return r.result
}

func (r *resetRuntime) KillPod(context.Context, *v1.Pod, container.Pod, *int64) error { return nil }

func (r *resetRuntime) GetPodStatus(context.Context, types.UID, string, string) (*container.PodStatus, error) {
	return r.runtime, nil
}

func (r *resetRuntime) WithTerminationMessages(_ context.Context, s *container.PodStatus) *container.PodStatus {
	return s
}

// TestSyncerRestartAllContainers: the syncer asks the runtime to reset the pod's containers
// when the status it generated has AllContainersRestarting True (under the gate), and once
// that removed containers without error it requeues the pod, as upstream's syncPod does.
func TestSyncerRestartAllContainers(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reset", Namespace: "default", UID: "uid-reset"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "app", RestartPolicy: &never,
			RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}},
			{Name: "web"}}},
	}
	exited := func(code int) *container.PodStatus {
		return &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
			SandboxStatuses: []*cri.PodSandboxStatus{{ID: "sb", State: cri.SandboxReady, IP: "10.0.0.2"}},
			ContainerStatuses: []*container.ContainerStatus{
				{ID: container.ContainerID{Type: "fake", ID: "app-0"}, Name: "app", State: container.ContainerStateExited, ExitCode: code},
				{ID: container.ContainerID{Type: "fake", ID: "web-0"}, Name: "web", State: container.ContainerStateRunning},
			}}
	}
	removed := kuberuntime.PodSyncResult{SyncResults: []*kuberuntime.SyncResult{{Action: kuberuntime.RemoveContainer, Target: "app"}}}
	failed := kuberuntime.PodSyncResult{SyncResults: []*kuberuntime.SyncResult{{Action: kuberuntime.RemoveContainer, Target: "app", Error: kuberuntime.ErrRemoveContainer}}}
	tests := []struct {
		name        string
		gate        bool
		exitCode    int
		result      kuberuntime.PodSyncResult
		wantAsked   bool
		wantRequeue bool
	}{
		{"exit 42: reset, then requeued", true, 42, removed, true, true},
		{"removal failed: no requeue", true, 42, failed, true, false},
		{"exit 1: no reset", true, 1, kuberuntime.PodSyncResult{}, false, false},
		{"gate off", false, 42, removed, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch)
			status, err := podstatus.NewManager(podstatus.ManagerConfig{Clock: clk, ContainerRestartRules: true, RestartAllContainers: tc.gate})
			if err != nil {
				t.Fatal(err)
			}
			rt := &resetRuntime{result: tc.result}
			var requeued []types.UID
			s, err := NewSyncer(SyncerConfig{
				Runtime: rt, Status: status, Reasons: podstatus.NewReasonCache(), Clock: clk,
				Generator: podstatus.NewGenerator(podstatus.GeneratorConfig{Features: podstatus.Features{SidecarContainers: true,
					ContainerRestartRules: true, RestartAllContainersOnContainerExits: tc.gate}}),
				RestartAllContainers: tc.gate,
				Requeue:              func(p *v1.Pod) { requeued = append(requeued, p.UID) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.SyncPod(context.Background(), kubetypes.SyncPodSync, pod, exited(tc.exitCode)); err != nil && tc.result.Error() == nil {
				t.Fatalf("SyncPod: %v", err)
			}
			if len(rt.asked) != 1 || rt.asked[0] != tc.wantAsked {
				t.Errorf("runtime asked restartAllContainers=%v, want [%t]", rt.asked, tc.wantAsked)
			}
			if got := len(requeued) == 1 && requeued[0] == pod.UID; got != tc.wantRequeue || len(requeued) > 1 {
				t.Errorf("requeued %v, want requeued=%t", requeued, tc.wantRequeue)
			}
		})
	}
}

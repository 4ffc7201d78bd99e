package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

// TestGetPhasePendingInitContainers: v1.37's rule for pending init containers. A pending
// regular init container keeps the pod Pending even after its app containers ran (a new
// sandbox runs the init containers again); a pending sidecar only until the pod has
// initialized (an app container in the active sandbox).
func TestGetPhasePendingInitContainers(t *testing.T) {
	f := false
	notStarted := func(name string) v1.ContainerStatus {
		s := running(name)
		s.Started = &f
		return s
	}
	appRanBefore := v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: PodInitializing}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137}}}
	tests := []struct {
		name        string
		pod         *v1.Pod
		info        []v1.ContainerStatus
		initialized bool
		want        v1.PodPhase
	}{
		{"regular init running again after the app ran", pod(inits("setup")), []v1.ContainerStatus{running("setup"), appRanBefore}, false, v1.PodPending},
		// v1.30 asked whether an app container had started (here: terminated), and said Running.
		{"regular init running, an app container terminated", pod(inits("setup")), []v1.ContainerStatus{running("setup"), terminated("app", 0)}, true, v1.PodPending},
		{"sidecar not started yet, pod not initialized", pod(sidecar("proxy")), []v1.ContainerStatus{notStarted("proxy"), running("app")}, false, v1.PodPending},
		{"sidecar restarting after the pod initialized", pod(sidecar("proxy")), []v1.ContainerStatus{notStarted("proxy"), running("app")}, true, v1.PodRunning},
		{"init done, app running", pod(inits("setup")), []v1.ContainerStatus{terminated("setup", 0), running("app")}, true, v1.PodRunning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := getPhase(tc.pod, tc.info, false, tc.initialized, true, container.RestartGates{ContainerRestartRules: true}); got != tc.want {
				t.Errorf("phase = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHasAnyActiveRegularContainerStarted: only the containers of the newest sandbox, and
// only while it is ready, count; init containers do not.
func TestHasAnyActiveRegularContainerStarted(t *testing.T) {
	p := pod(inits("setup"))
	sandbox := func(id string, state cri.PodSandboxState) *cri.PodSandboxStatus {
		return &cri.PodSandboxStatus{ID: id, State: state}
	}
	in := func(sb, name string) *container.ContainerStatus {
		return &container.ContainerStatus{Name: name, PodSandboxID: sb, State: container.ContainerStateExited}
	}
	tests := []struct {
		name   string
		status *container.PodStatus
		want   bool
	}{
		{"no status", nil, false},
		{"app in the ready sandbox", &container.PodStatus{SandboxStatuses: []*cri.PodSandboxStatus{sandbox("s2", cri.SandboxReady)},
			ContainerStatuses: []*container.ContainerStatus{in("s2", "app")}}, true},
		{"app only in an older sandbox", &container.PodStatus{SandboxStatuses: []*cri.PodSandboxStatus{sandbox("s2", cri.SandboxReady), sandbox("s1", cri.SandboxNotReady)},
			ContainerStatuses: []*container.ContainerStatus{in("s2", "setup"), in("s1", "app")}}, false},
		{"newest sandbox not ready", &container.PodStatus{SandboxStatuses: []*cri.PodSandboxStatus{sandbox("s1", cri.SandboxNotReady)},
			ContainerStatuses: []*container.ContainerStatus{in("s1", "app")}}, false},
		{"only the init container", &container.PodStatus{SandboxStatuses: []*cri.PodSandboxStatus{sandbox("s1", cri.SandboxReady)},
			ContainerStatuses: []*container.ContainerStatus{in("s1", "setup")}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := container.HasAnyActiveRegularContainerStarted(&p.Spec, tc.status); got != tc.want {
				t.Errorf("= %v, want %v", got, tc.want)
			}
		})
	}
}

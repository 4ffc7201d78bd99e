package kuberuntime

import (
	"context"
	"errors"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
)

// IsRestartableInitContainer reports whether c is a sidecar: an init container with
// restartPolicy Always. With the SidecarContainers gate off the API server drops that field,
// so the container is an ordinary init container; sidecarGate carries the gate's value.
func IsRestartableInitContainer(c *v1.Container, sidecarGate bool) bool {
	return sidecarGate && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// HasRestartableInitContainer reports whether the pod has a sidecar under the gate.
func HasRestartableInitContainer(pod *v1.Pod, sidecarGate bool) bool {
	for i := range pod.Spec.InitContainers {
		if IsRestartableInitContainer(&pod.Spec.InitContainers[i], sidecarGate) {
			return true
		}
	}
	return false
}

// PodSandboxChanged reports whether the pod needs a new sandbox (none, none ready, more than
// one ready, or the ready one has no IP on a pod-network pod), the attempt number for it and
// the id of the sandbox being replaced (upstream kuberuntime/util.PodSandboxChanged).
func PodSandboxChanged(pod *v1.Pod, podStatus *container.PodStatus) (bool, uint32, string) {
	if podStatus == nil || len(podStatus.SandboxStatuses) == 0 {
		klog.V(4).InfoS("No sandbox for pod can be found. Need to start a new one", "pod", klog.KObj(pod))
		return true, 0, ""
	}
	ready := 0
	for _, s := range podStatus.SandboxStatuses {
		if s.State == cri.SandboxReady {
			ready++
		}
	}
	newest := podStatus.SandboxStatuses[0]
	if ready > 1 {
		klog.V(2).InfoS("Multiple sandboxes are ready for Pod. Need to reconcile them", "pod", klog.KObj(pod))
		return true, newest.Metadata.Attempt + 1, newest.ID
	}
	if newest.State != cri.SandboxReady {
		klog.V(2).InfoS("No ready sandbox for pod can be found. Need to start a new one", "pod", klog.KObj(pod))
		return true, newest.Metadata.Attempt + 1, newest.ID
	}
	if !pod.Spec.HostNetwork && newest.IP == "" {
		klog.V(2).InfoS("Sandbox for pod has no IP address. Need to start a new one", "pod", klog.KObj(pod))
		return true, newest.Metadata.Attempt + 1, newest.ID
	}
	return false, newest.Metadata.Attempt, newest.ID
}

// ShouldContainerBeRestarted reports whether a container that is not running should be
// (re)started: never run before, left in created/unknown state, or exited and allowed by
// the pod's restartPolicy (upstream kubecontainer.ShouldContainerBeRestarted).
func ShouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, podStatus *container.PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	status := podStatus.FindContainerStatusByName(c.Name)
	if status == nil {
		return true
	}
	switch status.State {
	case container.ContainerStateRunning:
		return false
	case container.ContainerStateUnknown, container.ContainerStateCreated:
		return true
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return status.ExitCode != 0
	}
	return true
}

func shouldRestartOnFailure(pod *v1.Pod) bool {
	return pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

func containerSucceeded(c *v1.Container, podStatus *container.PodStatus) bool {
	s := podStatus.FindContainerStatusByName(c.Name)
	return s != nil && s.State == container.ContainerStateExited && s.ExitCode == 0
}

// isInitContainerFailed: an OOM kill, a non-zero exit or an unknown state all count as a
// failed init container.
func isInitContainerFailed(s *container.ContainerStatus) bool {
	if s.Reason == "OOMKilled" {
		return true
	}
	if s.State == container.ContainerStateExited && s.ExitCode != 0 {
		return true
	}
	return s.State == container.ContainerStateUnknown
}

// runningPodFromStatus is the runtime pod KillPod stops: the running containers and every
// sandbox (upstream ConvertPodStatusToRunningPod).
func runningPodFromStatus(podStatus *container.PodStatus) container.Pod {
	if podStatus == nil {
		return container.Pod{}
	}
	p := container.Pod{ID: podStatus.ID, Name: podStatus.Name, Namespace: podStatus.Namespace}
	for _, cs := range podStatus.ContainerStatuses {
		if cs.State != container.ContainerStateRunning {
			continue
		}
		p.Containers = append(p.Containers, &container.Container{
			ID: cs.ID, Name: cs.Name, Image: cs.Image, ImageID: cs.ImageID, State: cs.State,
			CreatedAt: cs.CreatedAt.UnixNano(), Attempt: uint32(cs.RestartCount),
		})
	}
	for _, s := range podStatus.SandboxStatuses {
		p.Sandboxes = append(p.Sandboxes, &container.Container{
			ID:        container.ContainerID{Type: container.RuntimeType, ID: s.ID},
			State:     container.SandboxStateFromCRI(s.State),
			CreatedAt: s.CreatedAt,
			Attempt:   s.Metadata.Attempt,
		})
	}
	return p
}

// ConvertPodStatusToRunningPod is exported for the pod workers' terminating sync.
func ConvertPodStatusToRunningPod(podStatus *container.PodStatus) container.Pod {
	return runningPodFromStatus(podStatus)
}

// getContainerSpec finds a container of the pod by name in init and app containers.
func getContainerSpec(pod *v1.Pod, name string) (*v1.Container, containerKind, bool) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], kindApp, true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], kindInit, true
		}
	}
	return nil, kindApp, false
}

// isNotFound recognises a runtime's "not found" answer (cri.ErrNotFound, or an error that
// says so through a NotFound() method).
// logCallError logs a failed runtime call as an error, unless ctx ended: a call cut short
// by a cancelled sync or the daemon's shutdown is expected and goes to V(4).
func logCallError(ctx context.Context, err error, msg string, keysAndValues ...any) {
	logger := klog.FromContext(ctx)
	if ctx.Err() != nil {
		logger.V(4).Info(msg, append([]any{"err", err}, keysAndValues...)...)
		return
	}
	logger.Error(err, msg, keysAndValues...)
}

func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, cri.ErrNotFound) {
		return true
	}
	var nf interface{ NotFound() bool }
	if errors.As(err, &nf) {
		return nf.NotFound()
	}
	return false
}

// sortByCreatedDesc orders container statuses newest first (equal times: higher attempt).
func sortByCreatedDesc(s []*container.ContainerStatus) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].CreatedAt.Equal(s[j].CreatedAt) {
			return s[i].RestartCount > s[j].RestartCount
		}
		return s[i].CreatedAt.After(s[j].CreatedAt)
	})
}

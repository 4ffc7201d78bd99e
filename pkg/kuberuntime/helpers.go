package kuberuntime

import (
	"context"
	"errors"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

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

// getContainerSpec finds a container of the pod by name in app, init and ephemeral containers.
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
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c, kindEphemeral, true
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

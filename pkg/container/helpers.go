package container

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cri"
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
func PodSandboxChanged(pod *v1.Pod, podStatus *PodStatus) (bool, uint32, string) {
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
// the pod's restartPolicy (upstream kubecontainer.ShouldContainerBeRestarted). With the
// ContainerRestartRules gate on, the container's own restartPolicy and rules decide first
// (ContainerShouldRestart).
func ShouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, podStatus *PodStatus, gates RestartGates) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	status := podStatus.FindContainerStatusByName(c.Name)
	if status == nil {
		return true
	}
	switch status.State {
	case ContainerStateRunning:
		return false
	case ContainerStateUnknown, ContainerStateCreated:
		return true
	}
	if gates.ContainerRestartRules {
		return ContainerShouldRestart(c, &pod.Spec, int32(status.ExitCode), gates.RestartAllContainers)
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return status.ExitCode != 0
	}
	return true
}

// DefaultProbe fills the API server's defaults of a probe (timeoutSeconds 1, periodSeconds
// 10, successThreshold 1, failureThreshold 3, HTTP scheme): static pods get them from their
// manifest's defaulting, and the prober applies them to any probe it runs.
func DefaultProbe(p *v1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil && p.HTTPGet.Scheme == "" {
		p.HTTPGet.Scheme = v1.URISchemeHTTP
	}
}

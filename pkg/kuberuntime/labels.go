package kuberuntime

import (
	"fmt"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
)

// Annotations the manager puts on containers (the io.kubernetes.* ones as the kubelet's
// kuberuntime labels.go does).
const (
	// ContainerTypeAnnotation tells the runtime the container's role: init, sidecar (a
	// restartable init container) or app. The fake runtime reads it to script behaviour.
	ContainerTypeAnnotation      = behavior.ContainerTypeAnnotation
	ContainerRestartCountAnno    = "io.kubernetes.container.restartCount"
	PodTerminationGracePeriodAnn = "io.kubernetes.pod.terminationGracePeriod"
)

// Values of ContainerTypeAnnotation.
const (
	ContainerTypeInit    = behavior.ContainerTypeInit
	ContainerTypeSidecar = behavior.ContainerTypeSidecar
	ContainerTypeApp     = behavior.ContainerTypeApp
)

// FormatPod renders a pod the way kubelet messages do: name_namespace(uid).
func FormatPod(pod *v1.Pod) string {
	if pod == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// newPodLabels is the pod's labels plus the io.kubernetes.pod.* identity labels.
func newPodLabels(pod *v1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[cri.PodNameLabel] = pod.Name
	labels[cri.PodNamespaceLabel] = pod.Namespace
	labels[cri.PodUIDLabel] = string(pod.UID)
	return labels
}

// newPodAnnotations is the pod's annotations, as upstream's: the fake runtime scripts
// container behaviour from them. Not a copy: a pod from a source is never changed in place
// (an update is a new object), and the runtime only reads them, so a copy would be a
// second equal map for every pod of the node.
func newPodAnnotations(pod *v1.Pod) map[string]string {
	return pod.Annotations
}

func newContainerLabels(c *v1.Container, pod *v1.Pod) map[string]string {
	return map[string]string{
		cri.PodNameLabel:       pod.Name,
		cri.PodNamespaceLabel:  pod.Namespace,
		cri.PodUIDLabel:        string(pod.UID),
		cri.ContainerNameLabel: c.Name,
	}
}

func newContainerAnnotations(c *v1.Container, pod *v1.Pod, restartCount int, kind containerKind) map[string]string {
	a := map[string]string{
		ContainerRestartCountAnno: strconv.Itoa(restartCount),
		ContainerTypeAnnotation:   kind.annotation(),
		// Where the container writes its termination message and what falls back to the
		// log: read back from the status once it exited, as upstream.
		ContainerTerminationMessagePathAnn:   c.TerminationMessagePath,
		ContainerTerminationMessagePolicyAnn: string(c.TerminationMessagePolicy),
		view.ContainerHashAnnotation:         strconv.FormatUint(container.HashContainer(c), 16),
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[PodTerminationGracePeriodAnn] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	return a
}

// containerKind is the role of a container in its pod.
type containerKind int

const (
	kindApp containerKind = iota
	kindInit
	kindSidecar
	// kindEphemeral is a debugging container added to a running pod (kubectl debug): the
	// runtime runs it as an app container; it is never restarted.
	kindEphemeral
)

func (k containerKind) annotation() string {
	switch k {
	case kindInit:
		return ContainerTypeInit
	case kindSidecar:
		return ContainerTypeSidecar
	default:
		return ContainerTypeApp
	}
}

// metricLabel is the started_containers_total container_type label, as upstream.
func (k containerKind) metricLabel() string {
	switch k {
	case kindApp:
		return "container"
	case kindEphemeral:
		return "ephemeral_container"
	}
	return "init_container"
}

func podRef(pod *v1.Pod) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

package events

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ContainerRef is the object reference of container events (upstream GenerateContainerRef):
// the pod, with the container's field path.
func ContainerRef(pod *v1.Pod, name string) *v1.ObjectReference {
	path := fmt.Sprintf("spec.containers{%s}", name)
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			path = fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	return &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, FieldPath: path}
}

// Discard is a Recorder that records nothing.
type Discard struct{}

// Eventf implements Recorder.
func (Discard) Eventf(*v1.ObjectReference, string, string, string, ...interface{}) {}

var _ Recorder = Discard{}

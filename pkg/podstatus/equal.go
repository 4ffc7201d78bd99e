package podstatus

import (
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/quantity"
)

// statusEqual is apiequality.Semantic.DeepEqual(*a, *b): quantities by value, times by
// instant, nil and empty lists alike. Every sync of every pod asks it, so the fields a
// sync sets are compared here directly; Semantic's reflection visits each slice, map and
// pointer through a table it grows, which was an eighth of what an idle node of 10,000
// pods allocated. The fields only some pods have are left to Semantic, when set.
// TestStatusEqualIsSemantic changes every field of a full status one at a time, so a
// field the API gains fails it until it is compared here.
func statusEqual(a, b *v1.PodStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration &&
		a.Phase == b.Phase &&
		a.Message == b.Message &&
		a.Reason == b.Reason &&
		a.NominatedNodeName == b.NominatedNodeName &&
		a.HostIP == b.HostIP &&
		a.PodIP == b.PodIP &&
		a.QOSClass == b.QOSClass &&
		a.Resize == b.Resize &&
		timePtrEqual(a.StartTime, b.StartTime) &&
		sliceEqual(a.Conditions, b.Conditions, conditionEqual) &&
		sliceEqual(a.HostIPs, b.HostIPs, func(x, y *v1.HostIP) bool { return *x == *y }) &&
		sliceEqual(a.PodIPs, b.PodIPs, func(x, y *v1.PodIP) bool { return *x == *y }) &&
		sliceEqual(a.InitContainerStatuses, b.InitContainerStatuses, containerStatusEqual) &&
		sliceEqual(a.ContainerStatuses, b.ContainerStatuses, containerStatusEqual) &&
		sliceEqual(a.EphemeralContainerStatuses, b.EphemeralContainerStatuses, containerStatusEqual) &&
		quantity.ListsEqual(a.AllocatedResources, b.AllocatedResources) &&
		(a.Resources == b.Resources || semantic(a.Resources, b.Resources)) &&
		(len(a.ResourceClaimStatuses)+len(b.ResourceClaimStatuses) == 0 || semantic(a.ResourceClaimStatuses, b.ResourceClaimStatuses)) &&
		(a.ExtendedResourceClaimStatus == b.ExtendedResourceClaimStatus || semantic(a.ExtendedResourceClaimStatus, b.ExtendedResourceClaimStatus)) &&
		(len(a.NodeAllocatableResourceClaimStatuses)+len(b.NodeAllocatableResourceClaimStatuses) == 0 ||
			semantic(a.NodeAllocatableResourceClaimStatuses, b.NodeAllocatableResourceClaimStatuses)) &&
		(len(a.VolumeHealth)+len(b.VolumeHealth) == 0 || semantic(a.VolumeHealth, b.VolumeHealth))
}

func containerStatusEqual(a, b *v1.ContainerStatus) bool {
	return a.Name == b.Name &&
		a.Ready == b.Ready &&
		a.RestartCount == b.RestartCount &&
		a.Image == b.Image &&
		a.ImageID == b.ImageID &&
		a.ContainerID == b.ContainerID &&
		containerStateEqual(&a.State, &b.State) &&
		containerStateEqual(&a.LastTerminationState, &b.LastTerminationState) &&
		ptrEqual(a.Started, b.Started) &&
		ptrEqual(a.StopSignal, b.StopSignal) &&
		quantity.ListsEqual(a.AllocatedResources, b.AllocatedResources) &&
		(a.Resources == b.Resources || semantic(a.Resources, b.Resources)) &&
		(a.User == b.User || semantic(a.User, b.User)) &&
		sliceEqual(a.VolumeMounts, b.VolumeMounts, func(x, y *v1.VolumeMountStatus) bool {
			return x.Name == y.Name && x.MountPath == y.MountPath && x.ReadOnly == y.ReadOnly && ptrEqual(x.RecursiveReadOnly, y.RecursiveReadOnly) &&
				(x.VolumeStatus == y.VolumeStatus || x.VolumeStatus != nil && y.VolumeStatus != nil && ptrEqual(x.VolumeStatus.Image, y.VolumeStatus.Image))
		}) &&
		(len(a.AllocatedResourcesStatus)+len(b.AllocatedResourcesStatus) == 0 || semantic(a.AllocatedResourcesStatus, b.AllocatedResourcesStatus))
}

func containerStateEqual(a, b *v1.ContainerState) bool {
	if (a.Waiting == nil) != (b.Waiting == nil) || (a.Running == nil) != (b.Running == nil) || (a.Terminated == nil) != (b.Terminated == nil) {
		return false
	}
	if a.Waiting != nil && *a.Waiting != *b.Waiting {
		return false
	}
	if a.Running != nil && !timeEqual(a.Running.StartedAt, b.Running.StartedAt) {
		return false
	}
	if x, y := a.Terminated, b.Terminated; x != nil {
		return x.ExitCode == y.ExitCode && x.Signal == y.Signal && x.Reason == y.Reason && x.Message == y.Message &&
			x.ContainerID == y.ContainerID && timeEqual(x.StartedAt, y.StartedAt) && timeEqual(x.FinishedAt, y.FinishedAt)
	}
	return true
}

func conditionEqual(a, b *v1.PodCondition) bool {
	return a.Type == b.Type && a.ObservedGeneration == b.ObservedGeneration && a.Status == b.Status &&
		a.Reason == b.Reason && a.Message == b.Message &&
		timeEqual(a.LastProbeTime, b.LastProbeTime) && timeEqual(a.LastTransitionTime, b.LastTransitionTime)
}

// timeEqual is Semantic's equality of times: the same instant.
func timeEqual(a, b metav1.Time) bool { return a.Equal(&b) }

func timePtrEqual(a, b *metav1.Time) bool {
	return a == b || (a != nil && b != nil && timeEqual(*a, *b))
}

func ptrEqual[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// sliceEqual compares element by element; nil and empty are equal, as in Semantic.
func sliceEqual[T any](a, b []T, eq func(x, y *T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !eq(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

func semantic(a, b any) bool { return apiequality.Semantic.DeepEqual(a, b) }

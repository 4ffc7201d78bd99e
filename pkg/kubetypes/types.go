package kubetypes

import (
	v1 "k8s.io/api/core/v1"
)

// Annotations the kubelet's file source sets on static pods.
const (
	ConfigSourceAnnotationKey    = "kubernetes.io/config.source"
	ConfigMirrorAnnotationKey    = "kubernetes.io/config.mirror"
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	ConfigHashAnnotationKey      = "kubernetes.io/config.hash"
)

// Pod sources.
const (
	FileSource = "file"
	// ApiserverSource is the API server's pods (cluster mode).
	ApiserverSource = "api"
	AllSource       = "*"
)

// PodOperation says what a PodUpdate means.
type PodOperation int

const (
	// SET is a full snapshot of one source's pods (not used by the sync loop).
	SET PodOperation = iota
	// ADD: pods new to the kubelet.
	ADD
	// DELETE: pods gracefully deleted (deletion timestamp set); handled as an update.
	DELETE
	// REMOVE: pods gone from their source.
	REMOVE
	// UPDATE: pods whose spec, labels or annotations changed.
	UPDATE
	// RECONCILE: pods whose status alone changed.
	RECONCILE
)

func (op PodOperation) String() string {
	switch op {
	case SET:
		return "SET"
	case ADD:
		return "ADD"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case UPDATE:
		return "UPDATE"
	case RECONCILE:
		return "RECONCILE"
	default:
		return "UNKNOWN"
	}
}

// PodUpdate is one message on the config channel.
type PodUpdate struct {
	Pods   []*v1.Pod
	Op     PodOperation
	Source string
}

// SyncPodType says why a pod worker is syncing a pod.
type SyncPodType int

const (
	SyncPodSync SyncPodType = iota
	SyncPodUpdate
	SyncPodCreate
	SyncPodKill
)

func (t SyncPodType) String() string {
	switch t {
	case SyncPodCreate:
		return "create"
	case SyncPodUpdate:
		return "update"
	case SyncPodSync:
		return "sync"
	case SyncPodKill:
		return "kill"
	default:
		return "unknown"
	}
}

// IsStaticPod reports whether pod came from a source other than the API server (a
// manifest file): the kubelet owns its lifecycle and no controller replaces it.
func IsStaticPod(pod *v1.Pod) bool {
	src, ok := pod.Annotations[ConfigSourceAnnotationKey]
	return ok && src != ApiserverSource
}

// SystemCriticalPriority is the lowest priority of a critical pod (system-cluster-critical).
const SystemCriticalPriority int32 = 2000000000

// IsCriticalPod reports whether the kubelet must never evict pod: a static pod, a mirror
// pod, or a pod of priority SystemCriticalPriority or more (upstream IsCriticalPod).
func IsCriticalPod(pod *v1.Pod) bool {
	if IsStaticPod(pod) {
		return true
	}
	if _, ok := pod.Annotations[ConfigMirrorAnnotationKey]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

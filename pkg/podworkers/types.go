package podworkers

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// KillPodOptions are the options of a kill update.
type KillPodOptions struct {
	// PodTerminationGracePeriodSecondsOverride asks for a shorter grace period; a grace
	// period can only shrink once termination started.
	PodTerminationGracePeriodSecondsOverride *int64
	// Evict marks a kubelet eviction: the pod's content may be removed once it stopped.
	Evict bool
	// PodStatusFunc adjusts the status written when termination starts (phase, reason).
	PodStatusFunc func(*v1.PodStatus)
	// Completed is completed once the pod's containers are stopped (or at once if the pod
	// already was, or when the kill is not valid for the pod). Optional.
	Completed *task.Op
}

// UpdatePodOptions is one update handed to the pod workers.
type UpdatePodOptions struct {
	// UpdateType says why: create, update, sync or kill.
	UpdateType kubetypes.SyncPodType
	// StartTime is when the update was produced; pod_worker_duration_seconds measures from
	// it to the end of the sync that realized it. Zero means "now".
	StartTime time.Time
	// Pod is the desired pod. Required unless RunningPod is set.
	Pod *v1.Pod
	// RunningPod is a runtime pod no source knows (an orphan); only a kill is valid for it.
	RunningPod *container.Pod
	// KillPodOptions tunes a kill (valid only when the pod is or becomes terminating).
	KillPodOptions *KillPodOptions
}

// PodWorkerState is where a pod is in its lifecycle.
type PodWorkerState int

const (
	// SyncPodState: the pod should be running; SyncPod is called.
	SyncPodState PodWorkerState = iota
	// TerminatingPodState: the pod is being stopped; SyncTerminatingPod is called until it
	// succeeds. No new container starts from now on.
	TerminatingPodState
	// TerminatedPodState: every container is stopped; SyncTerminatedPod finishes the pod.
	TerminatedPodState
)

func (s PodWorkerState) String() string {
	switch s {
	case SyncPodState:
		return "sync"
	case TerminatingPodState:
		return "terminating"
	case TerminatedPodState:
		return "terminated"
	default:
		return fmt.Sprintf("PodWorkerState(%d)", int(s))
	}
}

// PodWorkerSync summarizes one known worker for housekeeping.
type PodWorkerSync struct {
	State PodWorkerState
	// Orphan: the pod is not in the desired set passed to SyncKnownPods.
	Orphan bool
	// HasConfig: the worker has a pod spec (not only a runtime pod).
	HasConfig bool
	// Static: the pod came from a static source (file).
	Static bool
}

// SyncHandler is what a pod worker calls; the kubelet wiring implements it (Syncer is the
// standard implementation). Methods are called for many pods at once but never twice at
// once for one pod.
type SyncHandler interface {
	// SyncPod starts and restarts the pod's containers. isTerminal=true ends the pod's
	// natural life (all containers done and none restarts). An error retries after the
	// back-off period; a *BackOffError retries when its back-off ends.
	SyncPod(ctx context.Context, updateType kubetypes.SyncPodType, pod *v1.Pod, podStatus *container.PodStatus) (isTerminal bool, err error)
	// SyncTerminatingPod stops every container within gracePeriod seconds (never nil) and
	// writes the pod's final status; it is retried until it returns nil.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error
	// SyncTerminatingRuntimePod stops the containers of an orphaned runtime pod.
	SyncTerminatingRuntimePod(ctx context.Context, runningPod *container.Pod) error
	// SyncTerminatedPod releases what must be released before the pod is forgotten.
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) error
}

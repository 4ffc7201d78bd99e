package container

import (
	"context"
	"errors"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// RuntimeType is the Type of every ContainerID the simulator hands out.
const RuntimeType = "fake"

// ContainerID is a runtime-qualified container (or sandbox) id, printed as "type://id".
type ContainerID struct {
	Type string
	ID   string
}

func (c ContainerID) String() string { return c.Type + "://" + c.ID }

// IsEmpty reports whether the id is unset.
func (c ContainerID) IsEmpty() bool { return c.ID == "" }

// State is the kubelet's coarse container state, as kubecontainer.State.
type State string

const (
	ContainerStateCreated State = "created"
	ContainerStateRunning State = "running"
	ContainerStateExited  State = "exited"
	// ContainerStateUnknown covers runtime states the kubelet cannot interpret.
	ContainerStateUnknown State = "unknown"
)

// StateFromCRI maps a CRI container state to the kubelet's.
func StateFromCRI(s cri.ContainerState) State {
	switch s {
	case cri.ContainerCreated:
		return ContainerStateCreated
	case cri.ContainerRunning:
		return ContainerStateRunning
	case cri.ContainerExited:
		return ContainerStateExited
	default:
		return ContainerStateUnknown
	}
}

// SandboxStateFromCRI maps a sandbox state to a container state: a ready sandbox counts as running.
func SandboxStateFromCRI(s cri.PodSandboxState) State {
	if s == cri.SandboxReady {
		return ContainerStateRunning
	}
	return ContainerStateExited
}

// Container is one container (or sandbox) of a listed pod.
type Container struct {
	ID        ContainerID
	Name      string
	Image     string
	ImageID   string
	State     State
	CreatedAt int64 // unix nanoseconds
	Attempt   uint32
}

// Pod is a pod as the runtime lists it: its sandboxes and containers.
type Pod struct {
	ID         types.UID
	Name       string
	Namespace  string
	CreatedAt  int64 // unix nanoseconds of the newest sandbox
	Containers []*Container
	Sandboxes  []*Container
}

// ToAPIPod is the synthetic API pod of a runtime pod no source knows (an orphan): its
// identity and container names, as upstream's kubecontainer.Pod.ToAPIPod.
func (p *Pod) ToAPIPod() *v1.Pod {
	pod := &v1.Pod{}
	pod.UID, pod.Name, pod.Namespace = p.ID, p.Name, p.Namespace
	for _, c := range p.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
	}
	return pod
}

// FindContainerByID returns the container or sandbox with the id, or nil.
func (p *Pod) FindContainerByID(id ContainerID) *Container {
	for _, c := range p.Containers {
		if c.ID == id {
			return c
		}
	}
	for _, c := range p.Sandboxes {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// ContainerStatus is the detailed status of one container.
type ContainerStatus struct {
	ID   ContainerID
	Name string
	// PodSandboxID is the sandbox the container runs in (the CRI's listing has it): a
	// container of the pod's active sandbox is one of upstream's ActiveContainerStatuses.
	PodSandboxID string
	State        State
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	Image        string
	ImageID      string
	Reason       string
	Message      string
	RestartCount int // the CRI attempt number
	// Hash is the hash of the container spec it was created from (HashContainer), read
	// back from its annotation: a spec that no longer hashes the same restarts it. 0: none.
	Hash uint64
	// Resources are the container's CPU and memory as the runtime reports them applied
	// (CRI ContainerStatus.Resources: the runtime's, read-only), nil when it reports none:
	// what an in-place resize has actuated. ResourcesFromCRI converts them.
	Resources *cri.ContainerResources
	// User is who the container's process runs as, as the runtime reports it (CRI
	// ContainerStatus.User: the runtime's, shared and read-only); nil when it reports none.
	User *cri.ContainerUser
}

// ContainerResources are a container's applied resources, converted back from its cgroup
// values as upstream's kubecontainer.ContainerResources: nil fields are unknown.
type ContainerResources struct {
	CPURequest, CPULimit, MemoryLimit *resource.Quantity
}

// ResourcesFromCRI converts a container's applied CPU and memory back to quantities, as
// upstream's toKubeContainerResources: the request from the CPU shares (rounded up), the
// limit from the CFS quota, the memory limit as it is; nil when none is set. Converted
// when a status is made, not kept: 20,000 containers' quantities would be 12 MB.
func ResourcesFromCRI(r *cri.ContainerResources) *ContainerResources {
	if r == nil {
		return nil
	}
	var out ContainerResources
	if r.CPUPeriod > 0 && r.CPUQuota > 0 {
		if milli := r.CPUQuota * 1000 / r.CPUPeriod; milli > 0 {
			out.CPULimit = resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if r.CPUShares >= 2 {
		out.CPURequest = resource.NewMilliQuantity((r.CPUShares*1000+1023)/1024, resource.DecimalSI)
	}
	if r.MemoryLimitInBytes > 0 {
		out.MemoryLimit = resource.NewQuantity(r.MemoryLimitInBytes, resource.BinarySI)
	}
	if out.CPULimit == nil && out.CPURequest == nil && out.MemoryLimit == nil {
		return nil
	}
	return &out
}

// PodStatus is the runtime's view of one pod, as stored in the status cache.
type PodStatus struct {
	ID        types.UID
	Name      string
	Namespace string
	IPs       []string
	// ContainerStatuses are sorted newest first (by CreatedAt), like the kubelet's.
	ContainerStatuses []*ContainerStatus
	// SandboxStatuses are sorted newest first.
	SandboxStatuses []*cri.PodSandboxStatus
	// TimeStamp is when the status was read (EventedPLEG: the event time).
	TimeStamp time.Time
}

// ActiveSandboxID is the pod's active sandbox: the newest, if it is ready (upstream's
// getPodStatus), else "".
func (s *PodStatus) ActiveSandboxID() string {
	if s == nil || len(s.SandboxStatuses) == 0 || s.SandboxStatuses[0].State != cri.SandboxReady {
		return ""
	}
	return s.SandboxStatuses[0].ID
}

// HasAnyActiveRegularContainerStarted says whether a regular (not init) container of spec
// is among the containers of the pod's active sandbox, in any state: upstream's helper of
// the same name, which getPhase asks whether the pod has initialized (a sidecar restarting
// after that does not put the pod back to Pending). Containers of an older sandbox do not
// count: after a sandbox change the pod initializes again.
func HasAnyActiveRegularContainerStarted(spec *v1.PodSpec, s *PodStatus) bool {
	active := s.ActiveSandboxID()
	if active == "" {
		return false
	}
	for _, cs := range s.ContainerStatuses {
		if cs.PodSandboxID != active {
			continue
		}
		for i := range spec.Containers {
			if spec.Containers[i].Name == cs.Name {
				return true
			}
		}
	}
	return false
}

// FindContainerStatusByName returns the newest status of the named container, or nil.
func (s *PodStatus) FindContainerStatusByName(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// PodLister lists the pods the runtime knows (the PLEG's input). all=false lists only pods
// with a running container or ready sandbox.
type PodLister interface {
	GetPods(ctx context.Context, all bool) ([]*Pod, error)
}

// ErrPodNotFound is GetPod's error when the runtime has no sandbox or container of the pod.
var ErrPodNotFound = errors.New("pod not found")

// PodGetter lists one pod's sandboxes and containers (the PLEG's per-pod relist, upstream's
// runtime GetPod). A pod the runtime has nothing of is ErrPodNotFound.
type PodGetter interface {
	GetPod(ctx context.Context, uid types.UID) (*Pod, error)
}

// PodStatusGetter reads one pod's detailed status from the runtime.
type PodStatusGetter interface {
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error)
}

// Cache is the pod status cache the PLEG writes and pod workers read. Safe for concurrent use.
type Cache interface {
	// Get returns the cached status (an empty status for an unknown pod) and the error recorded with it.
	Get(uid types.UID) (*PodStatus, error)
	// Set stores status and err read at timestamp. It reports whether it stored anything: with
	// EventedPLEG on, a write older than the cached one is dropped.
	Set(uid types.UID, status *PodStatus, err error, timestamp time.Time) bool
	// NotifyWhenNewer reports true when the cache already holds data for uid newer than
	// minTime (or the global timestamp is past it). Otherwise it returns false and calls
	// notify once, outside the cache's lock, when a Set or UpdateTime reaches minTime: the
	// pod workers' way to wait for fresh data without blocking.
	NotifyWhenNewer(uid types.UID, minTime time.Time, notify func()) bool
	// SetObservedTime records that a per-pod relist confirmed the cached status at timestamp
	// without changing it, and wakes the pod's waiters that it satisfies.
	SetObservedTime(uid types.UID, timestamp time.Time)
	// ClearObservedTime forgets the pod's observed time: a relist of the pod was just asked
	// for because its runtime state changed, so the last observation is stale.
	ClearObservedTime(uid types.UID)
	Delete(uid types.UID)
	// UpdateTime bumps the global timestamp: every pod's data is at least this fresh.
	UpdateTime(t time.Time)
}

// ParseContainerID parses "type://id" as it appears in a pod status; a string without a type
// is all id.
func ParseContainerID(s string) ContainerID {
	if typ, id, ok := strings.Cut(s, "://"); ok {
		return ContainerID{Type: typ, ID: id}
	}
	return ContainerID{ID: s}
}

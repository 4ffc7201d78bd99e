package cri

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is wrapped by errors for a sandbox, container or image the runtime does not
// know (gRPC NotFound in a real CRI): test with errors.Is. Callers that list and then read
// status skip such objects, since they were removed in between.
var ErrNotFound = errors.New("not found")

// ErrDeadlineExceeded is the error of a call still pending at its deadline (the kubelet's
// runtimeRequestTimeout), with the text a gRPC client reports; errors.Is matches it with
// context.DeadlineExceeded too.
var ErrDeadlineExceeded error = deadlineExceeded{}

type deadlineExceeded struct{}

func (deadlineExceeded) Error() string {
	return "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
}

func (deadlineExceeded) Is(target error) bool { return target == context.DeadlineExceeded }

// MethodError names the CRI call that failed inside a call that stands for several (the fake
// runtime's GetPods is ListPodSandbox then ListContainers): the runtime operation metrics
// count the error against it. Its text is Err's.
type MethodError struct {
	Method string // the CRI method, as RuntimeService names it
	Err    error
}

func (e *MethodError) Error() string { return e.Err.Error() }
func (e *MethodError) Unwrap() error { return e.Err }

// Labels the kubelet puts on sandboxes and containers so that a runtime listing can be mapped
// back to pods (the same keys as the real kubelet's kuberuntime labels).
const (
	PodNameLabel       = "io.kubernetes.pod.name"
	PodNamespaceLabel  = "io.kubernetes.pod.namespace"
	PodUIDLabel        = "io.kubernetes.pod.uid"
	ContainerNameLabel = "io.kubernetes.container.name"
)

// PodSandboxState mirrors runtime.v1.PodSandboxState.
type PodSandboxState int32

const (
	SandboxReady    PodSandboxState = 0
	SandboxNotReady PodSandboxState = 1
)

func (s PodSandboxState) String() string {
	if s == SandboxReady {
		return "SANDBOX_READY"
	}
	return "SANDBOX_NOTREADY"
}

// ContainerState mirrors runtime.v1.ContainerState.
type ContainerState int32

const (
	ContainerCreated ContainerState = 0
	ContainerRunning ContainerState = 1
	ContainerExited  ContainerState = 2
	ContainerUnknown ContainerState = 3
)

func (s ContainerState) String() string {
	switch s {
	case ContainerCreated:
		return "CONTAINER_CREATED"
	case ContainerRunning:
		return "CONTAINER_RUNNING"
	case ContainerExited:
		return "CONTAINER_EXITED"
	default:
		return "CONTAINER_UNKNOWN"
	}
}

// PodSandboxMetadata identifies the pod a sandbox belongs to.
type PodSandboxMetadata struct {
	Name      string
	UID       string
	Namespace string
	Attempt   uint32
}

// PodSandboxConfig is what RunPodSandbox is asked to create.
type PodSandboxConfig struct {
	Metadata    PodSandboxMetadata
	Hostname    string
	Labels      map[string]string
	Annotations map[string]string
	// Sysctls are the pod's namespaced sysctls, dotted (LinuxPodSandboxConfig.Sysctls):
	// its containers read them under /proc/sys.
	Sysctls map[string]string
	// CgroupParent is the pod's cgroup the kubelet made, its containers' cgroups are
	// made under (LinuxPodSandboxConfig.CgroupParent): "/kubepods/burstable/pod<uid>".
	CgroupParent string
	// UserNamespace is the pod's user namespace (NamespaceOption.UsernsOptions), which its
	// containers share; nil: the node's (NamespaceMode NODE).
	UserNamespace *UserNamespace
	// RuntimeHandler is the handler to run the sandbox with (RunPodSandboxRequest's
	// runtime_handler, from the pod's RuntimeClass): "" is the runtime's default.
	RuntimeHandler string
}

// NamespaceMode mirrors runtime.v1.NamespaceMode.
type NamespaceMode int32

const (
	NamespaceModePod       NamespaceMode = 0
	NamespaceModeContainer NamespaceMode = 1
	NamespaceModeNode      NamespaceMode = 2
	NamespaceModeTarget    NamespaceMode = 3
)

// UserNamespace mirrors runtime.v1.UserNamespace: with Mode POD, the pod's own, whose IDs
// map to the host's as UIDs and GIDs say.
type UserNamespace struct {
	Mode       NamespaceMode
	UIDs, GIDs []IDMapping
}

// IDMapping maps Length IDs from ContainerID in the namespace to HostID on the node.
type IDMapping struct {
	HostID, ContainerID, Length uint32
}

// PodSandbox is one entry of ListPodSandbox. Times are unix nanoseconds, as in CRI.
// Labels and Annotations are shared with the runtime and must be treated as read-only.
type PodSandbox struct {
	ID          string
	Metadata    PodSandboxMetadata
	State       PodSandboxState
	CreatedAt   int64
	Labels      map[string]string
	Annotations map[string]string
	// RuntimeHandler is the handler the sandbox runs with ("" the default).
	RuntimeHandler string
}

// PodSandboxStatus is the answer of PodSandboxStatus.
type PodSandboxStatus struct {
	ID          string
	Metadata    PodSandboxMetadata
	State       PodSandboxState
	CreatedAt   int64
	IP          string
	Labels      map[string]string
	Annotations map[string]string
}

// PodSandboxFilter narrows ListPodSandbox; zero fields match everything.
type PodSandboxFilter struct {
	ID            string
	State         *PodSandboxState
	LabelSelector map[string]string
}

// ImageSpec names an image. Annotations are optional hints, as in CRI; the kubelet sets
// ContainerNameLabel there when pulling for a container, so that a fake runtime applies that
// container's scripted pull behaviour. A nil map is fine.
type ImageSpec struct {
	Image       string
	Annotations map[string]string
	// Auth are the credentials of a pull (CRI's PullImageRequest.auth, kept here beside the
	// image): the kubelet's from the pod's imagePullSecrets for the image's registry; nil:
	// an anonymous pull.
	Auth *AuthConfig
}

// AuthConfig is a registry credential (CRI's AuthConfig).
type AuthConfig struct {
	Username, Password string
	// Auth is "username:password" in base64, as a docker config holds it.
	Auth          string
	ServerAddress string
}

// ContainerMetadata identifies a container inside its sandbox; Attempt counts restarts.
type ContainerMetadata struct {
	Name    string
	Attempt uint32
}

// ContainerConfig is what CreateContainer is asked to create.
type ContainerConfig struct {
	Metadata    ContainerMetadata
	Image       ImageSpec
	Labels      map[string]string
	Annotations map[string]string
	// Resources are the container's limits (CRI's LinuxContainerResources, the parts the
	// simulator uses); nil without limits.
	Resources *ContainerResources
	// Command and Args are the container's, with $(VAR) references expanded by the kubelet;
	// the runtime runs Command (else the image's entrypoint) with Args (else, when Command
	// is empty too, the image's cmd), as CRI's ContainerConfig.
	Command []string
	Args    []string
	// WorkingDir is the process's working directory ("" : the image's).
	WorkingDir string
	// Envs is the container's environment, resolved by the kubelet, in order.
	Envs []KeyValue
	// Mounts bind paths of the node's filesystem (the simulated disk the kubelet writes
	// volumes to) into the container, as CRI's Mount.
	Mounts []Mount
	// ImageMounts are the container's image volumes: CRI's Mounts with an image (the
	// runtime mounts the image's filesystem, read-only, and binds it). They are kept apart
	// from Mounts so that a Mount, which a runtime keeps for each mount of each container,
	// stays three words; the runtime orders both together, parents first.
	ImageMounts []ImageMount
	// Stdin, StdinOnce and TTY are the container's (kubectl run -i / attach).
	Stdin, StdinOnce, TTY bool
	// Security is who the process runs as and what it may write (LinuxContainerSecurityContext).
	Security *SecurityContext
}

// Mount binds HostPath of the node's filesystem at ContainerPath (CRI's Mount). A missing
// HostPath is created as a directory, as the kubelet's host directories are.
type Mount struct {
	ContainerPath string
	HostPath      string
	Readonly      bool
}

// ImageMount mounts the filesystem of an image already on the node, or of a directory in it
// (SubPath, which must exist and be a directory), read-only at ContainerPath: CRI's Mount with
// image and image_sub_path set and host_path empty (the runtime fills it with where it
// mounted the image), which is always read-only (containerd refuses it otherwise).
type ImageMount struct {
	ContainerPath string
	// Image names the image by a tag or id the runtime knows, as the kubelet pulled it.
	Image   ImageSpec
	SubPath string
}

// ErrImageVolumeMountFailed is the CRI's error for an image volume the runtime could not
// mount (k8s.io/cri-api's errors.ErrImageVolumeMountFailed): its text begins the error.
var ErrImageVolumeMountFailed = errors.New("ImageVolumeMountFailed")

// ImageVolumeAnnotation names, in a pull's ImageSpec.Annotations, the pod volume the image is
// pulled for (an image volume) rather than a container (ContainerNameLabel): a fake runtime
// applies no container's scripted pull behaviour to it.
const ImageVolumeAnnotation = "minikubelet.io/image-volume"

// SecurityContext is the part of CRI's LinuxContainerSecurityContext the simulator uses.
type SecurityContext struct {
	// RunAsUser and RunAsGroup are the process's ids (nil: the image's user, else root).
	RunAsUser  *int64
	RunAsGroup *int64
	// SupplementalGroups are the pod's fsGroup and supplementalGroups, which the process
	// gets whatever the policy.
	SupplementalGroups []int64
	ReadonlyRootfs     bool
	Privileged         bool
	// NoNewPrivs is no_new_privs (allowPrivilegeEscalation: false): a setuid executable
	// does not raise the process's effective user.
	NoNewPrivs bool
	// SupplementalGroupsPolicy says whether the groups the image's /etc/group gives the
	// user are added (Merge, the default) or not (Strict).
	SupplementalGroupsPolicy SupplementalGroupsPolicy
	// MaskedPaths are hidden from the process (a file reads as /dev/null, a directory as an
	// empty read-only tmpfs) and ReadonlyPaths made read-only: the kubelet's defaults, or
	// empty lists with procMount: Unmasked. nil: the runtime's defaults. A privileged
	// container gets neither. Shared by the kubelet's requests: read only.
	MaskedPaths   []string
	ReadonlyPaths []string
}

// SupplementalGroupsPolicy mirrors runtime.v1.SupplementalGroupsPolicy.
type SupplementalGroupsPolicy uint8

const (
	// SupplementalGroupsMerge: the primary group, the groups of the image's /etc/group that
	// list the user, and the kubelet's.
	SupplementalGroupsMerge SupplementalGroupsPolicy = 0
	// SupplementalGroupsStrict: the primary group and the kubelet's only.
	SupplementalGroupsStrict SupplementalGroupsPolicy = 1
)

func (p SupplementalGroupsPolicy) String() string {
	if p == SupplementalGroupsStrict {
		return "Strict"
	}
	return "Merge"
}

// ContainerUser is who a container's first process runs as, as the runtime resolved it
// when the container was created (CRI's ContainerUser.linux): its ids and every group it
// has, the primary one included. Runtimes share one value between equal users: read only.
type ContainerUser struct {
	UID, GID           int64
	SupplementalGroups []int64
}

// KeyValue is an environment variable (CRI's KeyValue).
type KeyValue struct{ Key, Value string }

// ContainerResources is the part of CRI's LinuxContainerResources the simulator uses.
type ContainerResources struct {
	// MemoryLimitInBytes is the memory limit (0: none). A container whose use reaches it is
	// OOM-killed.
	MemoryLimitInBytes int64
	// MemoryRequestInBytes is the container's memory request. Not in the CRI: the simulator's
	// runtime takes it as the memory use of a container whose behaviour says none.
	MemoryRequestInBytes int64
	// CPUPeriod and CPUQuota are the CFS bandwidth of a CPU limit, in microseconds (0: no
	// limit): the container may use CPUQuota of every CPUPeriod, and is throttled for the
	// rest of a period once it has. CPUShares is the CPU request's weight (2 when none).
	CPUPeriod, CPUQuota, CPUShares int64
	// OomScoreAdj is the container's oom_score_adj (by its pod's QoS class): whom the OOM
	// killer chooses first when the node's pods fill their memory.
	OomScoreAdj int64
}

// ContainerStats is a container's resource use at Timestamp (unix nanoseconds), the fields
// of CRI's ContainerStats the kubelet's summary and resource metrics read.
type ContainerStats struct {
	ID           string
	PodSandboxID string
	Metadata     ContainerMetadata
	Labels       map[string]string
	Timestamp    int64
	// UsageCoreNanoSeconds is the CPU used since the container started, cumulative.
	UsageCoreNanoSeconds uint64
	// UsageNanoCores is the CPU in use now.
	UsageNanoCores uint64
	// WorkingSetBytes is the memory in use now.
	WorkingSetBytes uint64
	// WritableLayerBytes is the container's writable layer (CRI's WritableLayer.UsedBytes).
	WritableLayerBytes uint64
	// LogBytes is the size of the container's log files (the kubelet measures them itself).
	LogBytes uint64

	// What cAdvisor reads from the container's cgroup, not in the CRI: its image, start,
	// limits and shares as set, and its CFS periods (all, and throttled ones) so far.
	Image                          string
	StartedAt                      int64 // unix nanoseconds
	MemoryLimitBytes               int64 // 0: none
	CPUPeriod, CPUQuota, CPUShares int64
	CFSPeriods, CFSThrottled       uint64
	// CPUPressure is the cgroup's cpu.pressure (nil: no stall ever, all zeros); its memory
	// and I/O never stall in the usage model.
	CPUPressure *PSI
}

// PSI is a cgroup's pressure stall information for one resource, as its cpu.pressure,
// memory.pressure or io.pressure reads (CRI's PsiStats): the time some (Some) or all (Full)
// of its runnable tasks waited for the resource, cumulative in microseconds, and the share
// of the last 10, 60 and 300 seconds they did, in percent.
type PSI struct {
	Some, Full PSIData
}

// PSIData is one line of a pressure file.
type PSIData struct {
	Total                uint64  // microseconds
	Avg10, Avg60, Avg300 float64 // percent
}

// PodSandboxStats is a sandbox's resource use at Timestamp (CRI's PodSandboxStats): the sum
// over its running containers now, and the CPU all its containers used since it was created
// (the pod cgroup's counter, which a container restart does not reset).
type PodSandboxStats struct {
	ID                   string
	Metadata             PodSandboxMetadata
	Timestamp            int64
	UsageCoreNanoSeconds uint64
	UsageNanoCores       uint64
	WorkingSetBytes      uint64
	// Processes is how many processes its containers' programs run now (the pod's pids
	// cgroup's pids.current; CRI's ProcessUsage).
	Processes uint64
	// CPUPressure is the pod cgroup's cpu.pressure (nil: no stall ever).
	CPUPressure *PSI
}

// ContainerStatsFilter narrows ListContainerStats; zero fields match everything.
type ContainerStatsFilter struct {
	ID           string
	PodSandboxID string
}

// Container is one entry of ListContainers. Labels and Annotations are read-only.
type Container struct {
	ID           string
	PodSandboxID string
	Metadata     ContainerMetadata
	Image        ImageSpec
	ImageRef     string
	State        ContainerState
	CreatedAt    int64
	Labels       map[string]string
	Annotations  map[string]string
}

// ContainerFilter narrows ListContainers; zero fields match everything.
type ContainerFilter struct {
	ID            string
	PodSandboxID  string
	State         *ContainerState
	LabelSelector map[string]string
}

// ContainerStatus is the answer of ContainerStatus. Times are unix nanoseconds (0: not yet).
type ContainerStatus struct {
	ID           string
	PodSandboxID string
	Metadata     ContainerMetadata
	State        ContainerState
	CreatedAt    int64
	StartedAt    int64
	FinishedAt   int64
	ExitCode     int32
	Image        ImageSpec
	ImageRef     string
	Reason       string
	Message      string
	Labels       map[string]string
	Annotations  map[string]string
	// Mounts are the container's mounts, as created (the kubelet finds the host file of
	// the termination message among them), its image volumes among them, bound from where
	// the runtime mounted their images.
	Mounts []Mount
	// ImageMounts are its image volumes as created, each Image the id of the image mounted
	// (the kubelet keeps those images from its image garbage collection). Nil: none.
	ImageMounts []ImageMount
	// Resources are the container's Linux resources in force (CRI's
	// ContainerStatus.Resources.Linux: its cgroup's CPU and memory settings, as created
	// or last updated); nil when the runtime does not know them.
	Resources *ContainerResources
	// User is who its process runs as (CRI's ContainerStatus.user); nil from a runtime
	// that does not report it (one without the SupplementalGroupsPolicy feature).
	User *ContainerUser
}

// Runtime condition types reported by Status.
const (
	RuntimeReady = "RuntimeReady"
	NetworkReady = "NetworkReady"
)

// RuntimeCondition is one condition of the runtime's Status.
type RuntimeCondition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// RuntimeStatus is the answer of Status.
type RuntimeStatus struct {
	Conditions []RuntimeCondition
	// Handlers are the runtime's handlers (its runtime classes; "" is the default) and
	// what each supports; none from a runtime that reports none.
	Handlers []RuntimeHandler
	// Features are what the runtime supports beyond the basics (CRI's RuntimeFeatures);
	// nil from a runtime that reports none.
	Features *RuntimeFeatures
}

// RuntimeHandler mirrors runtime.v1.RuntimeHandler and its features.
type RuntimeHandler struct {
	Name                    string
	RecursiveReadOnlyMounts bool
	UserNamespaces          bool
}

// RuntimeFeatures mirrors runtime.v1.RuntimeFeatures.
type RuntimeFeatures struct {
	// SupplementalGroupsPolicy: the runtime honours SupplementalGroupsStrict and reports
	// ContainerStatus.User.
	SupplementalGroupsPolicy bool
}

// Condition returns the condition of the given type, or nil.
func (s *RuntimeStatus) Condition(t string) *RuntimeCondition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// ContainerEventType mirrors runtime.v1.ContainerEventType.
type ContainerEventType int32

const (
	ContainerCreatedEvent ContainerEventType = 0
	ContainerStartedEvent ContainerEventType = 1
	ContainerStoppedEvent ContainerEventType = 2
	ContainerDeletedEvent ContainerEventType = 3
)

func (t ContainerEventType) String() string {
	switch t {
	case ContainerCreatedEvent:
		return "CONTAINER_CREATED_EVENT"
	case ContainerStartedEvent:
		return "CONTAINER_STARTED_EVENT"
	case ContainerStoppedEvent:
		return "CONTAINER_STOPPED_EVENT"
	default:
		return "CONTAINER_DELETED_EVENT"
	}
}

// ContainerEventResponse is one message of the GetContainerEvents stream. CreatedAt is the
// event time in unix nanoseconds; the statuses are the state right after the event.
type ContainerEventResponse struct {
	ContainerID        string
	ContainerEventType ContainerEventType
	CreatedAt          int64
	PodSandboxStatus   *PodSandboxStatus
	ContainersStatuses []*ContainerStatus
}

// Image is one entry of ListImages.
type Image struct {
	ID       string
	RepoTags []string
	Size     uint64
	// Uid is the image's numeric user (its config's User, before any ':'), nil when the
	// user is a name or unset; Username is the name (ImageStatus fills both, as
	// containerd's getUserFromImage).
	Uid      *int64
	Username string
}

// ContainerEventStream is a connected GetContainerEvents stream. It never blocks: Recv hands
// out the events that have arrived so far. Safe for concurrent use.
type ContainerEventStream interface {
	// Recv returns the oldest event not yet received; ok is false when none is waiting.
	// Once the stream has broken err says why (events not yet received are lost, as with
	// a broken gRPC stream) and no event comes any more.
	Recv() (ev *ContainerEventResponse, ok bool, err error)
	// Len is the number of events waiting to be received.
	Len() int
	// Close disconnects; a new GetContainerEvents may then connect.
	Close()
}

// RuntimeService is the CRI runtime service. Every call honours ctx cancellation; an error
// means the call did not happen (or its outcome is unknown, as with a real gRPC deadline).
// Implementations are safe for concurrent use. A runtime may keep the maps and slices of
// the configs it is given, as a CRI server owns the request it decoded: callers must not
// change them after the call (the kubelet builds them afresh for each call). The maps in
// what a runtime returns may be shared with it: read only.
type RuntimeService interface {
	RunPodSandbox(ctx context.Context, config *PodSandboxConfig) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	PodSandboxStatus(ctx context.Context, podSandboxID string) (*PodSandboxStatus, error)
	ListPodSandbox(ctx context.Context, filter *PodSandboxFilter) ([]PodSandbox, error)

	CreateContainer(ctx context.Context, podSandboxID string, config *ContainerConfig, sandboxConfig *PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	// StopContainer stops a container, killing it after timeout seconds.
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListContainers(ctx context.Context, filter *ContainerFilter) ([]Container, error)
	ContainerStatus(ctx context.Context, containerID string) (*ContainerStatus, error)

	Status(ctx context.Context) (*RuntimeStatus, error)
	// ExecSync runs cmd in a running container and returns its output and exit code; it
	// fails with an error wrapping ErrDeadlineExceeded when cmd runs longer than timeout
	// (0: no limit), as a CRI runtime does.
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*ExecSyncResponse, error)
	// GetContainerEvents connects to the container event stream; a nil error means the
	// connection is established (upstream's connectionEstablishedCallback). notify is called
	// (never under the runtime's locks, and it must not block) whenever events arrive or the
	// stream breaks. One subscriber at a time.
	GetContainerEvents(ctx context.Context, notify func()) (ContainerEventStream, error)
	// ListContainerStats returns the resource use of the running containers (a container
	// that exited has none).
	ListContainerStats(ctx context.Context, filter *ContainerStatsFilter) ([]ContainerStats, error)
	// ListPodSandboxStats returns the resource use of every pod sandbox.
	ListPodSandboxStats(ctx context.Context) ([]PodSandboxStats, error)
	// UpdateContainerResources sets a container's CPU and memory limits and CPU shares in
	// place (in-place pod resize): a running one's cgroup, which its processes feel at
	// once; a created one starts with them; of one that exited, as containerd, only its
	// record (ContainerStatus.Resources) changes. An unknown container wraps ErrNotFound.
	UpdateContainerResources(ctx context.Context, containerID string, resources *ContainerResources) error
}

// ImageService is the CRI image service.
type ImageService interface {
	PullImage(ctx context.Context, image ImageSpec, sandboxConfig *PodSandboxConfig) (string, error)
	ImageStatus(ctx context.Context, image ImageSpec) (*Image, error)
	ListImages(ctx context.Context) ([]Image, error)
	RemoveImage(ctx context.Context, image ImageSpec) error
}

// ExecSyncResponse is what a command run with ExecSync printed and how it exited.
type ExecSyncResponse struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/intern"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/memcg"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/release"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/task"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Defaults, as the kubelet's.
const (
	// DefaultContainerBackOff / DefaultMaxContainerBackOff: crash-loop back-off (kubelet
	// backOffPeriod and MaxContainerBackOff).
	DefaultContainerBackOff    = 10 * time.Second
	DefaultMaxContainerBackOff = 300 * time.Second
	// DefaultImageBackOff / DefaultMaxImageBackOff: image pull back-off.
	DefaultImageBackOff    = 10 * time.Second
	DefaultMaxImageBackOff = 300 * time.Second
	// minimumGracePeriodInSeconds: a container always gets this long to stop, avoiding
	// needless SIGKILLs.
	minimumGracePeriodInSeconds = 2
)

// RuntimeView is the kubelet-level reading of the runtime (pkg/runtime/view implements it).
type RuntimeView interface {
	container.PodLister
	container.PodGetter
	container.PodStatusGetter
}

// Config configures a Manager.
type Config struct {
	// Runtime and Images are the CRI services. Required.
	Runtime cri.RuntimeService
	Images  cri.ImageService
	// View lists pods and reads pod statuses from the runtime. Required.
	View RuntimeView
	// Clock drives back-offs and durations. Required.
	Clock clock.Clock
	// Recorder receives the kubelet's container events. Nil drops them.
	Recorder events.Recorder
	// Registry receives running_pods, running_containers, started_pods_total,
	// started_user_namespaced_pods_total, started_user_namespaced_pods_errors_total,
	// started_containers_total and restarted_containers_total. Nil keeps them unregistered.
	Registry *metrics.Registry
	// Liveness and Startup are the probe results: a running container whose liveness or
	// startup probe failed is killed and restarted. Nil: no probes.
	Liveness, Startup ProbeResults
	// SidecarContainers is the SidecarContainers feature gate: init containers with
	// restartPolicy Always are started in order and keep running.
	SidecarContainers bool
	// ContainerRestartRules is the ContainerRestartRules feature gate: a container's own
	// restartPolicy and restartPolicyRules override the pod's restartPolicy for it.
	ContainerRestartRules bool
	// RestartAllContainers is the RestartAllContainersOnContainerExits feature gate (it
	// needs ContainerRestartRules): a RestartAllContainers rule restarts its container, and
	// SyncPod resets every container of a pod whose status says AllContainersRestarting.
	RestartAllContainers bool
	// RunContainerOptions resolves a container's environment and mounts (the kubelet's
	// GenerateRunContainerOptions), given the pod's IPs and the image volumes the container
	// mounts (nil: none), which it mounts as ContainerOptions.ImageMounts. An error is a
	// configuration error: the container waits with CreateContainerConfigError and the
	// error as its message. Called from the pod's sync (it may wait for the API server).
	// Nil: none.
	RunContainerOptions func(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, imageVolumes ImageVolumes) (*ContainerOptions, error)
	// OnPodSandboxReady is called once SyncPod made a sandbox and it is ready (its network
	// set up, the volumes mounted before SyncPod), before any image is pulled: upstream's
	// runtimeHelper.OnPodSandboxReady (v1.37, kubernetes#134460), with which the kubelet
	// sets PodReadyToStartContainers at once rather than after the pulls. Nil: none.
	OnPodSandboxReady func(ctx context.Context, pod *v1.Pod)
	// ImageVolume is the ImageVolume gate: a pod's image volumes are pulled before its
	// containers start, and mounted by the runtime in the containers that mount them; the
	// image_volume_* metrics are registered.
	ImageVolume bool
	// MemoryCapacity is the node's memory in bytes: a Burstable container's
	// oom_score_adj is 1000 less its request's thousandths of it.
	MemoryCapacity int64
	// NodeFS is the node's filesystem, where the manager creates each container's
	// termination message file and reads it back once the container exited. Nil: no
	// termination message files.
	NodeFS *vfs.View
	// ContainerLogTail returns the last lines of a container's log, oldest first, each with
	// its newline (a last line the program printed without one has none): the message of a
	// failed container with FallbackToLogsOnError. Nil: none.
	ContainerLogTail func(ctx context.Context, containerID string, lines int) ([]string, error)
	// PullCredentials returns the credentials of the pod's imagePullSecrets (the kubelet's
	// keyring), by registry server as the docker config names it; nil: anonymous pulls.
	PullCredentials func(ctx context.Context, pod *v1.Pod) []cri.AuthConfig
	// Network is the pod network httpGet lifecycle hooks reach; nil: they succeed.
	Network *simnet.Network
	// Release is the kubelet release whose major.minor the User-Agent of httpGet hooks
	// carries ("kube-lifecycle/1.37", as upstream's probe requests); zero: the newest.
	Release release.Release
	// After is a pending operation completed d from now on the clock (sleep lifecycle
	// hooks); nil: sleep hooks return at once.
	After func(d time.Duration) *task.Op
	// InPlacePodVerticalScaling is the gate: a running container whose allocated resources
	// (its spec: the kubelet passes the allocated pod) differ from those set on its cgroup
	// is resized in place (UpdateContainerResources), or restarted when its resizePolicy
	// says so. It needs Actuated.
	InPlacePodVerticalScaling bool
	// InPlacePodLevelResourcesVerticalScaling is the gate: pod-level resources are resized
	// in place too, and bound the containers that set no limit of their own.
	InPlacePodLevelResourcesVerticalScaling bool
	// InPlacePodVerticalScalingInitContainers is the gate: a running regular init
	// container is resized too (a sidecar always is).
	InPlacePodVerticalScalingInitContainers bool
	// Actuated keeps what was set on each container's and pod's cgroups. Nil: no resizes.
	Actuated ActuatedState
	// PodCgroups is the node's pod cgroups: their names are the sandboxes' cgroup
	// parents, and a resize updates them. Nil: none.
	PodCgroups PodCgroups
	// MemoryUsage is the memory a pod and each of its containers use, checked before a
	// memory limit is lowered. Nil: not checked.
	MemoryUsage func(ctx context.Context, pod *v1.Pod) (podBytes int64, containers map[string]int64, err error)
	// UserNamespace is the user namespace of the pod's sandbox (the kubelet's
	// GetOrCreateUserNamespaceMappings): nil for the node's. An error fails the sandbox's
	// creation (its config cannot be made). Nil: every pod is in the node's.
	UserNamespace func(ctx context.Context, pod *v1.Pod, handler string) (*cri.UserNamespace, error)
	// RuntimeHandler is the handler of the pod's RuntimeClass (the kubelet's RuntimeClass
	// manager's LookupRuntimeHandler): "" for none; an error (a RuntimeClass the API server
	// does not have) fails the sandbox's creation. Nil: every pod runs on the default one.
	RuntimeHandler func(ctx context.Context, runtimeClassName *string) (string, error)
	// Crash-loop and image pull back-off bounds; zero means the kubelet's defaults.
	ContainerBackOff, MaxContainerBackOff time.Duration
	ImageBackOff, MaxImageBackOff         time.Duration
}

// Manager runs pods on a CRI runtime. Its callers (the pod syncs, housekeeping and the
// container GC) all run on the node's owner, so it keeps no locks; the pod workers
// guarantee one sync at a time per pod.
type Manager struct {
	cfg          Config
	runtime      cri.RuntimeService
	images       cri.ImageService
	view         RuntimeView
	clock        clock.Clock
	recorder     events.Recorder
	backOff      *Backoff
	imageBackOff *Backoff
	metrics      *runtimeMetrics
	messages     messageCache // exited containers' termination messages
	logs         keptLogs     // restart counts of containers removed with their logs kept
	// prevPullErr is, by image back-off key, the failure that started the back-off
	// ("ErrImagePull: <message>"), for the ImagePullBackOff message.
	prevPullErr map[string]string
}

// NewManager validates cfg, fills defaults and returns a Manager.
func NewManager(cfg Config) (*Manager, error) {
	switch {
	case cfg.Runtime == nil:
		return nil, errors.New("kuberuntime config: Runtime is required")
	case cfg.Images == nil:
		return nil, errors.New("kuberuntime config: Images is required")
	case cfg.View == nil:
		return nil, errors.New("kuberuntime config: View is required")
	case cfg.Clock == nil:
		return nil, errors.New("kuberuntime config: Clock is required")
	}
	for name, d := range map[string]time.Duration{"ContainerBackOff": cfg.ContainerBackOff, "MaxContainerBackOff": cfg.MaxContainerBackOff, "ImageBackOff": cfg.ImageBackOff, "MaxImageBackOff": cfg.MaxImageBackOff} {
		if d < 0 {
			return nil, fmt.Errorf("kuberuntime config: %s must not be negative, got %v", name, d)
		}
	}
	if cfg.Recorder == nil {
		cfg.Recorder = events.Discard{}
	}
	if cfg.Release.IsZero() {
		cfg.Release = release.Newest()
	}
	if cfg.ContainerBackOff == 0 {
		cfg.ContainerBackOff = DefaultContainerBackOff
	}
	if cfg.MaxContainerBackOff == 0 {
		cfg.MaxContainerBackOff = DefaultMaxContainerBackOff
	}
	if cfg.ImageBackOff == 0 {
		cfg.ImageBackOff = DefaultImageBackOff
	}
	if cfg.MaxImageBackOff == 0 {
		cfg.MaxImageBackOff = DefaultMaxImageBackOff
	}
	if cfg.MaxContainerBackOff < cfg.ContainerBackOff {
		return nil, fmt.Errorf("kuberuntime config: MaxContainerBackOff %v is below ContainerBackOff %v", cfg.MaxContainerBackOff, cfg.ContainerBackOff)
	}
	if cfg.MaxImageBackOff < cfg.ImageBackOff {
		return nil, fmt.Errorf("kuberuntime config: MaxImageBackOff %v is below ImageBackOff %v", cfg.MaxImageBackOff, cfg.ImageBackOff)
	}
	return &Manager{
		cfg:          cfg,
		runtime:      cfg.Runtime,
		images:       cfg.Images,
		view:         cfg.View,
		clock:        cfg.Clock,
		recorder:     cfg.Recorder,
		backOff:      NewBackoff(cfg.Clock, cfg.ContainerBackOff, cfg.MaxContainerBackOff),
		imageBackOff: NewBackoff(cfg.Clock, cfg.ImageBackOff, cfg.MaxImageBackOff),
		metrics:      newRuntimeMetrics(cfg.Registry, cfg.ImageVolume),
	}, nil
}

// ContainerBackOff exposes the crash-loop back-off (for housekeeping GC and tests).
func (m *Manager) ContainerBackOff() *Backoff { return m.backOff }

// BackOffKey is the crash-loop back-off key of a container: pod UID plus container name.
func BackOffKey(pod *v1.Pod, c *v1.Container) string {
	// As upstream's getStableKey: with the spec's hash, so an updated image starts over.
	return string(pod.UID) + "_" + c.Name + "_" + strconv.FormatUint(container.HashContainer(c), 16)
}

// GetPods lists the runtime's pods. With all=true (the PLEG's relist) it also refreshes the
// running_pods and running_containers gauges, as the kubelet's relist does.
func (m *Manager) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	pods, err := m.view.GetPods(ctx, all)
	if err != nil {
		return nil, err
	}
	if all {
		m.metrics.recordRunning(pods)
	}
	return pods, nil
}

// ListPods lists the runtime's pods without touching the running gauges (housekeeping's
// listing: upstream reads its runtime cache there, and only the relist sets the gauges).
func (m *Manager) ListPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	return m.view.GetPods(ctx, all)
}

// GetPod lists one pod's sandboxes and containers (the PLEG's per-pod relist). It leaves the
// running gauges alone: upstream sets them from the global relist only.
func (m *Manager) GetPod(ctx context.Context, uid types.UID) (*container.Pod, error) {
	return m.view.GetPod(ctx, uid)
}

// GetPodStatus reads one pod's status from the runtime.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	return m.view.GetPodStatus(ctx, uid, name, namespace)
}

// UpdateRunningMetrics sets running_pods and running_containers from a pod listing, for a
// caller that lists the runtime without going through GetPods(all=true).
func (m *Manager) UpdateRunningMetrics(pods []*container.Pod) { m.metrics.recordRunning(pods) }

// AdjustRunningContainers adds deltas to running_containers by state (the evented PLEG's
// per-event update).
func (m *Manager) AdjustRunningContainers(deltas map[container.State]int) {
	for state, d := range deltas {
		if d != 0 {
			m.metrics.runningContainers.WithLabelValues(string(state)).Add(float64(d))
		}
	}
}

// SyncPod drives the pod towards its spec: (1) compute actions, (2) kill the pod when its
// sandbox changed or it is done, or (3) kill unwanted containers, or reset them all when
// restartAllContainers (the pod's status has AllContainersRestarting True), (4) create the
// sandbox, (5) start init containers, (6) start app containers. Start failures are
// reported per container in the result (never as a panic); the caller records them as
// waiting reasons.
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, restartAllContainers bool) (result PodSyncResult) {
	logger := klog.FromContext(ctx)
	if podStatus == nil {
		podStatus = &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	changes := m.computePodActions(pod, podStatus, restartAllContainers)
	logger.V(4).Info("computePodActions got for pod", "podActions", changes.String(), "pod", klog.KObj(pod))
	if changes.CreateSandbox {
		if changes.SandboxID != "" {
			m.recorder.Eventf(podRef(pod), v1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
		} else {
			logger.V(4).Info("SyncPod received new pod, will create a sandbox for it", "pod", klog.KObj(pod))
		}
	}

	if changes.KillPod {
		if changes.CreateSandbox {
			logger.V(4).Info("Stopping PodSandbox for pod, will start new one", "pod", klog.KObj(pod))
		} else {
			logger.V(4).Info("Stopping PodSandbox for pod, because all other containers are dead", "pod", klog.KObj(pod))
		}
		kill := m.killPodWithSyncResult(ctx, pod, runningPodFromStatus(podStatus), nil)
		result.merge(kill)
		if kill.Error() != nil {
			return result
		}
		if changes.CreateSandbox {
			m.purgeInitContainers(ctx, pod, podStatus)
		}
	} else {
		for id, info := range changes.ContainersToKill {
			r := result.add(KillContainer, info.name)
			if err := m.killContainer(ctx, pod, id, info.name, info.message, info.grace); err != nil {
				r.Fail(ErrKillContainer, err.Error())
				return result
			}
		}
		if m.cfg.RestartAllContainers && !m.resetContainers(ctx, pod, changes.ContainersToReset, &result) {
			return result
		}
	}

	m.pruneInitContainersBeforeStart(ctx, pod, podStatus)

	podIPs := podStatus.IPs
	sandboxID := changes.SandboxID
	if changes.CreateSandbox {
		m.metrics.startedPods.Inc()
		if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
			// As upstream: a pod in a user namespace of its own whose sandbox is made
			// here, and an error if anything of this sync failed (most often a container
			// that could not be created in the namespace).
			m.metrics.startedUserNamespacedPods.Inc()
			defer func() {
				if result.Error() != nil {
					m.metrics.startedUserNamespacedPodsErrors.Inc()
				}
			}()
		}
		r := result.add(CreatePodSandbox, FormatPod(pod))
		config, err := m.generatePodSandboxConfig(ctx, pod, changes.Attempt)
		if err != nil {
			logger.Error(err, "Failed to generate sandbox config for pod", "pod", klog.KObj(pod))
			r.Fail(ErrCreatePodSandbox, fmt.Sprintf("Failed to generate sandbox config for pod %q: %v", FormatPod(pod), err))
			m.recorder.Eventf(podRef(pod), v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return result
		}
		id, err := m.runtime.RunPodSandbox(ctx, config)
		if err != nil {
			r.Fail(ErrCreatePodSandbox, fmt.Sprintf("Failed to create pod sandbox for pod %q: %v", FormatPod(pod), err))
			m.recorder.Eventf(podRef(pod), v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return result
		}
		logger.V(4).Info("Created PodSandbox for pod", "podSandboxID", id, "pod", klog.KObj(pod))
		sandboxID = id
		st, err := m.runtime.PodSandboxStatus(ctx, id)
		if err != nil {
			m.recorder.Eventf(podRef(pod), v1.EventTypeWarning, "FailedStatusPodSandBox", "Unable to get pod sandbox status: %v", err)
			result.Fail(fmt.Errorf("read status of sandbox %q: %w", id, err))
			return result
		}
		if !pod.Spec.HostNetwork && st != nil && st.IP != "" {
			podIPs = []string{st.IP}
		}
		if m.cfg.OnPodSandboxReady != nil {
			logger.V(4).Info("Pod sandbox and network ready, invoking callback", "pod", klog.KObj(pod), "podIPs", podIPs)
			m.cfg.OnPodSandboxReady(ctx, pod)
		}
	}

	// The containers' requests carry the sandbox's config, as upstream's; its user namespace
	// was allocated when the sandbox was made (this reads it again).
	sandboxConfig, err := m.generatePodSandboxConfig(ctx, pod, changes.Attempt)
	if err != nil {
		result.Fail(fmt.Errorf("generate the sandbox config of pod %q: %w", FormatPod(pod), err))
		return result
	}
	// The pod's image volumes are pulled once, before the first container this sync starts
	// (upstream's lazyStart), so that none starts without the volumes it mounts.
	var volumePulls imageVolumePulls
	volumesPulled := false
	start := func(kind containerKind, c *v1.Container) error {
		if !volumesPulled {
			volumePulls, volumesPulled = m.pullImageVolumes(ctx, pod, sandboxConfig), true
		}
		r := result.add(StartContainer, c.Name)
		if inBackOff, until, msg, err := m.doBackOff(pod, c, podStatus); inBackOff {
			r.Fail(err, msg)
			r.BackOffUntil = until
			logger.V(4).Info("Backing Off restarting container in pod", "containerType", kind.annotation(), "container", c.Name, "pod", klog.KObj(pod))
			return err
		}
		m.metrics.startedContainers.WithLabelValues(kind.metricLabel()).Inc()
		// Failed late, as upstream, so the container shows the volume's pull failure.
		imageVolumes, err := m.containerImageVolumes(volumePulls, pod, c, r)
		if err != nil {
			logger.V(4).Info("Container start failed in pod: an image volume is not pulled", "container", c.Name, "pod", klog.KObj(pod), "err", err)
			return err
		}
		msg, err := m.startContainer(ctx, sandboxID, sandboxConfig, c, kind, pod, podStatus, podIPs, imageVolumes)
		m.countImageVolumeMounts(err, msg, c, imageVolumes)
		if err != nil {
			r.Fail(err, msg)
			if err == ErrImagePullBackOff {
				r.BackOffUntil, _ = m.imageBackOff.ExpiryAfterUpdate(imageBackOffKey(pod, c.Image))
				logger.V(4).Info("Container start failed in pod", "container", c.Name, "pod", klog.KObj(pod), "containerMessage", msg, "err", err)
			} else {
				logger.V(2).Info("Container start failed in pod", "containerType", kind.annotation(), "container", c.Name, "pod", klog.KObj(pod), "err", err, "containerMessage", msg)
			}
			return err
		}
		return nil
	}

	// Ephemeral containers first, as upstream, so a pod whose init container fails can
	// still be debugged.
	for _, idx := range changes.EphemeralContainersToStart {
		c := v1.Container(pod.Spec.EphemeralContainers[idx].EphemeralContainerCommon)
		_ = start(kindEphemeral, &c)
	}

	if !m.cfg.SidecarContainers {
		if c := changes.NextInitContainerToStart; c != nil {
			if err := start(kindInit, c); err != nil {
				return result
			}
			logger.V(4).Info("Completed init container for pod", "containerName", c.Name, "pod", klog.KObj(pod))
		}
	} else {
		for _, idx := range changes.InitContainersToStart {
			c := &pod.Spec.InitContainers[idx]
			kind := kindInit
			if container.IsRestartableInitContainer(c, true) {
				kind = kindSidecar
			}
			if err := start(kind, c); err != nil {
				if kind == kindSidecar {
					continue // a failed sidecar does not block the others
				}
				return result
			}
		}
	}
	// Resize running containers in place before starting app containers, as upstream's
	// step 7: a container restarted for its resizePolicy starts with its new resources.
	if m.cfg.InPlacePodVerticalScaling && m.cfg.Actuated != nil && changes.resize.any() {
		result.SyncResults = append(result.SyncResults, m.doPodResize(ctx, pod, changes))
	}
	for _, idx := range changes.ContainersToStart {
		_ = start(kindApp, &pod.Spec.Containers[idx])
	}
	return result
}

// generatePodSandboxConfig is the RunPodSandbox request: identity, hostname, labels and the
// pod's annotations (the fake runtime reads container behaviour from them), its sysctls,
// the runtime handler of its RuntimeClass and its user namespace. An error is a
// RuntimeClass the API server does not have (upstream looks it up here, for the user
// namespace's handler) or a user namespace that cannot be had.
func (m *Manager) generatePodSandboxConfig(ctx context.Context, pod *v1.Pod, attempt uint32) (*cri.PodSandboxConfig, error) {
	handler := ""
	if m.cfg.RuntimeHandler != nil {
		var err error
		if handler, err = m.cfg.RuntimeHandler(ctx, pod.Spec.RuntimeClassName); err != nil {
			return nil, err
		}
	}
	hostname := ""
	if !pod.Spec.HostNetwork {
		hostname = container.PodHostname(pod)
	}
	cfg := &cri.PodSandboxConfig{
		Metadata:    cri.PodSandboxMetadata{Name: pod.Name, UID: string(pod.UID), Namespace: pod.Namespace, Attempt: attempt},
		Hostname:    hostname,
		Labels:      newPodLabels(pod),
		Annotations: newPodAnnotations(pod),
		// its containers' cgroups go under the pod's (LinuxPodSandboxConfig.CgroupParent)
		CgroupParent:   m.sandboxCgroupParent(pod),
		RuntimeHandler: handler,
	}
	if sc := pod.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		cfg.Sysctls = map[string]string{}
		for _, s := range sc.Sysctls {
			// Upstream's ConvertPodSysctlsVariableToDotsSeparator: kernel/shm_rmid_forced
			// is kernel.shm_rmid_forced (a dot inside a slashed name stays one component).
			cfg.Sysctls[admission.NormalizeSysctl(s.Name)] = s.Value
		}
	}
	if m.cfg.UserNamespace != nil && pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		ns, err := m.cfg.UserNamespace(ctx, pod, handler)
		if err != nil {
			return nil, err
		}
		cfg.UserNamespace = ns
	}
	return cfg, nil
}

// doBackOff reports whether the container is still in crash-loop back-off, counted from
// when its last instance finished, and when that back-off ends; otherwise it advances the
// back-off for this restart.
func (m *Manager) doBackOff(pod *v1.Pod, c *v1.Container, podStatus *container.PodStatus) (bool, time.Time, string, error) {
	var last *container.ContainerStatus
	for _, s := range podStatus.ContainerStatuses {
		if s.Name == c.Name && s.State == container.ContainerStateExited {
			last = s
			break
		}
	}
	if last == nil {
		return false, time.Time{}, "", nil
	}
	key := BackOffKey(pod, c)
	if m.backOff.IsInBackOffSince(key, last.FinishedAt) {
		m.recorder.Eventf(events.ContainerRef(pod, c.Name), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, FormatPod(pod))
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", m.backOff.Get(key), c.Name, FormatPod(pod))
		klog.V(4).InfoS("Back-off restarting failed container", "err", msg)
		return true, last.FinishedAt.Add(m.backOff.Get(key)), msg, ErrCrashLoopBackOff
	}
	m.backOff.Next(key, last.FinishedAt)
	return false, time.Time{}, "", nil
}

// startContainer pulls the image, creates and starts one container, and returns a message
// with one of the Err* sentinels on failure.
func (m *Manager) startContainer(ctx context.Context, sandboxID string, sandboxConfig *cri.PodSandboxConfig, c *v1.Container, kind containerKind, pod *v1.Pod, podStatus *container.PodStatus, podIPs []string, imageVolumes ImageVolumes) (string, error) {
	ref := events.ContainerRef(pod, c.Name)
	// A bad behaviour script is a configuration error of the pod: it is reported before any
	// pull, naming the annotation, instead of surfacing later as a pull or create failure
	// (the fake runtime parses the same annotations in PullImage and CreateContainer).
	if msg, err := behaviourConfigError(pod); err != nil {
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %s", msg)
		return msg, err
	}
	image, msg, err := m.ensureImageExists(ctx, ref, pod, containerPull(c), sandboxConfig)
	if err != nil {
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return msg, err
	}

	// The next attempt after the newest instance; with none in the runtime, after the
	// attempts whose logs are kept (upstream counts the pod's log files, which outlive a
	// restart of all containers; the simulator has none and keeps the count instead).
	restartCount := m.logs.restartCount(pod.UID, c.Name)
	if s := podStatus.FindContainerStatusByName(c.Name); s != nil {
		restartCount = s.RestartCount + 1
	}
	// The pod IPs feed the downward API (status.podIP) and /etc/hosts.
	config, err := m.generateContainerConfig(ctx, c, pod, restartCount, image, kind, podIPs, imageVolumes)
	if err != nil {
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return err.Error(), ErrCreateContainerConfig
	}
	id, err := m.runtime.CreateContainer(ctx, sandboxID, config, sandboxConfig)
	if err != nil {
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return err.Error(), ErrCreateContainer
	}
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Created", "Created container %s", c.Name)
	if m.cfg.InPlacePodVerticalScaling && m.cfg.Actuated != nil {
		// Its cgroup was made with its allocated resources (upstream records them once the
		// container is created).
		m.cfg.Actuated.SetActuated(pod.UID, c.Name, m.actuation(pod, c))
	}
	if err := m.runtime.StartContainer(ctx, id); err != nil {
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return err.Error(), ErrRunContainer
	}
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	if restartCount > 0 {
		m.metrics.restartedContainers.Inc()
	}
	return m.postStart(ctx, pod, c, id, podIPs)
}

// behaviourConfigError validates the pod's minikubelet.io/behavior.<container> annotations
// (every one must parse and name a container of the pod) and returns the message a waiting
// container shows, with ErrCreateContainerConfig; "", nil when they are fine.
func behaviourConfigError(pod *v1.Pod) (string, error) {
	names := make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		names = append(names, pod.Spec.InitContainers[i].Name)
	}
	for i := range pod.Spec.Containers {
		names = append(names, pod.Spec.Containers[i].Name)
	}
	err := behavior.ValidatePod(pod.Annotations, names)
	if err == nil {
		return "", nil
	}
	// errors.Join separates several bad annotations with newlines; a status message is one line.
	return strings.ReplaceAll(err.Error(), "\n", "; "), ErrCreateContainerConfig
}

// KillPod stops every running container of runningPod and then its sandboxes. pod may be nil
// (an orphan found in the runtime); then the grace period is gracePeriodOverride or the
// 2s minimum. App containers stop in parallel; sidecars stop afterwards in reverse order, as
// upstream orders restartable init containers last. StopContainer blocks until the container
// stopped or was killed at the end of its grace period.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, runningPod container.Pod, gracePeriodOverride *int64) error {
	r := m.killPodWithSyncResult(ctx, pod, runningPod, gracePeriodOverride)
	return r.Error()
}

func (m *Manager) killPodWithSyncResult(ctx context.Context, pod *v1.Pod, runningPod container.Pod, gracePeriodOverride *int64) (result PodSyncResult) {
	result.SyncResults = append(result.SyncResults, m.killContainersWithSyncResult(ctx, pod, runningPod, gracePeriodOverride)...)
	r := result.add(KillPodSandbox, string(runningPod.ID))
	for _, sb := range runningPod.Sandboxes {
		if err := m.runtime.StopPodSandbox(ctx, sb.ID.ID); err != nil && !isNotFound(err) {
			r.Fail(ErrKillPodSandbox, err.Error())
			logCallError(ctx, err, "Failed to stop sandbox", "podSandboxID", sb.ID.ID)
		}
	}
	return result
}

func (m *Manager) killContainersWithSyncResult(ctx context.Context, pod *v1.Pod, runningPod container.Pod, gracePeriodOverride *int64) []*SyncResult {
	var regular, sidecars []*container.Container
	sidecarIndex := map[string]int{}
	if pod != nil {
		for i := range pod.Spec.InitContainers {
			if container.IsRestartableInitContainer(&pod.Spec.InitContainers[i], m.cfg.SidecarContainers) {
				sidecarIndex[pod.Spec.InitContainers[i].Name] = i
			}
		}
	}
	for _, c := range runningPod.Containers {
		if _, ok := sidecarIndex[c.Name]; ok {
			sidecars = append(sidecars, c)
		} else {
			regular = append(regular, c)
		}
	}
	sort.SliceStable(sidecars, func(i, j int) bool { return sidecarIndex[sidecars[i].Name] > sidecarIndex[sidecars[j].Name] })

	kill := func(ctx context.Context, c *container.Container, override *int64) *SyncResult {
		r := &SyncResult{Action: KillContainer, Target: c.Name}
		if err := m.killContainer(ctx, pod, c.ID, c.Name, "", override); err != nil {
			r.Fail(ErrKillContainer, err.Error())
			logCallError(ctx, err, "Kill container failed", "pod", klog.KRef(runningPod.Namespace, runningPod.Name), "podUID", runningPod.ID, "containerName", c.Name, "containerID", c.ID)
		}
		return r
	}

	started := m.clock.Now()
	results := make([]*SyncResult, 0, len(runningPod.Containers))
	if len(regular) == 1 {
		results = append(results, kill(ctx, regular[0], gracePeriodOverride))
	} else if len(regular) > 1 {
		// Containers of a pod stop in parallel: the pod takes as long as its slowest one.
		// Each stop is a child task of this call (it waits for its container's exit).
		rs := make([]*SyncResult, len(regular))
		fns := make([]func(context.Context), len(regular))
		for i, c := range regular {
			fns[i] = func(ctx context.Context) { rs[i] = kill(ctx, c, gracePeriodOverride) }
		}
		if err := task.All(ctx, fns...); err != nil {
			for i, c := range regular {
				if rs[i] == nil {
					rs[i] = &SyncResult{Action: KillContainer, Target: c.Name}
					rs[i].Fail(ErrKillContainer, err.Error())
				}
			}
		}
		results = append(results, rs...)
	}
	for _, c := range sidecars {
		// A sidecar waited for the containers it serves: it gets what is left of the grace
		// period (at least the minimum).
		grace := m.gracePeriodFor(pod, gracePeriodOverride)
		left := grace - int64(m.clock.Since(started)/time.Second)
		results = append(results, kill(ctx, c, &left))
	}
	return results
}

// gracePeriodFor is the grace period a container of pod gets: the override, else the pod's
// deletion grace period, else its terminationGracePeriodSeconds (30s when unset, the API
// default a static pod file does not spell out).
func (m *Manager) gracePeriodFor(pod *v1.Pod, override *int64) int64 {
	switch {
	case override != nil:
		return *override
	case pod == nil:
		return minimumGracePeriodInSeconds
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return v1.DefaultTerminationGracePeriodSeconds
}

// killContainer records a Killing event and stops the container with its grace period
// (never below 2s). pod may be nil for an orphaned container.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, id container.ContainerID, name, message string, gracePeriodOverride *int64) error {
	if pod != nil {
		spec, _, ok := getContainerSpec(pod, name)
		if !ok {
			// Upstream refuses to kill a container its spec does not name, which would retry
			// forever; it is stopped all the same (its pod's grace period still applies).
			klog.FromContext(ctx).V(2).Info("Killing a container the pod spec does not name", "pod", klog.KObj(pod), "containerName", name, "containerID", id.String())
			spec = &v1.Container{Name: name}
		}
		if message == "" {
			message = fmt.Sprintf("Stopping container %s", name)
		}
		m.recorder.Eventf(events.ContainerRef(pod, spec.Name), v1.EventTypeNormal, "Killing", "%s", message)
	}
	grace := m.gracePeriodFor(pod, gracePeriodOverride)
	if pod != nil {
		if spec, _, ok := getContainerSpec(pod, name); ok {
			grace -= m.preStop(ctx, pod, spec, id.ID, grace)
		}
	}
	if grace < minimumGracePeriodInSeconds {
		grace = minimumGracePeriodInSeconds
	}
	klog.FromContext(ctx).V(2).Info("Killing container with a grace period", "pod", klog.KObj(pod), "containerName", name, "containerID", id.String(), "gracePeriod", grace)
	if err := m.runtime.StopContainer(ctx, id.ID, grace); err != nil && !isNotFound(err) {
		return fmt.Errorf("stop container %q (id=%q) with grace period %ds: %w", name, id.ID, grace, err)
	}
	return nil
}

// resetContainers stops (with no grace period: the 2s minimum) and removes, in order, the
// container instances of a restart of all containers, keeping their logs (upstream's
// removal loop of SyncPod). It records a RemoveContainer result for each and reports
// whether all succeeded; the first failure ends the reset, which the next sync resumes.
func (m *Manager) resetContainers(ctx context.Context, pod *v1.Pod, reset []containerToResetInfo, result *PodSyncResult) bool {
	logger := klog.FromContext(ctx)
	for _, info := range reset {
		name := info.container.Name
		logger.V(3).Info("Removing container before pod restarts", "containerName", name, "containerID", info.id, "pod", klog.KObj(pod))
		r := result.add(RemoveContainer, name)
		if info.kill {
			logger.V(3).Info("Killing container before removal", "containerName", name, "containerID", info.id, "pod", klog.KObj(pod))
			var noGrace int64
			if err := m.killContainer(ctx, pod, info.id, name, "killing", &noGrace); err != nil {
				r.Fail(ErrKillContainer, err.Error())
				logger.Error(err, "killContainer for pod failed", "containerName", name, "containerID", info.id, "pod", klog.KObj(pod))
				return false
			}
		}
		if err := m.runtime.RemoveContainer(ctx, info.id.ID); err != nil && !isNotFound(err) {
			r.Fail(ErrRemoveContainer, err.Error())
			logger.Error(err, "removeContainer for pod failed", "containerName", name, "containerID", info.id, "pod", klog.KObj(pod))
			return false
		}
		// The instance is gone but its log is kept: the next instance counts on from it.
		m.logs.keep(pod.UID, name, info.attempt)
	}
	return true
}

// pruneInitContainersBeforeStart keeps only the newest exited instance of each init
// container, so retried init containers do not pile up.
func (m *Manager) pruneInitContainersBeforeStart(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) {
	for i := range pod.Spec.InitContainers {
		name := pod.Spec.InitContainers[i].Name
		count := 0
		for _, s := range podStatus.ContainerStatuses {
			if s.Name != name || (s.State != container.ContainerStateExited && s.State != container.ContainerStateUnknown) {
				continue
			}
			count++
			if count == 1 {
				continue
			}
			if err := m.runtime.RemoveContainer(ctx, s.ID.ID); err != nil && !isNotFound(err) {
				logCallError(ctx, err, "Failed to remove pod init container", "containerName", name, "containerID", s.ID.ID, "pod", klog.KObj(pod))
			}
		}
	}
}

// purgeInitContainers removes every init container instance: a new sandbox runs
// initialization from scratch.
func (m *Manager) purgeInitContainers(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) {
	for i := range pod.Spec.InitContainers {
		name := pod.Spec.InitContainers[i].Name
		for _, s := range podStatus.ContainerStatuses {
			if s.Name != name {
				continue
			}
			if err := m.runtime.RemoveContainer(ctx, s.ID.ID); err != nil && !isNotFound(err) {
				logCallError(ctx, err, "Failed to remove pod init container", "containerName", name, "containerID", s.ID.ID, "pod", klog.KObj(pod))
			}
		}
	}
}

// ProbeResults gives a container's latest probe result (pkg/prober/results.Manager).
type ProbeResults interface {
	Get(containerID string) (results.Result, bool)
}

// containerResources are the container's memory limit, as the kubelet writes it into the
// CRI's LinuxContainerResources, and its memory request (the simulator's runtime uses it as
// the use of a container whose behaviour gives none).
func (m *Manager) containerResources(pod *v1.Pod, c *v1.Container) *cri.ContainerResources {
	if m.cfg.InPlacePodLevelResourcesVerticalScaling && pod.Spec.Resources != nil && len(pod.Spec.Resources.Limits) > 0 {
		// A container without a limit of its own is bounded by its pod's (upstream's
		// generateLinuxContainerResources with pod-level resources).
		withPod := *c
		withPod.Resources = *c.Resources.DeepCopy()
		withPod.Resources.Limits = EffectiveLimits(pod.Spec.Resources, &c.Resources)
		c = &withPod
	}
	r := containerLimits(c)
	// The OOM killer's preference by QoS class, as upstream's GetContainerOOMScoreAdjust.
	critical := kubetypes.IsCriticalPod(pod) && pod.Spec.PriorityClassName == "system-node-critical"
	// The request as defaulting leaves it (the limit, when only a limit is set).
	r.OomScoreAdj = memcg.OOMScoreAdj(string(podstatus.QOS(pod)), critical, r.MemoryRequestInBytes, m.cfg.MemoryCapacity)
	// One record for alike containers: the runtime keeps it as the container's resources
	// (read only, as the CRI's request is), 20,000 of them on a node of 10,000 pods.
	return sharedResources.Share(r)
}

// sharedResources are the CRI resources of the process's containers, shared by value.
var sharedResources intern.Values[cri.ContainerResources]

// containerLimits are the container's memory and CPU, as the kubelet writes them into the
// CRI's LinuxContainerResources.
func containerLimits(c *v1.Container) cri.ContainerResources {
	var r cri.ContainerResources
	if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = q.Value()
	}
	if q, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
		r.MemoryRequestInBytes = q.Value()
	} else if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryRequestInBytes = q.Value() // the API server defaults a missing request to the limit
	}
	// CPU as upstream's generateLinuxContainerResources writes it: shares from the request
	// (the limit when there is none), the CFS quota from the limit over a 100ms period.
	// A container with neither gets the minimum, 2.
	cpuRequest, hasRequest := c.Resources.Requests[v1.ResourceCPU]
	cpuLimit, hasLimit := c.Resources.Limits[v1.ResourceCPU]
	switch {
	case hasRequest:
		r.CPUShares = milliCPUToShares(cpuRequest.MilliValue())
	case hasLimit:
		r.CPUShares = milliCPUToShares(cpuLimit.MilliValue())
	default:
		r.CPUShares = milliCPUToShares(0)
	}
	if hasLimit {
		r.CPUPeriod = quotaPeriod
		r.CPUQuota = milliCPUToQuota(cpuLimit.MilliValue(), quotaPeriod)
	}
	return r
}

// quotaPeriod is the CFS period the kubelet sets, in microseconds (100ms).
const quotaPeriod = 100000

// milliCPUToQuota is upstream's: the quota of milliCPU over period, at least 1ms.
func milliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/1000, 1000)
}

// milliCPUToShares is upstream's: 1024 shares a core, at least 2.
func milliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return 2
	}
	return min(max(milliCPU*1024/1000, 2), 262144)
}

package features

import "github.com/minikubelet/minikubelet/pkg/featuregate"

// The gates the simulator models. Each one changes real behaviour; components take the
// resulting boolean in their Config instead of reading the global gate, so both values
// stay testable. Their specs come from the kubelet's table (pkg/kubeletref); the stages
// quoted here are v1.37's, and TestModelledGateSpecs fails when a new table changes them.
const (
	// EventedPLEG replaces the generic, polling PLEG as the source of pod lifecycle events
	// with one fed by the runtime's container event stream. The generic PLEG keeps running at
	// a long period (300s, threshold 10m) as a safety net, and takes over again at 1s/3m when
	// the stream fails more than the configured number of times.
	// Upstream: alpha (default off) since v1.26, still in v1.37.
	EventedPLEG featuregate.Feature = "EventedPLEG"

	// PodReadyToStartContainersCondition adds the PodReadyToStartContainers pod condition,
	// True once the pod's sandbox is ready and its network configured.
	// Upstream: beta (default on) since v1.29; GA and locked on in v1.37, so it can only be
	// set to true there (emulating v1.36 or older it can still be turned off).
	PodReadyToStartContainersCondition featuregate.Feature = "PodReadyToStartContainersCondition"

	// GracefulNodeShutdown makes the daemon, on SIGTERM, terminate running pods within
	// kubeletConfiguration.shutdownGracePeriod (critical pods last, within
	// shutdownGracePeriodCriticalPods) before it exits. As upstream, a shutdownGracePeriod
	// of 0 leaves the feature inactive even with the gate on.
	// Upstream: beta (default on) since v1.21, still in v1.37.
	GracefulNodeShutdown featuregate.Feature = "GracefulNodeShutdown"

	// RotateKubeletServerCertificate lets serverTLSBootstrap request the secure port's
	// certificate from the API server and renew it; off, the self-signed one is served.
	// Upstream: beta (default on) since v1.12, still in v1.37.
	RotateKubeletServerCertificate featuregate.Feature = "RotateKubeletServerCertificate"

	// KubeletFineGrainedAuthz authorizes the secure port's /pods, /runningpods,
	// /allocatedPods, /healthz and /configz as nodes/pods, nodes/healthz and nodes/configz
	// before nodes/proxy, so a monitoring agent needs no nodes/proxy.
	// Upstream: beta (default on) since v1.33, GA and locked on in v1.36.
	KubeletFineGrainedAuthz featuregate.Feature = "KubeletFineGrainedAuthz"

	// KubeletCrashLoopBackOffMax makes crashLoopBackOff.maxContainerRestartPeriod the
	// crash-loop back-off's ceiling (and its start, when below 10s).
	// Upstream: beta (default on) since v1.35.
	KubeletCrashLoopBackOffMax featuregate.Feature = "KubeletCrashLoopBackOffMax"

	// ReduceDefaultCrashLoopBackOffDecay starts the crash-loop back-off at 1s and caps it
	// at 60s (instead of 10s and 300s).
	// Upstream: alpha (default off) since v1.33.
	ReduceDefaultCrashLoopBackOffDecay featuregate.Feature = "ReduceDefaultCrashLoopBackOffDecay"

	// DisableNodeKubeProxyVersion leaves status.nodeInfo.kubeProxyVersion empty; off, the
	// node reports the kubelet's version there.
	// Upstream: deprecated, default on since v1.33, locked on in v1.36.
	DisableNodeKubeProxyVersion featuregate.Feature = "DisableNodeKubeProxyVersion"

	// ContainerRestartRules lets a regular or init container's restartPolicy (Always,
	// OnFailure, Never) and restartPolicyRules (action Restart on exit codes In/NotIn)
	// override the pod's restartPolicy: whether an exited container is restarted, and the
	// pod phase that follows (Running while any stopped container restarts, Failed when a
	// failed init container will not).
	// Upstream: beta (default on) since v1.35.
	ContainerRestartRules featuregate.Feature = "ContainerRestartRules"

	// RestartAllContainersOnContainerExits (needs ContainerRestartRules) adds the restart
	// rule action RestartAllContainers: when a container exits with a code whose rule says
	// so, the pod gets the AllContainersRestarting condition, every init and regular
	// container is stopped and removed (the sandbox, volumes and IP stay), and the pod
	// starts again from its first init container. The node declares the feature
	// (NodeDeclaredFeatures), so the scheduler places such pods on it.
	// Upstream: alpha in v1.35, beta (default on) since v1.36.
	RestartAllContainersOnContainerExits featuregate.Feature = "RestartAllContainersOnContainerExits"

	// InPlacePodVerticalScaling resizes running pods in place: an update of a pod's
	// container resources (the resize subresource) is allocated when the node has room
	// (else PodResizePending, Deferred), applied to the containers' cgroups
	// (UpdateContainerResources) or by a restart when a container's resizePolicy says so,
	// with PodResizeInProgress meanwhile; statuses carry resources and allocatedResources.
	// Upstream: GA and locked on since v1.35.
	InPlacePodVerticalScaling featuregate.Feature = "InPlacePodVerticalScaling"

	// InPlacePodLevelResourcesVerticalScaling resizes pod-level resources in place too:
	// the pod cgroup follows, containers without limits of their own are bounded by the
	// pod's, and the pod status carries resources and allocatedResources.
	// Upstream: beta (default on) since v1.36.
	InPlacePodLevelResourcesVerticalScaling featuregate.Feature = "InPlacePodLevelResourcesVerticalScaling"

	// InPlacePodVerticalScalingInitContainers resizes a running regular init container.
	// Upstream: GA and locked on in v1.37.
	InPlacePodVerticalScalingInitContainers featuregate.Feature = "InPlacePodVerticalScalingInitContainers"

	// PodObservedGenerationTracking reports the pod generation the status was made from:
	// status.observedGeneration and the kubelet's conditions' observedGeneration.
	// Upstream: GA and locked on since v1.35.
	PodObservedGenerationTracking featuregate.Feature = "PodObservedGenerationTracking"

	// NodeDeclaredFeatures publishes status.declaredFeatures (the modelled ones: the
	// resize features and RestartAllContainersOnContainerExits above) and refuses a pod that needs a feature the node does not
	// declare, with PodFeatureUnsupported.
	// Upstream: GA and locked on in v1.37.
	NodeDeclaredFeatures featuregate.Feature = "NodeDeclaredFeatures"

	// KubeletPSI adds pressure stall information to /stats/summary (the CPU, memory and
	// I/O stats of the node, pods and containers) and cAdvisor's
	// container_pressure_*_seconds_total series: the CPU a busy container was throttled
	// out of or lost to the node's other busy containers.
	// Upstream: GA and locked on since v1.36.
	KubeletPSI featuregate.Feature = "KubeletPSI"

	// ImageVolume mounts a pod's `image` volumes: the kubelet pulls each image (the
	// volume's pullPolicy, the pod's pull back-off and events) before the pod's containers
	// start, and the runtime mounts the image's files read-only where a container mounts
	// the volume (a subPath inside it too); the image_volume_* metrics count the mounts.
	// Upstream: beta (default on) since v1.35, GA and locked on in v1.36.
	ImageVolume featuregate.Feature = "ImageVolume"

	// SupplementalGroupsPolicy passes the pod's supplementalGroupsPolicy to the runtime
	// (Strict: the image's /etc/group memberships are not added to the process's groups),
	// reports each container's user in its status, publishes status.features, and refuses
	// a Strict pod on a node whose runtime does not honour it.
	// Upstream: GA and locked on since v1.35.
	SupplementalGroupsPolicy featuregate.Feature = "SupplementalGroupsPolicy"

	// EnvFiles sets an env var from a key of a KEY='value' file in one of the pod's
	// emptyDir volumes (valueFrom.fileKeyRef), written there by an init container; off,
	// such a variable is set empty.
	// Upstream: beta (default on) since v1.35.
	EnvFiles featuregate.Feature = "EnvFiles"

	// ProcMountType passes a container's procMount to the runtime: Default masks and makes
	// read-only the kubelet's list of /proc paths, Unmasked (with hostUsers: false) none.
	// Upstream: GA and locked on since v1.36.
	ProcMountType featuregate.Feature = "ProcMountType"

	// UserNamespacesSupport runs a pod with hostUsers: false in a user namespace of its
	// own: the kubelet allocates it a range of userNamespaces.idsPerPod host IDs and passes
	// the mappings to the runtime; the node lists which runtime handlers support them.
	// Upstream: GA and locked on since v1.36.
	UserNamespacesSupport featuregate.Feature = "UserNamespacesSupport"

	// ChangeContainerStatusOnKubeletRestart, on, brings back what a kubelet restart did to
	// the containers it found running before v1.35: each starts again from its probes'
	// initial results, not started until its startup probe passes and not ready until its
	// readiness probe does. Off (the default), such a container keeps started from the
	// status it had (the API server's copy) and, until its readiness probe has a result, is
	// as ready as its pod was, so a kubelet restart does not flap readiness.
	// Upstream: GA (default on) since v1.0; deprecated, default off since v1.35.
	ChangeContainerStatusOnKubeletRestart featuregate.Feature = "ChangeContainerStatusOnKubeletRestart"

	// PLEGOnDemandRelist lets a pod worker ask the generic PLEG to relist its pod at once
	// (after a sync that changed containers, and for the EventedPLEG's container exits),
	// rather than wait for the next periodic relist. Off (an emulated v1.34 or v1.35), every
	// step of a pod waits for a relist.
	// Upstream: beta (default on) since v1.36, GA and locked on in v1.37.
	PLEGOnDemandRelist featuregate.Feature = "PLEGOnDemandRelist"
)

// modelled lists the gates above: Simulated answers from it.
var modelled = []featuregate.Feature{
	EventedPLEG,
	PodReadyToStartContainersCondition,
	GracefulNodeShutdown,
	RotateKubeletServerCertificate,
	KubeletFineGrainedAuthz,
	KubeletCrashLoopBackOffMax,
	ReduceDefaultCrashLoopBackOffDecay,
	DisableNodeKubeProxyVersion,
	ContainerRestartRules,
	RestartAllContainersOnContainerExits,
	InPlacePodVerticalScaling,
	InPlacePodLevelResourcesVerticalScaling,
	InPlacePodVerticalScalingInitContainers,
	PodObservedGenerationTracking,
	NodeDeclaredFeatures,
	KubeletPSI,
	ImageVolume,
	SupplementalGroupsPolicy,
	EnvFiles,
	ProcMountType,
	UserNamespacesSupport,
	ChangeContainerStatusOnKubeletRestart,
	PLEGOnDemandRelist,
}

// Gates of v1.37 that change kubelet behaviour the simulator is to model next. They are
// registered like every kubelet gate, but Simulated reports false for them until a
// component takes their value (then move the name to modelled, with a comment saying what
// it changes). Stages: see the table (`minikubelet feature-gates` lists them).
const (
	PodLevelResources featuregate.Feature = "PodLevelResources"
)

// planned lists the gates above, so that a test checks each against the table.
var planned = []featuregate.Feature{
	PodLevelResources,
}

// Simulated reports whether the simulator models a gate: set, it changes what a node does.
func Simulated(name featuregate.Feature) bool {
	for _, m := range modelled {
		if m == name {
			return true
		}
	}
	return false
}

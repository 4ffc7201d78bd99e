package config

import (
	"encoding/json"
	v1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// KubeletConfiguration is kubelet.config.k8s.io/v1beta1 KubeletConfiguration as of v1.37.
// The fields the simulator models are typed. The fields v1.37 added that it does not model
// are typed too, so that they are defaulted and validated as the kubelet does (a file the
// kubelet refuses is refused here), and listed in checkedNotSimulated. Every other upstream
// field is accepted as raw JSON so that a configuration file taken from a real node loads.
// Both kinds of unmodelled field are reported once as not simulated. The JSON field names
// equal upstream's (a test compares them with k8s.io/kubelet/config/v1beta1).
type KubeletConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// Modelled fields.

	// ClusterDNS are the cluster's DNS servers and ClusterDomain its domain: a pod with
	// dnsPolicy ClusterFirst gets them in its /etc/resolv.conf (search
	// <ns>.svc.<domain> svc.<domain> <domain>, ndots:5). Without ClusterDNS such pods fall
	// back to the node's resolv.conf with a MissingClusterDNS event, as upstream.
	ClusterDNS    []string `json:"clusterDNS,omitempty"`
	ClusterDomain string   `json:"clusterDomain,omitempty"`
	// ResolverConfig is the node's resolv.conf, the Default dnsPolicy's (default
	// /etc/resolv.conf, of the simulated node's filesystem).
	ResolverConfig *string `json:"resolvConf,omitempty"`

	// StaticPodPath is the directory (or single file) of static pod manifests; empty disables the
	// file source. A relative path is resolved against the config file's directory, as upstream.
	StaticPodPath string `json:"staticPodPath,omitempty"`
	// SyncFrequency is the resync period of a pod worker after a successful sync (with 0.5
	// jitter). Default 1m.
	SyncFrequency metav1.Duration `json:"syncFrequency,omitempty"`
	// FileCheckFrequency is the polling period of the static pod directory (fsnotify events come
	// in between). Default 20s.
	FileCheckFrequency metav1.Duration `json:"fileCheckFrequency,omitempty"`
	// Address is the IP the HTTP servers bind to. Default 127.0.0.1 (upstream: 0.0.0.0).
	Address string `json:"address,omitempty"`
	// ReadOnlyPort is the plain HTTP port (no authentication). Default 10255, with or
	// without a config file; 0 picks a free port (upstream: 0 disables the read-only port).
	// Always written (not omitempty): a file without it means 10255, so a 0 left out of
	// /configz would read back as another port.
	ReadOnlyPort int32 `json:"readOnlyPort"`
	// Port is the kubelet's secure (HTTPS) port, default 10250: every read-only endpoint
	// plus containerLogs, exec, attach and portForward, behind authentication and
	// authorization. --port 0 picks a free port (a file's 0 means the default, as upstream).
	Port int32 `json:"port,omitempty"`
	// TLSCertFile and TLSPrivateKeyFile are the secure port's serving certificate and key;
	// without them a self-signed certificate is generated (kept under --cert-dir if given).
	TLSCertFile       string `json:"tlsCertFile,omitempty"`
	TLSPrivateKeyFile string `json:"tlsPrivateKeyFile,omitempty"`
	// Authentication and Authorization are the secure port's, upstream's types. The file
	// defaults are v1beta1's (anonymous off, webhook on with a 2m cache, mode Webhook with
	// 5m/30s caches); without a config file the kubelet's flag defaults apply (anonymous on,
	// webhook off, AlwaysAllow).
	Authentication kubeletv1beta1.KubeletAuthentication `json:"authentication"`
	Authorization  kubeletv1beta1.KubeletAuthorization  `json:"authorization"`
	// EnableDebuggingHandlers enables the simulator's fault-injection HTTP handlers (upstream:
	// logs/exec/attach/port-forward). Default false, unlike upstream's true, because these
	// handlers change the node.
	EnableDebuggingHandlers *bool `json:"enableDebuggingHandlers,omitempty"`
	// EnableProfilingHandler serves Go's net/http/pprof at /debug/pprof/ on the secure
	// port, as upstream, and on the read-only port too when enableDebuggingHandlers is
	// true. Default false (upstream: true): a profile shows the simulator, not a node.
	EnableProfilingHandler *bool `json:"enableProfilingHandler,omitempty"`
	// NodeStatusUpdateFrequency is how often node status is computed (and posted when it changed).
	// Default 10s.
	NodeStatusUpdateFrequency metav1.Duration `json:"nodeStatusUpdateFrequency,omitempty"`
	// NodeStatusReportFrequency is how often an unchanged node status is posted anyway. Default
	// 5m, or nodeStatusUpdateFrequency when only that was set.
	NodeStatusReportFrequency metav1.Duration `json:"nodeStatusReportFrequency,omitempty"`
	// NodeLeaseDurationSeconds is the node Lease duration; it is renewed every quarter of it.
	// Default 40.
	NodeLeaseDurationSeconds int32 `json:"nodeLeaseDurationSeconds,omitempty"`
	// RuntimeRequestTimeout bounds every runtime call (a hang fault ends there). Default 2m.
	RuntimeRequestTimeout metav1.Duration `json:"runtimeRequestTimeout,omitempty"`
	// MaxPods is the number of pods admitted on the node. Default 110.
	MaxPods int32 `json:"maxPods,omitempty"`
	// AllowedUnsafeSysctls are the sysctls (names, or prefixes ending in *) pods may set
	// beyond the safe ones; a pod setting another is rejected at admission with
	// SysctlForbidden. Each must be a sysctl the kernel namespaces (net.*, IPC ones).
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls,omitempty"`
	// ContainerLogMaxSize is the size a container's log file grows to before it is rotated
	// (a quantity, default 10Mi); ContainerLogMaxFiles how many files a container keeps
	// (default 5, at least 2). The runtime keeps that much of each container's log.
	ContainerLogMaxSize  string `json:"containerLogMaxSize,omitempty"`
	ContainerLogMaxFiles *int32 `json:"containerLogMaxFiles,omitempty"`
	// PodPidsLimit is the most processes a pod's containers run together (its pids
	// cgroup's pids.max); -1, the default, or 0: no limit but each container's 1,024.
	PodPidsLimit *int64 `json:"podPidsLimit,omitempty"`
	// ContentType is the media type of the node's API requests (default protobuf, which it
	// asks answers in too, JSON accepted); KubeAPIQPS and KubeAPIBurst are its client's rate
	// limit (defaults 50 and 100; 0 is client-go's 5 and 10, as the kubelet passes them).
	// Each node of --node-count has a limiter of its own. With --kubeconfig.
	ContentType  string `json:"contentType,omitempty"`
	KubeAPIQPS   *int32 `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst int32  `json:"kubeAPIBurst,omitempty"`
	// EventRecordQPS and EventBurst are the rate limit of the client the node's events are
	// sent with (defaults 50 and 100; 0 is client-go's 5 and 10).
	EventRecordQPS *int32 `json:"eventRecordQPS,omitempty"`
	EventBurst     int32  `json:"eventBurst,omitempty"`
	// RegisterWithTaints are the taints the node is registered with (cluster mode); each
	// key a qualified name, each effect NoSchedule, PreferNoSchedule or NoExecute.
	RegisterWithTaints []v1.Taint `json:"registerWithTaints,omitempty"`
	// EvictionHard maps eviction signals to thresholds (quantity or percentage). Unset: the
	// upstream Linux defaults; set: exactly these, or with mergeDefaultEvictionSettings the
	// defaults of the signals left out.
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft are soft thresholds: met for their EvictionSoftGracePeriod (required
	// for each) before a pod is evicted, with a grace of at most EvictionMaxPodGracePeriod
	// seconds. EvictionMinimumReclaim is how far below a met threshold a signal must get
	// before it counts as resolved. EvictionPressureTransitionPeriod holds a pressure
	// condition after its threshold was last met (default 5m).
	EvictionSoft                     map[string]string `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod          map[string]string `json:"evictionSoftGracePeriod,omitempty"`
	EvictionPressureTransitionPeriod metav1.Duration   `json:"evictionPressureTransitionPeriod,omitempty"`
	EvictionMaxPodGracePeriod        int32             `json:"evictionMaxPodGracePeriod,omitempty"`
	EvictionMinimumReclaim           map[string]string `json:"evictionMinimumReclaim,omitempty"`
	// FeatureGates sets gates by name; merged per key with --feature-gates (the flag wins on the
	// same key).
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// SystemReserved is subtracted from capacity for allocatable (cpu, memory, ephemeral-storage,
	// pid).
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved is subtracted from capacity for allocatable (cpu, memory, ephemeral-storage, pid).
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// ShutdownGracePeriod is the total time pods get on SIGTERM with GracefulNodeShutdown on; 0
	// (the default) disables graceful shutdown, as upstream.
	ShutdownGracePeriod metav1.Duration `json:"shutdownGracePeriod,omitempty"`
	// ShutdownGracePeriodCriticalPods is the part of ShutdownGracePeriod kept for critical pods,
	// which stop last. Default 0.
	ShutdownGracePeriodCriticalPods metav1.Duration `json:"shutdownGracePeriodCriticalPods,omitempty"`

	// RotateCertificates rotates the kubelet's client certificate before it expires, with
	// client-go's certificate manager, requesting a new one from the API server
	// (kubernetes.io/kube-apiserver-client-kubelet CSRs); with --bootstrap-kubeconfig the
	// first one is requested with the bootstrap token, in the background.
	RotateCertificates bool `json:"rotateCertificates,omitempty"`
	// ServerTLSBootstrap gets the secure port's certificate from the API server
	// (kubernetes.io/kubelet-serving CSRs, which someone must approve) instead of a
	// self-signed one, and renews it, with the RotateKubeletServerCertificate gate (on by
	// default) and an API server.
	ServerTLSBootstrap bool `json:"serverTLSBootstrap,omitempty"`

	// CrashLoopBackOff.MaxContainerRestartPeriod caps a container's restart back-off, with
	// the KubeletCrashLoopBackOffMax gate (beta, on by default in v1.37), which defaults it
	// to 300s; between 1s and 300s; must not be set with the gate off. Read it with
	// MaxContainerRestartPeriod.
	CrashLoopBackOff kubeletv1beta1.CrashLoopBackOffConfig `json:"crashLoopBackOff,omitempty"`
	// SingleProcessOOMKill, true, OOM-kills the one process over the limit instead of the
	// whole container (memory.oom.group unset). The simulated node is cgroup v2, where
	// upstream's default is false. Read it with SingleProcessOOMKillEnabled.
	SingleProcessOOMKill *bool `json:"singleProcessOOMKill,omitempty"`
	// UserNamespaces.IDsPerPod is the length of the UID/GID range a pod with
	// hostUsers: false gets: a multiple of 65536, at least 65536 and at most 2^32-1.
	// Unset or 0: 65536. Read it with UserNamespacesIDsPerPod.
	UserNamespaces *kubeletv1beta1.UserNamespaces `json:"userNamespaces,omitempty"`
	// MergeDefaultEvictionSettings, true, fills the evictionHard signals the file leaves
	// out with their defaults (the file's win); false (the default): a written evictionHard
	// is used as is. A --eviction-hard flag still replaces the whole map, as upstream.
	MergeDefaultEvictionSettings *bool `json:"mergeDefaultEvictionSettings,omitempty"`

	// Checked as the v1.37 kubelet checks them (types, defaults, validation) and not
	// simulated: listed in checkedNotSimulated.

	// FailCgroupV1 refuses a cgroup v1 host; the simulated node is cgroup v2. Default true.
	FailCgroupV1 *bool `json:"failCgroupV1,omitempty"`
	// ImagePullCredentialsVerificationPolicy and PreloadedImagesVerificationAllowlist
	// (KubeletEnsureSecretPulledImages gate): the policy defaults to
	// NeverVerifyPreloadedImages with the gate on; both must be unset with it off.
	ImagePullCredentialsVerificationPolicy kubeletv1beta1.ImagePullCredentialsVerificationPolicy `json:"imagePullCredentialsVerificationPolicy,omitempty"`
	PreloadedImagesVerificationAllowlist   []string                                              `json:"preloadedImagesVerificationAllowlist,omitempty"`
	// DefaultPodSysctls are sysctls every pod's sandbox gets (DefaultPodSysctls gate).
	DefaultPodSysctls map[string]string `json:"defaultPodSysctls,omitempty"`
	// MemoryReservationPolicy is None (the default) or TieredReservation (MemoryQoS gate).
	MemoryReservationPolicy kubeletv1beta1.MemoryReservationPolicy `json:"memoryReservationPolicy,omitempty"`
	// ConfigMapAndSecretChangeDetectionStrategy is how the kubelet keeps the ConfigMaps and
	// Secrets its pods use: Watch (the default: a watch of each), Cache (read again when
	// older than a TTL) or Get (read at every use).
	ConfigMapAndSecretChangeDetectionStrategy kubeletv1beta1.ResourceChangeDetectionStrategy `json:"configMapAndSecretChangeDetectionStrategy,omitempty"`
	// TLSCurvePreferences are the secure port's key exchanges, as crypto/tls CurveIDs.
	TLSCurvePreferences []int32 `json:"tlsCurvePreferences,omitempty"`

	// Accepted and not simulated. Their content is kept verbatim (it shows in /configz) but
	// is not checked beyond being JSON.

	EnableServer                     json.RawMessage `json:"enableServer,omitempty"`
	PodLogsDir                       json.RawMessage `json:"podLogsDir,omitempty"`
	HTTPCheckFrequency               json.RawMessage `json:"httpCheckFrequency,omitempty"`
	StaticPodURL                     json.RawMessage `json:"staticPodURL,omitempty"`
	StaticPodURLHeader               json.RawMessage `json:"staticPodURLHeader,omitempty"`
	TLSCipherSuites                  json.RawMessage `json:"tlsCipherSuites,omitempty"`
	TLSMinVersion                    json.RawMessage `json:"tlsMinVersion,omitempty"`
	RegistryPullQPS                  json.RawMessage `json:"registryPullQPS,omitempty"`
	RegistryBurst                    json.RawMessage `json:"registryBurst,omitempty"`
	EnableContentionProfiling        json.RawMessage `json:"enableContentionProfiling,omitempty"`
	HealthzPort                      json.RawMessage `json:"healthzPort,omitempty"`
	HealthzBindAddress               json.RawMessage `json:"healthzBindAddress,omitempty"`
	OOMScoreAdj                      json.RawMessage `json:"oomScoreAdj,omitempty"`
	StreamingConnectionIdleTimeout   json.RawMessage `json:"streamingConnectionIdleTimeout,omitempty"`
	ImageMinimumGCAge                json.RawMessage `json:"imageMinimumGCAge,omitempty"`
	ImageMaximumGCAge                json.RawMessage `json:"imageMaximumGCAge,omitempty"`
	ImageGCHighThresholdPercent      json.RawMessage `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent       json.RawMessage `json:"imageGCLowThresholdPercent,omitempty"`
	VolumeStatsAggPeriod             json.RawMessage `json:"volumeStatsAggPeriod,omitempty"`
	KubeletCgroups                   json.RawMessage `json:"kubeletCgroups,omitempty"`
	SystemCgroups                    json.RawMessage `json:"systemCgroups,omitempty"`
	CgroupRoot                       json.RawMessage `json:"cgroupRoot,omitempty"`
	CgroupsPerQOS                    json.RawMessage `json:"cgroupsPerQOS,omitempty"`
	CgroupDriver                     json.RawMessage `json:"cgroupDriver,omitempty"`
	CPUManagerPolicy                 json.RawMessage `json:"cpuManagerPolicy,omitempty"`
	CPUManagerPolicyOptions          json.RawMessage `json:"cpuManagerPolicyOptions,omitempty"`
	CPUManagerReconcilePeriod        json.RawMessage `json:"cpuManagerReconcilePeriod,omitempty"`
	MemoryManagerPolicy              json.RawMessage `json:"memoryManagerPolicy,omitempty"`
	TopologyManagerPolicy            json.RawMessage `json:"topologyManagerPolicy,omitempty"`
	TopologyManagerScope             json.RawMessage `json:"topologyManagerScope,omitempty"`
	TopologyManagerPolicyOptions     json.RawMessage `json:"topologyManagerPolicyOptions,omitempty"`
	QOSReserved                      json.RawMessage `json:"qosReserved,omitempty"`
	HairpinMode                      json.RawMessage `json:"hairpinMode,omitempty"`
	PodCIDR                          json.RawMessage `json:"podCIDR,omitempty"`
	RunOnce                          json.RawMessage `json:"runOnce,omitempty"`
	CPUCFSQuota                      json.RawMessage `json:"cpuCFSQuota,omitempty"`
	CPUCFSQuotaPeriod                json.RawMessage `json:"cpuCFSQuotaPeriod,omitempty"`
	NodeStatusMaxImages              json.RawMessage `json:"nodeStatusMaxImages,omitempty"`
	MaxOpenFiles                     json.RawMessage `json:"maxOpenFiles,omitempty"`
	SerializeImagePulls              json.RawMessage `json:"serializeImagePulls,omitempty"`
	MaxParallelImagePulls            json.RawMessage `json:"maxParallelImagePulls,omitempty"`
	PodsPerCore                      json.RawMessage `json:"podsPerCore,omitempty"`
	EnableControllerAttachDetach     json.RawMessage `json:"enableControllerAttachDetach,omitempty"`
	ProtectKernelDefaults            json.RawMessage `json:"protectKernelDefaults,omitempty"`
	MakeIPTablesUtilChains           json.RawMessage `json:"makeIPTablesUtilChains,omitempty"`
	IPTablesMasqueradeBit            json.RawMessage `json:"iptablesMasqueradeBit,omitempty"`
	IPTablesDropBit                  json.RawMessage `json:"iptablesDropBit,omitempty"`
	FailSwapOn                       json.RawMessage `json:"failSwapOn,omitempty"`
	MemorySwap                       json.RawMessage `json:"memorySwap,omitempty"`
	ContainerLogMaxWorkers           json.RawMessage `json:"containerLogMaxWorkers,omitempty"`
	ContainerLogMonitorInterval      json.RawMessage `json:"containerLogMonitorInterval,omitempty"`
	ReservedSystemCPUs               json.RawMessage `json:"reservedSystemCPUs,omitempty"`
	ShowHiddenMetricsForVersion      json.RawMessage `json:"showHiddenMetricsForVersion,omitempty"`
	SystemReservedCgroup             json.RawMessage `json:"systemReservedCgroup,omitempty"`
	KubeReservedCgroup               json.RawMessage `json:"kubeReservedCgroup,omitempty"`
	EnforceNodeAllocatable           json.RawMessage `json:"enforceNodeAllocatable,omitempty"`
	VolumePluginDir                  json.RawMessage `json:"volumePluginDir,omitempty"`
	ProviderID                       json.RawMessage `json:"providerID,omitempty"`
	KernelMemcgNotification          json.RawMessage `json:"kernelMemcgNotification,omitempty"`
	Logging                          json.RawMessage `json:"logging,omitempty"`
	EnableSystemLogHandler           json.RawMessage `json:"enableSystemLogHandler,omitempty"`
	EnableSystemLogQuery             json.RawMessage `json:"enableSystemLogQuery,omitempty"`
	ShutdownGracePeriodByPodPriority json.RawMessage `json:"shutdownGracePeriodByPodPriority,omitempty"`
	ReservedMemory                   json.RawMessage `json:"reservedMemory,omitempty"`
	EnableDebugFlagsHandler          json.RawMessage `json:"enableDebugFlagsHandler,omitempty"`
	SeccompDefault                   json.RawMessage `json:"seccompDefault,omitempty"`
	MemoryThrottlingFactor           json.RawMessage `json:"memoryThrottlingFactor,omitempty"`
	RegisterNode                     json.RawMessage `json:"registerNode,omitempty"`
	Tracing                          json.RawMessage `json:"tracing,omitempty"`
	LocalStorageCapacityIsolation    json.RawMessage `json:"localStorageCapacityIsolation,omitempty"`
	ContainerRuntimeEndpoint         json.RawMessage `json:"containerRuntimeEndpoint,omitempty"`
	ImageServiceEndpoint             json.RawMessage `json:"imageServiceEndpoint,omitempty"`
}

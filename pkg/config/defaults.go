package config

import (
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/release"
)

// Kubelet defaults (k8s.io/kubernetes pkg/kubelet/apis/config/v1beta1/defaults.go, v1.37)
// and the simulator's deviations from them.
const (
	DefaultSyncFrequency             = time.Minute
	DefaultFileCheckFrequency        = 20 * time.Second
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	DefaultNodeStatusReportFrequency = 5 * time.Minute
	DefaultNodeLeaseDurationSeconds  = 40
	DefaultMaxPods                   = 110
	DefaultContainerLogMaxSize       = "10Mi"
	DefaultContainerLogMaxFiles      = 5
	DefaultRuntimeRequestTimeout     = 2 * time.Minute
	DefaultContentType               = "application/vnd.kubernetes.protobuf"
	DefaultKubeAPIQPS                = 50
	DefaultKubeAPIBurst              = 100
	DefaultEventRecordQPS            = 50
	DefaultEventBurst                = 100
	// DefaultAddress deviates from upstream's 0.0.0.0: a simulator on a laptop should not
	// listen on every interface unless asked to.
	DefaultAddress = "127.0.0.1"
	// DefaultReadOnlyPort is the kubelet's legacy read-only port. It applies with and
	// without a config file: the simulator serves its one HTTP listener there, and an
	// explicit 0 picks a free port (v1beta1 defaults the field to 0, meaning disabled).
	DefaultReadOnlyPort = 10255
	// DefaultEvictionPressureTransitionPeriod is evictionPressureTransitionPeriod's default.
	DefaultEvictionPressureTransitionPeriod = 5 * time.Minute
	// DefaultPort is the kubelet's secure port.
	DefaultPort = 10250
	// The secure port's authentication and authorization caches (v1beta1 defaults).
	DefaultAuthenticationCacheTTL            = 2 * time.Minute
	DefaultAuthorizationCacheAuthorizedTTL   = 5 * time.Minute
	DefaultAuthorizationCacheUnauthorizedTTL = 30 * time.Second
	// DefaultMaxContainerRestartPeriod is crashLoopBackOff.maxContainerRestartPeriod's
	// default with the KubeletCrashLoopBackOffMax gate, and the back-off cap without it
	// (upstream MaxContainerBackOff).
	DefaultMaxContainerRestartPeriod = 300 * time.Second
	// DefaultUserNamespacesIDsPerPod is userNamespaces.idsPerPod's default (upstream
	// DefaultKubeletUserNamespacesIDsPerPod), also the unit its value is a multiple of.
	DefaultUserNamespacesIDsPerPod = 65536
	// DefaultMemoryReservationPolicy is memoryReservationPolicy's default.
	DefaultMemoryReservationPolicy = kubeletv1beta1.NoneMemoryReservationPolicy
	// DefaultImagePullCredentialsVerificationPolicy is the policy's default with the
	// KubeletEnsureSecretPulledImages gate (none without it).
	DefaultImagePullCredentialsVerificationPolicy = kubeletv1beta1.NeverVerifyPreloadedImages
)

// Authorization modes of the secure port (upstream KubeletAuthorizationMode).
const (
	AuthorizationModeAlwaysAllow = string(kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow)
	AuthorizationModeWebhook     = string(kubeletv1beta1.KubeletAuthorizationModeWebhook)
)

// Simulator defaults.
const (
	DefaultCPU                     = "4"
	DefaultMemory                  = "8Gi"
	DefaultEphemeralStorage        = "100Gi"
	DefaultPIDs                    = "4194304"
	DefaultRelistPeriod            = time.Second
	DefaultRelistThreshold         = 3 * time.Minute
	DefaultPLEGChannelCapacity     = 1000
	DefaultEventedRelistPeriod     = 300 * time.Second
	DefaultEventedRelistThreshold  = 10 * time.Minute
	DefaultEventedMaxRetries       = 5
	DefaultGlobalCacheUpdatePeriod = 5 * time.Second
	DefaultSeed                    = 1
	// DefaultRecordMaxBytes bounds a --record file (an hour of a busy node is a few MiB).
	DefaultRecordMaxBytes = 64 << 20
	// MinRecordMaxBytes leaves room for the header and a step.
	MinRecordMaxBytes              = 4 << 10
	DefaultInitContainerDuration   = time.Second
	DefaultRuntimeStatusPollPeriod = 5 * time.Second
	// DefaultProgramCPU is half a core: the programs of every node of a daemon together.
	DefaultProgramCPU               = "500m"
	defaultNodeNameWithoutAHostname = "minikubelet"
)

// DefaultEvictionHard returns the kubelet's Linux hard eviction thresholds
// (pkg/kubelet/eviction/defaults_linux.go, the same in v1.30 and v1.37). There is no
// pid.available threshold by default, as upstream; the inode ones are never crossed here.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}

// NewKubeletConfiguration returns the configuration used when no config file is given:
// the v1beta1 defaults plus the kubelet's legacy flag defaults (readOnlyPort 10255).
func NewKubeletConfiguration() *KubeletConfiguration {
	kc := &KubeletConfiguration{}
	// The kubelet's flag defaults, which differ from v1beta1's: a kubelet started without
	// a config file accepts anonymous requests and authorizes everything
	// (--anonymous-auth=true, --authentication-token-webhook=false,
	// --authorization-mode=AlwaysAllow).
	on, off := true, false
	kc.Authentication.Anonymous.Enabled = &on
	kc.Authentication.Webhook.Enabled = &off
	kc.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow
	SetKubeletDefaults(kc)
	kc.ReadOnlyPort = DefaultReadOnlyPort
	return kc
}

// SetKubeletDefaults fills the modelled fields of a decoded KubeletConfiguration as
// v1beta1 defaulting does: a zero value means "default", which is why the explicit "0s"
// entries in a kubeadm-written config file are harmless.
func SetKubeletDefaults(kc *KubeletConfiguration) {
	kc.APIVersion, kc.Kind = KubeletAPIVersion, KubeletKind
	if kc.SyncFrequency.Duration == 0 {
		kc.SyncFrequency = metav1.Duration{Duration: DefaultSyncFrequency}
	}
	if kc.FileCheckFrequency.Duration == 0 {
		kc.FileCheckFrequency = metav1.Duration{Duration: DefaultFileCheckFrequency}
	}
	if kc.Address == "" {
		kc.Address = DefaultAddress
	}
	if kc.Port == 0 {
		kc.Port = DefaultPort
	}
	setAuthDefaults(kc)
	// EnableDebuggingHandlers stays nil when unset: that is its own setting (the secure
	// port's logs, exec, attach and port-forward on, the fault handlers off).
	// The report frequency follows an explicitly set update frequency, for compatibility
	// with configs written before the report frequency existed (as upstream). So it must
	// be decided before the update frequency is defaulted.
	if kc.NodeStatusReportFrequency.Duration == 0 {
		if kc.NodeStatusUpdateFrequency.Duration == 0 {
			kc.NodeStatusReportFrequency = metav1.Duration{Duration: DefaultNodeStatusReportFrequency}
		} else {
			kc.NodeStatusReportFrequency = kc.NodeStatusUpdateFrequency
		}
	}
	if kc.NodeStatusUpdateFrequency.Duration == 0 {
		kc.NodeStatusUpdateFrequency = metav1.Duration{Duration: DefaultNodeStatusUpdateFrequency}
	}
	if kc.NodeLeaseDurationSeconds == 0 {
		kc.NodeLeaseDurationSeconds = DefaultNodeLeaseDurationSeconds
	}
	if kc.RuntimeRequestTimeout.Duration == 0 {
		kc.RuntimeRequestTimeout = metav1.Duration{Duration: DefaultRuntimeRequestTimeout}
	}
	if kc.MaxPods == 0 {
		kc.MaxPods = DefaultMaxPods
	}
	if kc.ContainerLogMaxSize == "" {
		kc.ContainerLogMaxSize = DefaultContainerLogMaxSize
	}
	if kc.ContainerLogMaxFiles == nil {
		n := int32(DefaultContainerLogMaxFiles)
		kc.ContainerLogMaxFiles = &n
	}
	// Any negative limit means "none" and reads back as -1, as upstream.
	if kc.PodPidsLimit == nil || *kc.PodPidsLimit < 0 {
		n := int64(-1)
		kc.PodPidsLimit = &n
	}
	if kc.ContentType == "" {
		kc.ContentType = DefaultContentType
	}
	if kc.KubeAPIQPS == nil {
		n := int32(DefaultKubeAPIQPS)
		kc.KubeAPIQPS = &n
	}
	if kc.KubeAPIBurst == 0 {
		kc.KubeAPIBurst = DefaultKubeAPIBurst
	}
	if kc.EventRecordQPS == nil {
		n := int32(DefaultEventRecordQPS)
		kc.EventRecordQPS = &n
	}
	if kc.EventBurst == 0 {
		kc.EventBurst = DefaultEventBurst
	}
	if kc.MergeDefaultEvictionSettings == nil {
		off := false
		kc.MergeDefaultEvictionSettings = &off
	}
	// A missing evictionHard gets the defaults; a written one, even {}, is used as is
	// unless mergeDefaultEvictionSettings asks for the missing signals' defaults (v1.37's
	// loadConfigFile; the other eviction maps have no defaults to merge).
	if kc.EvictionHard == nil {
		kc.EvictionHard = DefaultEvictionHard()
	} else if *kc.MergeDefaultEvictionSettings {
		for signal, threshold := range DefaultEvictionHard() {
			if _, ok := kc.EvictionHard[signal]; !ok {
				kc.EvictionHard[signal] = threshold
			}
		}
	}
	if kc.EvictionPressureTransitionPeriod.Duration == 0 {
		kc.EvictionPressureTransitionPeriod = metav1.Duration{Duration: DefaultEvictionPressureTransitionPeriod}
	}
	if kc.FailCgroupV1 == nil {
		on := true
		kc.FailCgroupV1 = &on
	}
	if kc.MemoryReservationPolicy == "" {
		kc.MemoryReservationPolicy = DefaultMemoryReservationPolicy
	}
	if kc.ConfigMapAndSecretChangeDetectionStrategy == "" {
		kc.ConfigMapAndSecretChangeDetectionStrategy = kubeletv1beta1.WatchChangeDetectionStrategy
	}
}

// setGatedDefaults fills the fields whose v1.37 default depends on a feature gate; Load
// calls it with the final gate, after the file and the flags. The kubelet defaults them
// as it loads the file, with the gates of the command line and the file: the same set.
// Without a config file it defaults them with the gates' defaults, before
// --feature-gates is applied, so --feature-gates=KubeletCrashLoopBackOffMax=false alone
// makes it refuse its own default ("must not be set"); here the default follows the gate.
func setGatedDefaults(kc *KubeletConfiguration, gate featuregate.FeatureGate) {
	if gate.Enabled(gateKubeletCrashLoopBackOffMax) && kc.CrashLoopBackOff.MaxContainerRestartPeriod == nil {
		kc.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: DefaultMaxContainerRestartPeriod}
	}
	if gate.Enabled(gateKubeletEnsureSecretPulledImages) && kc.ImagePullCredentialsVerificationPolicy == "" {
		kc.ImagePullCredentialsVerificationPolicy = DefaultImagePullCredentialsVerificationPolicy
	}
}

// setAuthDefaults is v1beta1's defaulting of authentication and authorization: secure
// unless told otherwise.
func setAuthDefaults(kc *KubeletConfiguration) {
	authn, authz := &kc.Authentication, &kc.Authorization
	if authn.Anonymous.Enabled == nil {
		off := false
		authn.Anonymous.Enabled = &off
	}
	if authn.Webhook.Enabled == nil {
		on := true
		authn.Webhook.Enabled = &on
	}
	if authn.Webhook.CacheTTL.Duration == 0 {
		authn.Webhook.CacheTTL = metav1.Duration{Duration: DefaultAuthenticationCacheTTL}
	}
	if authz.Mode == "" {
		authz.Mode = kubeletv1beta1.KubeletAuthorizationModeWebhook
	}
	if authz.Webhook.CacheAuthorizedTTL.Duration == 0 {
		authz.Webhook.CacheAuthorizedTTL = metav1.Duration{Duration: DefaultAuthorizationCacheAuthorizedTTL}
	}
	if authz.Webhook.CacheUnauthorizedTTL.Duration == 0 {
		authz.Webhook.CacheUnauthorizedTTL = metav1.Duration{Duration: DefaultAuthorizationCacheUnauthorizedTTL}
	}
}

// DefaultMetricsPrefix makes the metric names the kubelet's, so that kubelet dashboards
// and alerts work unchanged. An explicit empty metricsPrefix (or --metrics-prefix=) drops it.
const DefaultMetricsPrefix = "kubelet_"

// NewSimulatorConfiguration returns the SimulatorConfiguration defaults. NodeName is left
// empty; Load resolves it.
func NewSimulatorConfiguration() *SimulatorConfiguration {
	return &SimulatorConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: SimulatorAPIVersion, Kind: SimulatorKind},
		Machine: MachineConfiguration{
			CPU:              resource.MustParse(DefaultCPU),
			Memory:           resource.MustParse(DefaultMemory),
			EphemeralStorage: resource.MustParse(DefaultEphemeralStorage),
			PIDs:             resource.MustParse(DefaultPIDs),
		},
		PLEG: PLEGConfiguration{
			RelistPeriod:    metav1.Duration{Duration: DefaultRelistPeriod},
			RelistThreshold: metav1.Duration{Duration: DefaultRelistThreshold},
			ChannelCapacity: DefaultPLEGChannelCapacity,
		},
		EventedPLEG: EventedPLEGConfiguration{
			RelistPeriod:            metav1.Duration{Duration: DefaultEventedRelistPeriod},
			RelistThreshold:         metav1.Duration{Duration: DefaultEventedRelistThreshold},
			MaxRetries:              DefaultEventedMaxRetries,
			GlobalCacheUpdatePeriod: metav1.Duration{Duration: DefaultGlobalCacheUpdatePeriod},
		},
		EmulatedVersion: release.Newest().String(),
		MetricsPrefix:   DefaultMetricsPrefix,
		Runtime: RuntimeConfiguration{
			Seed:                  DefaultSeed,
			InitContainerDuration: metav1.Duration{Duration: DefaultInitContainerDuration},
			StatusPollPeriod:      metav1.Duration{Duration: DefaultRuntimeStatusPollPeriod},
			ProgramCPU:            resource.MustParse(DefaultProgramCPU),
			Features:              RuntimeFeatures{SupplementalGroupsPolicy: true, UserNamespaces: true},
			Handlers:              []string{"runc"},
		},
	}
}

// hostnameFunc is os.Hostname, replaceable in tests.
var hostnameFunc = os.Hostname

// resolveNodeName returns the node name as the kubelet derives it: the override if set,
// else the configured name, else the host name; trimmed and lower-cased.
func resolveNodeName(override, configured string) string {
	name := strings.TrimSpace(override)
	if name == "" {
		name = strings.TrimSpace(configured)
	}
	if name == "" {
		if h, err := hostnameFunc(); err == nil {
			name = strings.TrimSpace(h)
		}
	}
	if name == "" {
		name = defaultNodeNameWithoutAHostname
	}
	return strings.ToLower(name)
}

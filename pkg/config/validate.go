package config

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/quantity"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
)

// Validate checks every modelled field of cfg against the gate values cfg.FeatureGates
// gives on top of gate (gate itself is not changed). It returns nil or an
// *AggregateError with every problem, each naming the field's JSON path and the value.
func Validate(cfg *Config, gate featuregate.FeatureGate) error {
	local := gate.DeepCopy()
	if err := local.SetFromMap(cfg.FeatureGates); err != nil {
		return &AggregateError{Errs: []error{fmt.Errorf("kubeletConfiguration.featureGates: %w", err)}}
	}
	return validate(&cfg.Kubelet, &cfg.Simulator, local, nil)
}

// flagForPath names the flag that sets each field, for error messages.
var flagForPath = map[string]string{
	"kubeletConfiguration.staticPodPath":                              flagPodManifestPath,
	"kubeletConfiguration.syncFrequency":                              flagSyncFrequency,
	"kubeletConfiguration.fileCheckFrequency":                         flagFileCheckFrequency,
	"kubeletConfiguration.nodeStatusUpdateFrequency":                  flagNodeStatusUpdateFrequency,
	"kubeletConfiguration.maxPods":                                    flagMaxPods,
	"kubeletConfiguration.allowedUnsafeSysctls":                       flagAllowedUnsafeSysctls,
	"kubeletConfiguration.address":                                    flagAddress,
	"kubeletConfiguration.readOnlyPort":                               flagReadOnlyPort,
	"kubeletConfiguration.enableDebuggingHandlers":                    flagEnableDebuggingHandlers,
	"kubeletConfiguration.port":                                       flagPort,
	"kubeletConfiguration.tlsCertFile":                                flagTLSCertFile,
	"kubeletConfiguration.tlsPrivateKeyFile":                          flagTLSPrivateKeyFile,
	"kubeletConfiguration.authentication.webhook.cacheTTL":            flagAuthnWebhookCacheTTL,
	"kubeletConfiguration.authorization.mode":                         flagAuthorizationMode,
	"kubeletConfiguration.authorization.webhook.cacheAuthorizedTTL":   flagAuthzCacheAuthorizedTTL,
	"kubeletConfiguration.authorization.webhook.cacheUnauthorizedTTL": flagAuthzCacheUnauthorizedTTL,
	"kubeletConfiguration.featureGates":                               flagFeatureGates,
	"kubeletConfiguration.runtimeRequestTimeout":                      "runtime-request-timeout",
	"kubeletConfiguration.rotateCertificates":                         flagRotateCertificates,
	"kubeletConfiguration.serverTLSBootstrap":                         flagRotateServerCertificates,
	"kubeletConfiguration.resolvConf":                                 "resolv-conf",
	"kubeletConfiguration.containerLogMaxSize":                        "container-log-max-size",
	"kubeletConfiguration.containerLogMaxFiles":                       "container-log-max-files",
	"kubeletConfiguration.podPidsLimit":                               "pod-max-pids",
	"kubeletConfiguration.contentType":                                "kube-api-content-type",
	"kubeletConfiguration.kubeAPIQPS":                                 "kube-api-qps",
	"kubeletConfiguration.kubeAPIBurst":                               "kube-api-burst",
	"kubeletConfiguration.registerWithTaints":                         "register-with-taints",
	"kubeletConfiguration.eventRecordQPS":                             "event-qps",
	"kubeletConfiguration.eventBurst":                                 "event-burst",
	"kubeletConfiguration.evictionHard":                               "eviction-hard",
	"kubeletConfiguration.evictionSoft":                               "eviction-soft",
	"kubeletConfiguration.evictionSoftGracePeriod":                    "eviction-soft-grace-period",
	"kubeletConfiguration.evictionMinimumReclaim":                     "eviction-minimum-reclaim",
	"kubeletConfiguration.evictionPressureTransitionPeriod":           "eviction-pressure-transition-period",
	"kubeletConfiguration.evictionMaxPodGracePeriod":                  "eviction-max-pod-grace-period",
	"kubeletConfiguration.kubeReserved":                               "kube-reserved",
	"kubeletConfiguration.systemReserved":                             "system-reserved",
	"simulatorConfiguration.nodeName":                                 flagHostnameOverride,
	"simulatorConfiguration.pleg.relistPeriod":                        flagRelistPeriod,
	"simulatorConfiguration.pleg.relistThreshold":                     flagRelistThreshold,
	"simulatorConfiguration.metricsPrefix":                            flagMetricsPrefix,
	"simulatorConfiguration.emulatedVersion":                          flagEmulatedVersion,
	"simulatorConfiguration.runtime.seed":                             flagSeed,
	"simulatorConfiguration.runtime.handlers":                         flagRuntimeHandlers,
	"simulatorConfiguration.allowRemoteDebugging":                     flagAllowRemoteDebugging,
}

// provenance says where a value came from: a flag, the config file, or the defaults.
type provenance struct {
	file         string
	filePaths    map[string]bool
	changedFlags map[string]bool
}

func (p *provenance) source(path string) string {
	if p == nil {
		return ""
	}
	field, _, _ := strings.Cut(path, "[") // a map's entry was set by the map's flag
	if fl, ok := flagForPath[field]; ok && p.changedFlags[fl] {
		return "set by --" + fl
	}
	if p.filePaths[path] {
		return "set in " + p.file
	}
	return "default"
}

// validator collects errors.
type validator struct {
	prov *provenance
	errs []error
}

// invalid records that the field at path has a bad value.
func (v *validator) invalid(path string, value any, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if src := v.prov.source(path); src != "" {
		v.errs = append(v.errs, fmt.Errorf("%s: invalid value %s (%s): %s", path, quote(value), src, msg))
		return
	}
	v.errs = append(v.errs, fmt.Errorf("%s: invalid value %s: %s", path, quote(value), msg))
}

// missing records that a required field at path has no value.
func (v *validator) missing(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	v.errs = append(v.errs, fmt.Errorf("%s: required value: %s", path, msg))
}

// quote formats a value for an error: strings and durations quoted, numbers bare, lists
// and maps as YAML flow collections.
func quote(value any) string {
	switch x := value.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []string:
		items := make([]string, len(x))
		for i, s := range x {
			items[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(items, ", ") + "]"
	case map[string]string:
		items := make([]string, 0, len(x))
		for _, k := range sortedKeys(x) {
			items = append(items, fmt.Sprintf("%q: %q", k, x[k]))
		}
		return "{" + strings.Join(items, ", ") + "}"
	case metav1.Duration:
		return fmt.Sprintf("%q", x.Duration.String())
	case time.Duration:
		return fmt.Sprintf("%q", x.String())
	case resource.Quantity:
		return fmt.Sprintf("%q", x.String())
	}
	return fmt.Sprintf("%v", value)
}

func (v *validator) positiveDuration(path string, d metav1.Duration) {
	if d.Duration <= 0 {
		v.invalid(path, d, "must be greater than 0")
	}
}

func validate(kc *KubeletConfiguration, sc *SimulatorConfiguration, gate featuregate.FeatureGate, prov *provenance) error {
	v := &validator{prov: prov}
	validateKubelet(v, kc, gate)
	validateSimulator(v, sc)
	validateRemoteDebugging(v, kc, sc)
	validateRelease(v, sc.Release())
	if len(v.errs) == 0 {
		return nil
	}
	return &AggregateError{Errs: v.errs}
}

// Eviction signals the kubelet accepts (pkg/kubelet/eviction/api/types.go, v1.37).
var evictionSignals = map[string]bool{
	"memory.available":            true,
	"allocatableMemory.available": true,
	"nodefs.available":            true,
	"nodefs.inodesFree":           true,
	"imagefs.available":           true,
	"imagefs.inodesFree":          true,
	"containerfs.available":       true,
	"containerfs.inodesFree":      true,
	"pid.available":               true,
}

// Resources that systemReserved and kubeReserved may hold.
var reservableResources = []string{"cpu", "memory", "ephemeral-storage", "pid"}

func validateKubelet(v *validator, kc *KubeletConfiguration, gate featuregate.FeatureGate) {
	switch m := kc.ConfigMapAndSecretChangeDetectionStrategy; m {
	case kubeletv1beta1.WatchChangeDetectionStrategy, kubeletv1beta1.TTLCacheChangeDetectionStrategy, kubeletv1beta1.GetChangeDetectionStrategy:
	default:
		// Upstream's NewMainKubelet refuses it; here it is refused with the file's field.
		v.invalid("kubeletConfiguration.configMapAndSecretChangeDetectionStrategy", string(m), "unknown configmap and secret manager mode: %v (must be Watch, Cache or Get)", m)
	}
	const p = "kubeletConfiguration."
	v.positiveDuration(p+"syncFrequency", kc.SyncFrequency)
	v.positiveDuration(p+"fileCheckFrequency", kc.FileCheckFrequency)
	v.positiveDuration(p+"nodeStatusUpdateFrequency", kc.NodeStatusUpdateFrequency)
	v.positiveDuration(p+"nodeStatusReportFrequency", kc.NodeStatusReportFrequency)
	v.positiveDuration(p+"runtimeRequestTimeout", kc.RuntimeRequestTimeout)
	if kc.NodeLeaseDurationSeconds <= 0 {
		v.invalid(p+"nodeLeaseDurationSeconds", kc.NodeLeaseDurationSeconds, "must be greater than 0")
	}
	if kc.MaxPods < 0 {
		v.invalid(p+"maxPods", kc.MaxPods, "must not be a negative number")
	}
	if kc.KubeAPIQPS != nil && *kc.KubeAPIQPS < 0 {
		v.invalid(p+"kubeAPIQPS", *kc.KubeAPIQPS, "must not be a negative number")
	}
	if kc.KubeAPIBurst < 0 {
		v.invalid(p+"kubeAPIBurst", kc.KubeAPIBurst, "must not be a negative number")
	}
	if kc.EventRecordQPS != nil && *kc.EventRecordQPS < 0 {
		v.invalid(p+"eventRecordQPS", *kc.EventRecordQPS, "must not be a negative number")
	}
	if kc.EventBurst < 0 {
		v.invalid(p+"eventBurst", kc.EventBurst, "must not be a negative number")
	}
	for i, t := range kc.RegisterWithTaints {
		path := fmt.Sprintf("%sregisterWithTaints[%d]", p, i)
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			v.invalid(path+".key", t.Key, "%s", strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			v.invalid(path+".value", t.Value, "%s", strings.Join(msgs, "; "))
		}
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			v.invalid(path+".effect", string(t.Effect), "must be NoSchedule, PreferNoSchedule or NoExecute")
		}
	}
	// The kubelet takes any string and fails at its first API client; the two media types
	// the API server's clients encode are named here instead, with the field.
	if ct := kc.ContentType; ct != "" && ct != "application/json" && ct != DefaultContentType {
		v.invalid(p+"contentType", ct, "must be application/json or %s", DefaultContentType)
	}
	for _, s := range kc.AllowedUnsafeSysctls {
		if err := admission.CheckSysctlPattern(s); err != nil {
			v.invalid(p+"allowedUnsafeSysctls", s, "%v", err)
		}
	}
	if q, err := quantity.Parse(kc.ContainerLogMaxSize); err != nil || q.Sign() <= 0 {
		v.invalid(p+"containerLogMaxSize", kc.ContainerLogMaxSize, "must be a positive quantity such as 10Mi")
	}
	if kc.ContainerLogMaxFiles != nil && *kc.ContainerLogMaxFiles < 2 {
		v.invalid(p+"containerLogMaxFiles", *kc.ContainerLogMaxFiles, "must be greater than 1")
	}
	if net.ParseIP(kc.Address) == nil {
		v.invalid(p+"address", kc.Address, "must be an IP address (127.0.0.1, 0.0.0.0, ::)")
	}
	if kc.ReadOnlyPort < 0 || kc.ReadOnlyPort > 65535 {
		v.invalid(p+"readOnlyPort", kc.ReadOnlyPort, "must be between 0 and 65535, inclusive (0 picks a free port)")
	}

	if kc.Port < 0 || kc.Port > 65535 {
		v.invalid(p+"port", kc.Port, "must be between 0 and 65535, inclusive (0 picks a free port)")
	}
	if (kc.TLSCertFile == "") != (kc.TLSPrivateKeyFile == "") {
		v.invalid(p+"tlsCertFile", kc.TLSCertFile, "tlsCertFile and tlsPrivateKeyFile must be given together (tlsPrivateKeyFile is %q)", kc.TLSPrivateKeyFile)
	}
	validateAuth(v, kc)

	// Graceful node shutdown, with upstream's rules.
	grace, critical := kc.ShutdownGracePeriod.Duration, kc.ShutdownGracePeriodCriticalPods.Duration
	if gate.Enabled(features.GracefulNodeShutdown) {
		if critical > grace {
			v.invalid(p+"shutdownGracePeriodCriticalPods", kc.ShutdownGracePeriodCriticalPods, "must be <= shutdownGracePeriod %s", grace)
		}
		if grace < 0 || (grace > 0 && grace < time.Second) {
			v.invalid(p+"shutdownGracePeriod", kc.ShutdownGracePeriod, "must be either zero or otherwise >= 1 sec")
		}
		if critical < 0 || (critical > 0 && critical < time.Second) {
			v.invalid(p+"shutdownGracePeriodCriticalPods", kc.ShutdownGracePeriodCriticalPods, "must be either zero or otherwise >= 1 sec")
		}
	} else if grace > 0 || critical > 0 {
		v.invalid(p+"shutdownGracePeriod", kc.ShutdownGracePeriod, "specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate %s", features.GracefulNodeShutdown)
	}

	for _, signal := range sortedKeys(kc.EvictionHard) {
		validateEvictionThreshold(v, p+"evictionHard["+signal+"]", signal, kc.EvictionHard[signal])
	}
	for _, signal := range sortedKeys(kc.EvictionSoft) {
		validateEvictionThreshold(v, p+"evictionSoft["+signal+"]", signal, kc.EvictionSoft[signal])
		if _, ok := kc.EvictionSoftGracePeriod[signal]; !ok {
			v.invalid(p+"evictionSoft["+signal+"]", kc.EvictionSoft[signal], "grace period must be specified for the soft eviction threshold %s", signal)
		}
	}
	for _, signal := range sortedKeys(kc.EvictionSoftGracePeriod) {
		path, val := p+"evictionSoftGracePeriod["+signal+"]", kc.EvictionSoftGracePeriod[signal]
		if !evictionSignals[signal] {
			v.invalid(path, val, "unsupported eviction signal %s", signal)
			continue
		}
		if d, err := time.ParseDuration(val); err != nil || d < 0 {
			v.invalid(path, val, "must be a duration of at least 0 (e.g. 1m30s)")
		}
	}
	for _, signal := range sortedKeys(kc.EvictionMinimumReclaim) {
		path, val := p+"evictionMinimumReclaim["+signal+"]", kc.EvictionMinimumReclaim[signal]
		if !evictionSignals[signal] {
			v.invalid(path, val, "unsupported eviction signal %s", signal)
			continue
		}
		if pct, ok := strings.CutSuffix(val, "%"); ok {
			if f, err := strconv.ParseFloat(pct, 64); err != nil || f < 0 || f > 100 {
				v.invalid(path, val, "must be a percentage in [0%%,100%%] or a quantity")
			}
		} else if q, err := quantity.Parse(val); err != nil || q.Sign() < 0 {
			v.invalid(path, val, "eviction reclaim threshold %s must be non-negative", signal)
		}
	}
	if kc.EvictionMaxPodGracePeriod < 0 {
		v.invalid(p+"evictionMaxPodGracePeriod", kc.EvictionMaxPodGracePeriod, "must not be negative")
	}
	if kc.EvictionPressureTransitionPeriod.Duration < 0 {
		v.invalid(p+"evictionPressureTransitionPeriod", kc.EvictionPressureTransitionPeriod, "must not be negative")
	}
	validateReserved(v, p+"systemReserved", kc.SystemReserved)
	validateReserved(v, p+"kubeReserved", kc.KubeReserved)
	validateV137Fields(v, kc, gate)
}

// validateAuth checks the secure port's authentication and authorization: a known mode,
// and caches that cannot be negative.
func validateAuth(v *validator, kc *KubeletConfiguration) {
	const p = "kubeletConfiguration."
	switch string(kc.Authorization.Mode) {
	case AuthorizationModeAlwaysAllow, AuthorizationModeWebhook:
	default:
		v.invalid(p+"authorization.mode", string(kc.Authorization.Mode), "must be one of %s, %s", AuthorizationModeAlwaysAllow, AuthorizationModeWebhook)
	}
	for path, d := range map[string]metav1.Duration{
		p + "authentication.webhook.cacheTTL":            kc.Authentication.Webhook.CacheTTL,
		p + "authorization.webhook.cacheAuthorizedTTL":   kc.Authorization.Webhook.CacheAuthorizedTTL,
		p + "authorization.webhook.cacheUnauthorizedTTL": kc.Authorization.Webhook.CacheUnauthorizedTTL,
	} {
		if d.Duration < 0 {
			v.invalid(path, d, "must not be negative")
		}
	}
}

// validateEvictionThreshold checks one evictionHard entry as the kubelet's eviction
// manager parses it: a known signal and a positive quantity or a percentage in [0,100].
func validateEvictionThreshold(v *validator, path, signal, value string) {
	if !evictionSignals[signal] {
		v.invalid(path, value, "unsupported eviction signal %s (one of %s)", signal, strings.Join(sortedKeys(evictionSignals), ", "))
		return
	}
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			v.invalid(path, value, "not a percentage")
			return
		}
		if f < 0 || f > 100 {
			v.invalid(path, value, "eviction percentage threshold %s must be >= 0%% and <= 100%%", signal)
		}
		return
	}
	q, err := quantity.Parse(value)
	if err != nil {
		v.invalid(path, value, "not a quantity or percentage: %v", err)
		return
	}
	if q.Sign() <= 0 {
		v.invalid(path, value, "eviction threshold %s must be positive", signal)
	}
}

func validateReserved(v *validator, path string, m map[string]string) {
	for _, name := range sortedKeys(m) {
		known := false
		for _, r := range reservableResources {
			known = known || name == r
		}
		if !known {
			v.invalid(path+"["+name+"]", m[name], "cannot reserve %q resource (one of %s)", name, strings.Join(reservableResources, ", "))
			continue
		}
		q, err := quantity.Parse(m[name])
		if err != nil {
			v.invalid(path+"["+name+"]", m[name], "not a quantity: %v", err)
			continue
		}
		if q.Sign() < 0 {
			v.invalid(path+"["+name+"]", m[name], "resource quantity for %q cannot be negative", name)
		}
	}
}

// Largest machine quantities: 10^18 millicores, 2^60 bytes or pids.
var (
	maxMachineCPU    = resource.MustParse("1P")
	maxMachineAmount = resource.MustParse("1Ei")
)

// metricNamePrefix is what may precede a Prometheus metric name.
var metricNamePrefix = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

func validateSimulator(v *validator, sc *SimulatorConfiguration) {
	const p = "simulatorConfiguration."
	if errs := validation.IsDNS1123Subdomain(sc.NodeName); len(errs) > 0 {
		v.invalid(p+"nodeName", sc.NodeName, "a node name %s", strings.Join(errs, "; "))
	}
	// The simulator counts CPU in millicores and the rest in units, as int64: a bigger
	// quantity would read back negative (9223372036854775808) or as zero (1e400).
	positiveQuantity := func(path string, q resource.Quantity, max resource.Quantity) {
		switch {
		case q.Sign() <= 0:
			v.invalid(path, q, "must be greater than 0")
		case q.Cmp(max) > 0:
			v.invalid(path, q, "must be at most %s", max.String())
		}
	}
	positiveQuantity(p+"machine.cpu", sc.Machine.CPU, maxMachineCPU)
	positiveQuantity(p+"machine.memory", sc.Machine.Memory, maxMachineAmount)
	positiveQuantity(p+"machine.ephemeralStorage", sc.Machine.EphemeralStorage, maxMachineAmount)
	positiveQuantity(p+"machine.pids", sc.Machine.PIDs, maxMachineAmount)
	if sc.Machine.PIDs.Sign() > 0 && sc.Machine.PIDs.MilliValue()%1000 != 0 {
		v.invalid(p+"machine.pids", sc.Machine.PIDs, "must be a whole number")
	}

	v.positiveDuration(p+"pleg.relistPeriod", sc.PLEG.RelistPeriod)
	v.positiveDuration(p+"pleg.relistThreshold", sc.PLEG.RelistThreshold)
	if sc.PLEG.ChannelCapacity < 1 {
		v.invalid(p+"pleg.channelCapacity", sc.PLEG.ChannelCapacity, "must be at least 1")
	}

	v.positiveDuration(p+"eventedPLEG.relistPeriod", sc.EventedPLEG.RelistPeriod)
	v.positiveDuration(p+"eventedPLEG.relistThreshold", sc.EventedPLEG.RelistThreshold)
	// Zero is rejected, not defaulted: the evented PLEG would silently read 0 as its
	// default of 5, and a SimulatorConfiguration field written as zero is an error.
	if sc.EventedPLEG.MaxRetries < 1 {
		v.invalid(p+"eventedPLEG.maxRetries", sc.EventedPLEG.MaxRetries, "must be at least 1")
	}
	v.positiveDuration(p+"eventedPLEG.globalCacheUpdatePeriod", sc.EventedPLEG.GlobalCacheUpdatePeriod)

	// Likewise: the fake runtime reads 0 as its 1s default, so "0s" would not mean "at once".
	v.positiveDuration(p+"runtime.initContainerDuration", sc.Runtime.InitContainerDuration)
	v.positiveDuration(p+"runtime.statusPollPeriod", sc.Runtime.StatusPollPeriod)
	positiveQuantity(p+"runtime.programCPU", sc.Runtime.ProgramCPU, maxMachineCPU)
	if _, err := behavior.ParseValue(sc.Runtime.DefaultBehavior); err != nil {
		v.invalid(p+"runtime.defaultBehavior", sc.Runtime.DefaultBehavior, "%v", err)
	}
	seenHandlers := map[string]bool{}
	for i, h := range sc.Runtime.Handlers {
		path := fmt.Sprintf("%sruntime.handlers[%d]", p, i)
		if errs := validation.IsDNS1123Label(h); len(errs) > 0 {
			v.invalid(path, h, "%s (the default handler, \"\", is always there)", strings.Join(errs, "; "))
		} else if seenHandlers[h] {
			v.invalid(path, h, "duplicate handler")
		}
		seenHandlers[h] = true
	}
	for i := range sc.Runtime.Faults {
		if err := sc.Runtime.Faults[i].Validate(); err != nil {
			path := fmt.Sprintf("%sruntime.faults[%d]", p, i)
			if src := v.prov.source(path); src != "" && src != "default" {
				v.errs = append(v.errs, fmt.Errorf("%s (%s): %w", path, src, err))
			} else {
				v.errs = append(v.errs, fmt.Errorf("%s: %w", path, err))
			}
		}
	}

	if sc.MetricsPrefix != "" && !metricNamePrefix.MatchString(sc.MetricsPrefix) {
		v.invalid(p+"metricsPrefix", sc.MetricsPrefix, "must match %s", metricNamePrefix)
	}
}

// validateRemoteDebugging refuses the handlers that change the node (fault injection) or
// show its memory (pprof) on an address beyond loopback, unless allowRemoteDebugging
// says that is meant: both ports bind kubeletConfiguration.address, and the read-only
// one has no authentication at all.
func validateRemoteDebugging(v *validator, kc *KubeletConfiguration, sc *SimulatorConfiguration) {
	if sc.AllowRemoteDebugging || IsLoopback(kc.Address) {
		return
	}
	var what []string
	if kc.EnableDebuggingHandlers != nil && *kc.EnableDebuggingHandlers {
		what = append(what, "the fault-injection handlers (enableDebuggingHandlers: true)")
	}
	if kc.EnableProfilingHandler != nil && *kc.EnableProfilingHandler {
		what = append(what, "the profiling handler (enableProfilingHandler: true)")
	}
	if len(what) == 0 || net.ParseIP(kc.Address) == nil {
		return // an address that is no IP has its own error
	}
	v.invalid("kubeletConfiguration.address", kc.Address,
		"not a loopback address, and %s would be served on it to anyone who can reach the port; bind 127.0.0.1 or ::1, or pass --%s (simulatorConfiguration.allowRemoteDebugging: true) if that is meant",
		strings.Join(what, " and "), flagAllowRemoteDebugging)
}

// IsLoopback reports whether address (kubeletConfiguration.address) only accepts
// connections from this machine: 127.0.0.0/8, ::1 or localhost.
func IsLoopback(address string) bool {
	if strings.EqualFold(address, "localhost") {
		return true
	}
	ip := net.ParseIP(address)
	return ip != nil && ip.IsLoopback()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

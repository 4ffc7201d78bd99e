package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Flag names; those the kubelet has are named like the kubelet's.
const (
	flagConfig                    = "config"
	flagFeatureGates              = "feature-gates"
	flagPodManifestPath           = "pod-manifest-path"
	flagHostnameOverride          = "hostname-override"
	flagKubeconfig                = "kubeconfig"
	flagNodeLabels                = "node-labels"
	flagSyncFrequency             = "sync-frequency"
	flagFileCheckFrequency        = "file-check-frequency"
	flagNodeStatusUpdateFrequency = "node-status-update-frequency"
	flagMaxPods                   = "max-pods"
	flagAllowedUnsafeSysctls      = "allowed-unsafe-sysctls"
	flagClusterDNS                = "cluster-dns"
	flagClusterDomain             = "cluster-domain"
	flagAddress                   = "address"
	flagReadOnlyPort              = "read-only-port"
	flagEnableDebuggingHandlers   = "enable-debugging-handlers"
	flagRelistPeriod              = "relist-period"
	flagRelistThreshold           = "relist-threshold"
	flagMetricsPrefix             = "metrics-prefix"
	flagEmulatedVersion           = "emulated-version"
	flagSeed                      = "seed"
	flagProgramCPU                = "program-cpu"
	flagRuntimeHandlers           = "runtime-handlers"
	flagAllowRemoteDebugging      = "allow-remote-debugging"
	flagPort                      = "port"
	flagTLSCertFile               = "tls-cert-file"
	flagTLSPrivateKeyFile         = "tls-private-key-file"
	flagCertDir                   = "cert-dir"
	flagBootstrapKubeconfig       = "bootstrap-kubeconfig"
	flagRotateCertificates        = "rotate-certificates"
	flagRotateServerCertificates  = "rotate-server-certificates"
	flagNodeIP                    = "node-ip"
	flagRecord                    = "record"
	flagRecordMaxBytes            = "record-max-bytes"
	flagNodeCount                 = "node-count"
	flagAnonymousAuth             = "anonymous-auth"
	flagAuthnWebhook              = "authentication-token-webhook"
	flagAuthnWebhookCacheTTL      = "authentication-token-webhook-cache-ttl"
	flagClientCAFile              = "client-ca-file"
	flagAuthorizationMode         = "authorization-mode"
	flagAuthzCacheAuthorizedTTL   = "authorization-webhook-cache-authorized-ttl"
	flagAuthzCacheUnauthorizedTTL = "authorization-webhook-cache-unauthorized-ttl"
)

// commandLine holds the values only flags can set (upstream's KubeletFlags).
type commandLine struct {
	configFile          string
	hostnameOverride    string
	kubeconfig          string
	nodeLabels          map[string]string
	certDir             string
	bootstrapKubeconfig string
	nodeIP              string
	nodeCount           int
	record              string
	recordMaxBytes      int64
}

// NewFlagSet returns the daemon's flags bound to throwaway defaults, for help output. The
// --feature-gates usage lists knownFeatures (FeatureGate.KnownFeatures()).
func NewFlagSet(name string, knownFeatures []string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	addFlags(fs, &commandLine{}, NewKubeletConfiguration(), NewSimulatorConfiguration(), knownFeatures)
	addUpstreamFlags(fs)
	return fs
}

// addFlags registers every flag on fs, writing into cl, kc and sc. Defaults shown are the
// current values of kc and sc.
func addFlags(fs *pflag.FlagSet, cl *commandLine, kc *KubeletConfiguration, sc *SimulatorConfiguration, knownFeatures []string) {
	fs.StringVar(&cl.configFile, flagConfig, cl.configFile,
		"The daemon will load its initial configuration from this file: a multi-document YAML with a "+
			"kubelet.config.k8s.io/v1beta1 KubeletConfiguration and/or a minikubelet.io/v1alpha1 SimulatorConfiguration. "+
			"Relative paths start at the current working directory. Command-line flags override configuration from this file.")
	fs.Var(&mapStringBool{m: &kc.FeatureGates}, flagFeatureGates,
		"A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n"+
			strings.Join(knownFeatures, "\n"))
	fs.StringVar(&kc.StaticPodPath, flagPodManifestPath, kc.StaticPodPath,
		"Path to the directory containing static pod files to run, or the path to a single static pod file. Files starting with dots will be ignored. (kubeletConfiguration.staticPodPath)")
	fs.Var(&mapStringString{m: &cl.nodeLabels}, flagNodeLabels,
		"Labels to add when registering the node, key=value pairs separated by ','. Labels in the 'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set, as the kubelet's.")
	fs.StringVar(&cl.kubeconfig, flagKubeconfig, cl.kubeconfig,
		"Path to a kubeconfig file: join that cluster as a node (cluster mode). Without it the daemon runs standalone, with static pods only.")
	fs.StringVar(&cl.hostnameOverride, flagHostnameOverride, cl.hostnameOverride,
		"If non-empty, will use this string as identification instead of the actual hostname. (overrides simulatorConfiguration.nodeName)")
	fs.DurationVar(&kc.SyncFrequency.Duration, flagSyncFrequency, kc.SyncFrequency.Duration,
		"Max period between synchronizing running containers and config. (kubeletConfiguration.syncFrequency)")
	fs.DurationVar(&kc.FileCheckFrequency.Duration, flagFileCheckFrequency, kc.FileCheckFrequency.Duration,
		"Duration between checking config files for new data. (kubeletConfiguration.fileCheckFrequency)")
	fs.DurationVar(&kc.NodeStatusUpdateFrequency.Duration, flagNodeStatusUpdateFrequency, kc.NodeStatusUpdateFrequency.Duration,
		"Specifies how often the daemon computes node status and posts it when it changed. (kubeletConfiguration.nodeStatusUpdateFrequency)")
	fs.Int32Var(&kc.MaxPods, flagMaxPods, kc.MaxPods,
		"Number of Pods that can run on this node. (kubeletConfiguration.maxPods)")
	fs.StringSliceVar(&kc.ClusterDNS, flagClusterDNS, kc.ClusterDNS,
		"Comma-separated list of DNS server IP addresses, written into the /etc/resolv.conf of pods with dnsPolicy ClusterFirst. (kubeletConfiguration.clusterDNS)")
	fs.StringVar(&kc.ClusterDomain, flagClusterDomain, kc.ClusterDomain,
		"Domain for this cluster: pods with dnsPolicy ClusterFirst search it. (kubeletConfiguration.clusterDomain)")
	fs.StringSliceVar(&kc.AllowedUnsafeSysctls, flagAllowedUnsafeSysctls, kc.AllowedUnsafeSysctls,
		"Comma-separated allowlist of unsafe sysctls or unsafe sysctl patterns (ending in *) that pods may set; a pod setting another unsafe one is rejected with SysctlForbidden. (kubeletConfiguration.allowedUnsafeSysctls)")
	fs.StringVar(&kc.Address, flagAddress, kc.Address,
		"The IP address for the HTTP servers to serve on (set to '0.0.0.0' or '::' for listening on all interfaces). (kubeletConfiguration.address)")
	fs.Int32Var(&kc.ReadOnlyPort, flagReadOnlyPort, kc.ReadOnlyPort,
		"The port of the HTTP API (read-only endpoints, metrics, and the debug handlers when enabled); 0 picks a free port, logged as \"Serving HTTP\" address=\"HOST:PORT\". (kubeletConfiguration.readOnlyPort)")
	fs.Var(&boolPtrValue{p: &kc.EnableDebuggingHandlers}, flagEnableDebuggingHandlers,
		"true: the fault-injection HTTP handlers too; false: no containerLogs, exec, attach or portForward on the secure port either. Unset: those on the secure port only. (kubeletConfiguration.enableDebuggingHandlers)")
	fs.Int32Var(&kc.Port, flagPort, kc.Port,
		"The port for the daemon's HTTPS API (the kubelet's secure port); 0 picks a free port. (kubeletConfiguration.port)")
	fs.StringVar(&kc.TLSCertFile, flagTLSCertFile, kc.TLSCertFile,
		"File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any, concatenated after server cert). If --tls-cert-file and --tls-private-key-file are not provided, a self-signed certificate and key are generated for the node's hostname and addresses and saved to --cert-dir if one is given. (kubeletConfiguration.tlsCertFile)")
	fs.StringVar(&kc.TLSPrivateKeyFile, flagTLSPrivateKeyFile, kc.TLSPrivateKeyFile,
		"File containing x509 private key matching --tls-cert-file. (kubeletConfiguration.tlsPrivateKeyFile)")
	fs.StringVar(&cl.certDir, flagCertDir, cl.certDir,
		"The directory where the self-signed TLS certificate and key (kubelet.crt, kubelet.key) are kept and reused. Empty (the default; the kubelet's is /var/lib/kubelet/pki): generated anew in memory at every start. Ignored when --tls-cert-file and --tls-private-key-file are given.")
	fs.StringVar(&cl.bootstrapKubeconfig, flagBootstrapKubeconfig, cl.bootstrapKubeconfig,
		"Path to a kubeconfig file that will be used to get client certificate for kubelet. If the file specified by --kubeconfig does not exist, the bootstrap kubeconfig is used to request a client certificate from the API server. On success, a kubeconfig file referencing the generated client certificate and key is written to the path specified by --kubeconfig. The client certificate and key file will be stored in the directory pointed by --cert-dir (required here). With --node-count, each node requests its own and writes <cert-dir>/<its name>/kubeconfig.")
	fs.BoolVar(&kc.RotateCertificates, flagRotateCertificates, kc.RotateCertificates,
		"Auto rotate the kubelet client certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches. (kubeletConfiguration.rotateCertificates)")
	fs.BoolVar(&kc.ServerTLSBootstrap, flagRotateServerCertificates, kc.ServerTLSBootstrap,
		"Auto-request and rotate the kubelet serving certificates by requesting new certificates from the kube-apiserver when the certificate expiration approaches. Requires the RotateKubeletServerCertificate feature gate to be enabled, and approval of the submitted CertificateSigningRequest objects. (kubeletConfiguration.serverTLSBootstrap)")
	fs.IntVar(&cl.nodeCount, flagNodeCount, 1,
		"How many simulated nodes this process runs (density: no kubelet flag). Node i (0 to N-1) is named <node name>-i and has everything of its own: runtime, PLEG, pod workers, node status, lease, metrics, and the static pods of <staticPodPath>/<its name>/ (created). Its ports are --port+i and --read-only-port+i (0: each picks a free one), and its certificate is kept in <cert-dir>/<its name>/. 1 (the default): one node, named and laid out as without this flag.")
	fs.StringVar(&cl.record, flagRecord, cl.record,
		"Flight recorder: write what comes into the node from outside (manifest files as they change, faults added and cleared, the API server's pods and deletions, the shutdown signal) to this file as it happens, as a scenario that \"minikubelet simulate -f\" replays on a virtual clock (docs/record.md). One node only (no flag of the kubelet's).")
	fs.Int64Var(&cl.recordMaxBytes, flagRecordMaxBytes, DefaultRecordMaxBytes,
		"The most --record writes: at this size the recording ends (the node goes on), closed so that it still replays up to that instant.")
	fs.StringVar(&cl.nodeIP, flagNodeIP, cl.nodeIP,
		"IP address of the node (its InternalIP), which the API server reaches the secure port at. Default: --address when it is a specific address, else 127.0.0.1.")
	fs.Var(&boolPtrValue{p: &kc.Authentication.Anonymous.Enabled}, flagAnonymousAuth,
		"Enables anonymous requests to the secure port. Requests that are not rejected by another authentication method are treated as anonymous requests. Anonymous requests have a username of system:anonymous, and a group name of system:unauthenticated. (kubeletConfiguration.authentication.anonymous.enabled)")
	fs.Lookup(flagAnonymousAuth).NoOptDefVal = "true"
	fs.Var(&boolPtrValue{p: &kc.Authentication.Webhook.Enabled}, flagAuthnWebhook,
		"Use the TokenReview API to determine authentication for bearer tokens. (kubeletConfiguration.authentication.webhook.enabled)")
	fs.Lookup(flagAuthnWebhook).NoOptDefVal = "true"
	fs.DurationVar(&kc.Authentication.Webhook.CacheTTL.Duration, flagAuthnWebhookCacheTTL, kc.Authentication.Webhook.CacheTTL.Duration,
		"The duration to cache responses from the webhook token authenticator. (kubeletConfiguration.authentication.webhook.cacheTTL)")
	fs.StringVar(&kc.Authentication.X509.ClientCAFile, flagClientCAFile, kc.Authentication.X509.ClientCAFile,
		"If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate. (kubeletConfiguration.authentication.x509.clientCAFile)")
	fs.Var((*authzModeValue)(&kc.Authorization.Mode), flagAuthorizationMode,
		"Authorization mode for the secure port. Options are AlwaysAllow or Webhook. Webhook mode uses the SubjectAccessReview API to determine authorization. (kubeletConfiguration.authorization.mode)")
	fs.DurationVar(&kc.Authorization.Webhook.CacheAuthorizedTTL.Duration, flagAuthzCacheAuthorizedTTL, kc.Authorization.Webhook.CacheAuthorizedTTL.Duration,
		"The duration to cache 'authorized' responses from the webhook authorizer. (kubeletConfiguration.authorization.webhook.cacheAuthorizedTTL)")
	fs.DurationVar(&kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration, flagAuthzCacheUnauthorizedTTL, kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration,
		"The duration to cache 'unauthorized' responses from the webhook authorizer. (kubeletConfiguration.authorization.webhook.cacheUnauthorizedTTL)")
	fs.Lookup(flagEnableDebuggingHandlers).NoOptDefVal = "true"
	addResourceFlags(fs, kc)
	addAPIClientFlags(fs, kc)

	fs.DurationVar(&sc.PLEG.RelistPeriod.Duration, flagRelistPeriod, sc.PLEG.RelistPeriod.Duration,
		"Period of the generic PLEG's relist. (simulatorConfiguration.pleg.relistPeriod)")
	fs.DurationVar(&sc.PLEG.RelistThreshold.Duration, flagRelistThreshold, sc.PLEG.RelistThreshold.Duration,
		"Time without a successful relist after which the PLEG health check fails. (simulatorConfiguration.pleg.relistThreshold)")
	fs.StringVar(&sc.EmulatedVersion, flagEmulatedVersion, sc.EmulatedVersion,
		"The kubelet release the node is: 1.34, 1.35, 1.36 or 1.37. Its feature gates, KubeletConfiguration fields, reported version and behaviour are that release's. (simulatorConfiguration.emulatedVersion)")
	fs.StringVar(&sc.MetricsPrefix, flagMetricsPrefix, sc.MetricsPrefix,
		"Prefix of every metric name; the default gives the kubelet's names, --metrics-prefix= none. (simulatorConfiguration.metricsPrefix)")
	fs.Int64Var(&sc.Runtime.Seed, flagSeed, sc.Runtime.Seed,
		"Seed of the fake runtime's random choices. (simulatorConfiguration.runtime.seed)")
	fs.Var((*quantityValue)(&sc.Runtime.ProgramCPU), flagProgramCPU,
		"The real CPU the daemon spends running containers' programs, all its nodes together (e.g. 500m, 1). (simulatorConfiguration.runtime.programCPU)")
	fs.StringSliceVar(&sc.Runtime.Handlers, flagRuntimeHandlers, sc.Runtime.Handlers,
		"The fake runtime's handlers besides its default one, which RuntimeClasses name (e.g. runc,kata); a pod whose RuntimeClass names another gets no sandbox. (simulatorConfiguration.runtime.handlers)")
	fs.BoolVar(&sc.AllowRemoteDebugging, flagAllowRemoteDebugging, sc.AllowRemoteDebugging,
		"Serve the fault-injection handlers (--enable-debugging-handlers=true) and the profiling handler (enableProfilingHandler) on a non-loopback --address. Without it the daemon refuses to start with that combination. (simulatorConfiguration.allowRemoteDebugging)")
}

// quantityValue is a resource.Quantity flag (--program-cpu=500m).
type quantityValue resource.Quantity

func (q *quantityValue) String() string { return (*resource.Quantity)(q).String() }
func (q *quantityValue) Type() string   { return "quantity" }
func (q *quantityValue) Set(s string) error {
	v, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a quantity", s)
	}
	*q = quantityValue(v)
	return nil
}

// mapStringBool is the --feature-gates value, with the semantics of component-base's
// cliflag.MapStringBool: the first Set of a parse replaces the map (so file values do not
// leak into the flag's view), later ones add to it, so repeated flags accumulate.
type mapStringBool struct {
	m           *map[string]bool
	initialized bool
}

func (v *mapStringBool) String() string {
	if v.m == nil || *v.m == nil {
		return ""
	}
	pairs := make([]string, 0, len(*v.m))
	for k, b := range *v.m {
		pairs = append(pairs, fmt.Sprintf("%s=%t", k, b))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (v *mapStringBool) Set(value string) error {
	if !v.initialized || *v.m == nil {
		*v.m = make(map[string]bool)
		v.initialized = true
	}
	for _, s := range strings.Split(value, ",") {
		if s == "" {
			continue
		}
		k, raw, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("malformed pair, expect string=bool")
		}
		k, raw = strings.TrimSpace(k), strings.TrimSpace(raw)
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("invalid value of %s: %s, err: %v", k, raw, err)
		}
		(*v.m)[k] = b
	}
	return nil
}

func (v *mapStringBool) Type() string { return "mapStringBool" }

// boolPtrValue sets a *bool field, so that "not set" stays distinguishable.
type boolPtrValue struct{ p **bool }

func (v *boolPtrValue) String() string {
	if v.p == nil || *v.p == nil {
		return "false"
	}
	return strconv.FormatBool(**v.p)
}

func (v *boolPtrValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.p = &b
	return nil
}

func (v *boolPtrValue) Type() string { return "bool" }

// authzModeValue sets the authorization mode (a named string type).
type authzModeValue kubeletv1beta1.KubeletAuthorizationMode

func (v *authzModeValue) String() string     { return string(*v) }
func (v *authzModeValue) Set(s string) error { *v = authzModeValue(s); return nil }
func (v *authzModeValue) Type() string       { return "string" }

// noOpValue stands in for global flags (klog's) in the second parse, so they are accepted
// but not applied twice.
type noOpValue struct{ typ string }

func (noOpValue) String() string   { return "" }
func (noOpValue) Set(string) error { return nil }
func (v noOpValue) Type() string   { return v.typ }

// mapStringString is the --node-labels value: key=value pairs separated by commas; each Set
// adds to the map.
type mapStringString struct{ m *map[string]string }

func (v *mapStringString) String() string {
	if v.m == nil || *v.m == nil {
		return ""
	}
	pairs := make([]string, 0, len(*v.m))
	for k, val := range *v.m {
		pairs = append(pairs, k+"="+val)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (v *mapStringString) Set(value string) error {
	if *v.m == nil {
		*v.m = map[string]string{}
	}
	for _, s := range strings.Split(value, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		k, val, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("malformed pair %q, expect key=value", s)
		}
		(*v.m)[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return nil
}

func (v *mapStringString) Type() string { return "mapStringString" }

// addAPIClientFlags registers the kubelet's flags for its API clients (cluster mode) and the
// taints it registers the node with; deprecated upstream in favour of the config file too.
func addAPIClientFlags(fs *pflag.FlagSet, kc *KubeletConfiguration) {
	fs.StringVar(&kc.ContentType, "kube-api-content-type", kc.ContentType,
		"Content type of requests sent to apiserver (default application/vnd.kubernetes.protobuf). (kubeletConfiguration.contentType)")
	fs.Var(&int32PtrValue{p: &kc.KubeAPIQPS}, "kube-api-qps",
		"QPS to use while talking with kubernetes apiserver (default 50), per node of --node-count. The number must be >= 0. If 0 will use DefaultQPS: 5. Doesn't cover events and node heartbeat apis, which rate limiting is controlled by a different set of flags. (kubeletConfiguration.kubeAPIQPS)")
	fs.Int32Var(&kc.KubeAPIBurst, "kube-api-burst", kc.KubeAPIBurst,
		"Burst to use while talking with kubernetes apiserver (default 100). The number must be >= 0. If 0 will use DefaultBurst: 10. Doesn't cover events and node heartbeat apis. (kubeletConfiguration.kubeAPIBurst)")
	fs.Var(&int32PtrValue{p: &kc.EventRecordQPS}, "event-qps",
		"QPS to limit event creations (default 50), per node of --node-count. The number must be >= 0. If 0 will use DefaultQPS: 5. (kubeletConfiguration.eventRecordQPS)")
	fs.Int32Var(&kc.EventBurst, "event-burst", kc.EventBurst,
		"Maximum size of a bursty event records, temporarily allows event records to burst to this number, while still not exceeding event-qps (default 100). The number must be >= 0. If 0 will use DefaultBurst: 10. (kubeletConfiguration.eventBurst)")
	fs.Var(&taintsValue{p: &kc.RegisterWithTaints}, "register-with-taints",
		"Register the node with the given list of taints (comma separated \"<key>=<value>:<effect>\"). (kubeletConfiguration.registerWithTaints)")
}

// addResourceFlags registers the kubelet's flags for the modelled runtime, eviction,
// reservation and log-rotation fields: deprecated upstream in favour of the config file, and
// still what kubeadm and kind command lines and old unit files pass.
func addResourceFlags(fs *pflag.FlagSet, kc *KubeletConfiguration) {
	fs.DurationVar(&kc.RuntimeRequestTimeout.Duration, "runtime-request-timeout", kc.RuntimeRequestTimeout.Duration,
		"Timeout of all runtime requests except long running requests - pull, logs, exec and attach. (kubeletConfiguration.runtimeRequestTimeout)")
	fs.Var(&stringPtrValue{p: &kc.ResolverConfig}, "resolv-conf",
		"Resolver configuration file used as the basis for the container DNS resolution configuration, a file of the simulated node. (kubeletConfiguration.resolvConf)")
	fs.StringVar(&kc.ContainerLogMaxSize, "container-log-max-size", kc.ContainerLogMaxSize,
		"Set the maximum size (e.g. 10Mi) of container log file before it is rotated. (kubeletConfiguration.containerLogMaxSize)")
	fs.Var(&int32PtrValue{p: &kc.ContainerLogMaxFiles}, "container-log-max-files",
		"Set the maximum number of container log files that can be present for a container. The number must be >= 2. (kubeletConfiguration.containerLogMaxFiles)")
	fs.Var(&int64PtrValue{p: &kc.PodPidsLimit}, "pod-max-pids",
		"Set the maximum number of processes per pod.  If -1, the kubelet defaults to the node allocatable pid capacity. (kubeletConfiguration.podPidsLimit)")
	maps := []struct {
		name string
		m    *map[string]string
		sep  string
		use  string
	}{
		{"eviction-hard", &kc.EvictionHard, "<", "A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction. (kubeletConfiguration.evictionHard)"},
		{"eviction-soft", &kc.EvictionSoft, "<", "A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction. (kubeletConfiguration.evictionSoft)"},
		{"eviction-soft-grace-period", &kc.EvictionSoftGracePeriod, "=", "A set of eviction grace periods (e.g. memory.available=1m30s) that correspond to how long a soft eviction threshold must hold before triggering a pod eviction. (kubeletConfiguration.evictionSoftGracePeriod)"},
		{"eviction-minimum-reclaim", &kc.EvictionMinimumReclaim, "=", "A set of minimum reclaims (e.g. imagefs.available=2Gi) that describes the minimum amount of resource the kubelet will reclaim when performing a pod eviction if that resource is under pressure. (kubeletConfiguration.evictionMinimumReclaim)"},
		{"kube-reserved", &kc.KubeReserved, "=", "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for kubernetes system components. (kubeletConfiguration.kubeReserved)"},
		{"system-reserved", &kc.SystemReserved, "=", "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for non-kubernetes components. (kubeletConfiguration.systemReserved)"},
	}
	for _, m := range maps {
		fs.Var(&mapFlag{m: m.m, sep: m.sep}, m.name, m.use)
	}
	fs.DurationVar(&kc.EvictionPressureTransitionPeriod.Duration, "eviction-pressure-transition-period", kc.EvictionPressureTransitionPeriod.Duration,
		"Duration for which the kubelet has to wait before transitioning out of an eviction pressure condition. (kubeletConfiguration.evictionPressureTransitionPeriod)")
	fs.Int32Var(&kc.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", kc.EvictionMaxPodGracePeriod,
		"Maximum allowed grace period (in seconds) to use when terminating pods in response to a soft eviction threshold being met. If negative, defer to pod specified value. (kubeletConfiguration.evictionMaxPodGracePeriod)")
}

// mapFlag is a map flag as component-base's cliflag.MapStringString (sep "=") and
// LangleSeparatedMapStringString (sep "<"): the first Set of a parse replaces the map, so a
// flag wins over the file's whole map as in the kubelet; later ones add to it.
type mapFlag struct {
	m           *map[string]string
	sep         string
	initialized bool
}

func (v *mapFlag) String() string {
	if v.m == nil || *v.m == nil {
		return ""
	}
	pairs := make([]string, 0, len(*v.m))
	for k, val := range *v.m {
		pairs = append(pairs, k+v.sep+val)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (v *mapFlag) Set(value string) error {
	if !v.initialized || *v.m == nil {
		*v.m = map[string]string{}
		v.initialized = true
	}
	for _, s := range strings.Split(value, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		k, val, ok := strings.Cut(s, v.sep)
		if !ok {
			return fmt.Errorf("malformed pair, expect string%sstring", v.sep)
		}
		(*v.m)[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return nil
}

func (v *mapFlag) Type() string { return "mapStringString" }

// stringPtrValue sets a *string field.
type stringPtrValue struct{ p **string }

func (v *stringPtrValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return **v.p
}

func (v *stringPtrValue) Set(s string) error {
	*v.p = &s
	return nil
}

func (v *stringPtrValue) Type() string { return "string" }

// int32PtrValue sets a *int32 field.
// taintsValue is --register-with-taints: "key=value:effect" or "key:effect", comma
// separated, as the kubelet's taints flag parses them; the list replaces the file's.
type taintsValue struct{ p *[]v1.Taint }

func (v *taintsValue) String() string {
	if v.p == nil {
		return ""
	}
	specs := make([]string, 0, len(*v.p))
	for _, t := range *v.p {
		specs = append(specs, t.ToString())
	}
	return strings.Join(specs, ",")
}

func (v *taintsValue) Set(s string) error {
	var taints []v1.Taint
	for _, spec := range strings.Split(s, ",") {
		if spec == "" {
			continue
		}
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok || effect == "" {
			return fmt.Errorf("invalid taint spec %q: want key=value:effect or key:effect", spec)
		}
		key, value, _ := strings.Cut(kv, "=")
		taints = append(taints, v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)})
	}
	*v.p = taints
	return nil
}

func (v *taintsValue) Type() string { return "[]v1.Taint" }

type int32PtrValue struct{ p **int32 }

func (v *int32PtrValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatInt(int64(**v.p), 10)
}

func (v *int32PtrValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return err
	}
	i := int32(n)
	*v.p = &i
	return nil
}

func (v *int32PtrValue) Type() string { return "int32" }

// int64PtrValue is an *int64 field's flag (--pod-max-pids).
type int64PtrValue struct{ p **int64 }

func (v *int64PtrValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatInt(**v.p, 10)
}

func (v *int64PtrValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return err
	}
	*v.p = &n
	return nil
}

func (v *int64PtrValue) Type() string { return "int" }

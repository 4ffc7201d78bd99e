package kubelet

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/allocation"
	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/eviction"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/nodeshutdown"
	"github.com/minikubelet/minikubelet/pkg/nodestatus"
	"github.com/minikubelet/minikubelet/pkg/pleg"
	"github.com/minikubelet/minikubelet/pkg/podsource"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
	"github.com/minikubelet/minikubelet/pkg/podworkers"
	"github.com/minikubelet/minikubelet/pkg/prober"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/record"
	"github.com/minikubelet/minikubelet/pkg/release"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/client"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/runtimestate"
	"github.com/minikubelet/minikubelet/pkg/server"
	"github.com/minikubelet/minikubelet/pkg/stats"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
	"github.com/minikubelet/minikubelet/pkg/syncloop"
	"github.com/minikubelet/minikubelet/pkg/userns"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// ContainerGCPeriod is how often dead containers are garbage collected (upstream
// ContainerGCPeriod).
const ContainerGCPeriod = time.Minute

// Config configures a Kubelet. Only Config is required.
type Config struct {
	// Config is the daemon's effective configuration (config.Load). Required.
	Config *config.Config
	// Gate answers the feature gates. Default features.DefaultFeatureGate.
	Gate featuregate.FeatureGate
	// Clock drives every loop, timer and timestamp. Required: the daemon passes the real
	// clock, simulate mode a fake clock it moves itself.
	Clock clock.Clock
	// Registry receives every metric. Default a new registry with the configured prefix.
	Registry *metrics.Registry
	// Events stores the events. Default a new store of events.DefaultCapacity.
	Events *events.Store
	// Runtime is the container runtime. Default NewRuntime(Config, Clock, Registry) over
	// NodeFS.
	Runtime *fake.Runtime
	// KeepRuntime leaves the Runtime's containers running when the kubelet stops: a
	// kubelet restart (simulate's restartKubelet) finds them as a restarted kubelet finds
	// the containers its runtime kept. The caller closes the runtime. Without it, Stop
	// ends the node: the containers' programs with it.
	KeepRuntime bool
	// NodeFS is the node's filesystem: the kubelet writes pods' volumes and files there and
	// the runtime binds containers' mounts from it, so both must share it. Default: the
	// Runtime's when one is given, else a new one.
	NodeFS *vfs.View
	// Listener, when set, is where Run serves the HTTP API. The daemon binds it before
	// starting so that a busy port fails the start and the bound port (":0") is known.
	Listener net.Listener
	// SecureListener, when set, is where Run serves the secure port (HTTPS, authenticated
	// and authorized as the configuration says); its port is the Node's kubelet endpoint.
	SecureListener net.Listener
	// WatchManifests turns on fsnotify for the manifest directory (the daemon); without it
	// the directory is re-listed every fileCheckFrequency only (or after FileSource().Trigger).
	WatchManifests bool
	// ManifestUIDRoot, when set, stands for the manifest directory in the static pods' UIDs
	// (podsource.Config.UIDRoot): simulate mode's runs get the same UIDs.
	ManifestUIDRoot string
	// KubeClient is the API server of the cluster to join (cluster mode): the node is
	// registered, its status patched and its lease renewed there. Nil: standalone.
	KubeClient kubernetes.Interface
	// HeartbeatClient, if set, is the client of the node status and lease calls, and
	// EventClient that of the events (nil: KubeClient). The kubelet gives its heartbeats a
	// client with no rate limit and its events one with eventRecordQPS and eventBurst, so
	// that neither waits behind the pods' requests (a node busy starting its pods would
	// miss its lease renewals in the client's queue).
	HeartbeatClient, EventClient kubernetes.Interface
	// InlineAPICalls runs API calls on the loops' goroutines instead of goroutines of their
	// own: for tests with an in-memory fake clientset, so that they stay deterministic.
	InlineAPICalls bool
	// LegacyEventedPLEG selects v1.30-v1.36's EventedPLEG when the EventedPLEG gate is on:
	// the event stream writes the cache and sends the pod lifecycle events, the generic PLEG
	// relists every eventedPLEG.relistPeriod as a safety net and takes over after
	// eventedPLEG.maxRetries failed streams, and there is no on-demand pod relist. Off (v1.37):
	// the EventedPLEG only asks the generic PLEG to relist a pod whose container stopped. For
	// an emulated older kubelet; no flag sets it.
	LegacyEventedPLEG bool
	// Recorder, if set, is the flight recorder (--record): it is told what comes into the
	// node from outside. The caller opens and closes it.
	Recorder *record.Recorder
	// ManifestWatcher, if set, is the inotify instance the manifest directory is watched
	// with (WatchManifests), shared with the other nodes of the process.
	ManifestWatcher *podsource.SharedWatcher
	// DeferServingCert generates a self-signed serving certificate at the secure port's
	// first handshake instead of at start (servingcert.Deferred): for the nodes of a
	// --node-count process, whose start it would otherwise dominate.
	DeferServingCert bool
}

// Kubelet is the simulator's kubelet: it owns every component and implements the sync
// loop's Handler and the pod workers' SyncHandler. Loops is the table of every loop; Run
// is the daemon runner of that table, simulate mode steps it on a virtual clock.
type Kubelet struct {
	cfg      *config.Config
	gate     featuregate.FeatureGate
	clock    clock.Clock
	nodeName string
	registry *metrics.Registry
	events   *events.Store
	runtime  *fake.Runtime
	rt       *client.Client // the runtime behind the CRI client's deadlines

	pods                         *podManager
	cache                        *statuscache.Cache
	status                       *podstatus.Manager
	podsJSON                     podsJSON // /pods' encodings
	reasons                      *podstatus.ReasonCache
	generator                    *podstatus.Generator
	runtimeMgr                   *kuberuntime.Manager
	syncer                       *Syncer
	podWorkers                   *podworkers.PodWorkers
	prober                       *prober.Manager
	kubeClient                   kubernetes.Interface
	heartbeatClient, eventClient kubernetes.Interface // KubeClient unless set
	inlineAPI                    bool
	statusSync                   *apiStatusSync               // cluster mode: pod statuses to the API server; nil standalone
	statusWatcher                func(*v1.Pod, *v1.PodStatus) // WatchPodStatuses
	apiCaller                    *cluster.Caller              // runs API calls off the loops' goroutines; nil standalone
	nodeClient                   *cluster.NodeAPI             // the node's registration, status, lease and node watch; nil standalone
	probeResults                 probeResults
	probeRegistry                *metrics.Registry // prober_* metrics, served on /metrics/probes
	stateRegistry                *metrics.Registry // kube-state-metrics' names on /metrics/state; nil in cluster mode
	stats                        *stats.Provider   // /stats/summary
	resourceReg                  *metrics.Registry // /metrics/resource
	cadvisorReg                  *metrics.Registry // /metrics/cadvisor
	genericPLEG                  *pleg.GenericPLEG
	eventedPLEG                  *pleg.EventedPLEG       // v1.37's; nil with the EventedPLEG gate off or legacy
	legacyEventedPLEG            *pleg.LegacyEventedPLEG // v1.30's; nil unless the gate is on and cfg.LegacyEventedPLEG
	legacyPLEG                   bool                    // cfg.LegacyEventedPLEG, or a release before v1.37
	noPodRelists                 bool                    // cfg.LegacyEventedPLEG: v1.30's design, which had none
	release                      release.Release         // the kubelet release the node is (emulatedVersion)
	state                        *runtimestate.State
	nodeStatus                   *nodestatus.Manager
	eviction                     *eviction.Manager
	shutdown                     *nodeshutdown.Manager
	fileSource                   *podsource.FileSource // nil without a staticPodPath
	merger                       *podsource.Merger
	syncLoop                     *syncloop.SyncLoop
	deletor                      *containerDeletor
	gc                           *runner.Periodic
	watchManifests               bool
	// deferServingCert: Config.DeferServingCert.
	deferServingCert bool
	// manifestWatcher: Config.ManifestWatcher.
	manifestWatcher *podsource.SharedWatcher
	manifestUIDRoot string
	server          *server.Server
	listener        net.Listener
	secureListener  net.Listener
	servingCert     server.CertSource
	// servingCertManager requests and renews the serving certificate (serverTLSBootstrap);
	// nil otherwise.
	servingCertManager certificate.Manager
	nodeFS             *vfs.View          // the node's filesystem: pods' volumes and files
	objects            *apiObjects        // the ConfigMaps, Secrets and tokens of the node's pods
	volumes            mountedVolumes     // the volumes set up, by pod
	dns                *dnsConfigurer     // pods' /etc/resolv.conf
	hostIP             string             // the node's InternalIP, pods' status.hostIP
	desired            map[types.UID]bool // housekeeping's desired pods, reused from one pass to the next
	inRuntime          map[types.UID]bool // housekeeping's pods the runtime has, reused likewise
	lastPodFiles       podFilePaths       // podFiles' last answer

	// alloc keeps pods' allocated and actuated resources and their resize conditions;
	// nil without InPlacePodVerticalScaling.
	alloc      *allocation.Manager
	podCgroups podCgroups // the node's pod cgroups (the runtime's cgroup hierarchy)
	// podLevelResize is InPlacePodLevelResourcesVerticalScaling; resizeMetrics are the
	// resize metrics (nil without InPlacePodVerticalScaling).
	podLevelResize bool
	resizeMetrics  *resizeMetrics
	// declared are the node's declared features; nil without NodeDeclaredFeatures.
	declared *declaredFeatures
	// imageVolume is the ImageVolume gate: image volumes need no setting up and are
	// mounted by the runtime from the images the runtime manager pulled.
	imageVolume bool

	nodeInfo         admission.NodeInfo
	userns           *userns.Manager // pods' user namespaces (hostUsers: false)
	sysctls          *admission.SysctlAllowlist
	admissionMetrics *admission.Metrics

	startOnce, stopOnce sync.Once
	keepRuntime         bool // Config.KeepRuntime
	life                lifecycle
	recorder            *record.Recorder             // nil: no recording
	owner               atomic.Pointer[runner.Owner] // the daemon's owner of the table, once Run started
	owned               chan struct{}                // closed once Run handed the node to its owner (Owned)
}

var (
	_ syncloop.Handler         = (*Kubelet)(nil)
	_ podworkers.SyncHandler   = (*Kubelet)(nil)
	_ nodestatus.UsageProvider = (*Kubelet)(nil)
)

// nodeAPI is the node status manager's API server in cluster mode, over the API caller
// (buildAPICaller), nil standalone (a nil *cluster.NodeAPI must not become a non-nil
// interface).
func (k *Kubelet) nodeAPI() nodestatus.NodeAPI {
	if k.nodeClient == nil {
		return nil
	}
	return k.nodeClient
}

// heartbeatTimeout bounds each node status and lease call, as the kubelet's heartbeat
// client's timeout: nodeStatusUpdateFrequency, or the lease duration if shorter.
func (k *Kubelet) heartbeatTimeout() time.Duration {
	d := k.cfg.Kubelet.NodeStatusUpdateFrequency.Duration
	if lease := time.Duration(k.cfg.Kubelet.NodeLeaseDurationSeconds) * time.Second; lease > 0 && (d <= 0 || lease < d) {
		d = lease
	}
	return d
}

// ProbeRegistry holds the prober's metrics (prober_probe_total,
// prober_probe_duration_seconds), served on /metrics/probes.
func (k *Kubelet) ProbeRegistry() *metrics.Registry { return k.probeRegistry }

// StateRegistry holds the node's and pods' state under kube-state-metrics' names
// (kube_node_status_condition, ...), served on /metrics/state. Nil in cluster mode, where
// kube-state-metrics itself reads the API.
func (k *Kubelet) StateRegistry() *metrics.Registry { return k.stateRegistry }

// probeResults are the prober's three results managers.
type probeResults struct {
	liveness, readiness, startup *results.Manager
}

// runtimeHandlers are the runtime's handlers: its default one ("") and the configured
// ones (containerd's runc by default), each with user namespaces as configured.
func runtimeHandlers(rc config.RuntimeConfiguration) []cri.RuntimeHandler {
	out := []cri.RuntimeHandler{{Name: "", UserNamespaces: rc.Features.UserNamespaces}}
	for _, name := range rc.Handlers {
		out = append(out, cri.RuntimeHandler{Name: name, UserNamespaces: rc.Features.UserNamespaces})
	}
	return out
}

// NewRuntime builds the in-memory container runtime the SimulatorConfiguration describes:
// seed, init container duration, default behaviour and the faults injected from the start.
// Options adjust the runtime's config last (simulate mode sets OnFault). The runtime gets a
// node filesystem of its own unless an option gives it one: Config.NodeFS must then be the
// same, for the kubelet to write where the runtime binds mounts from.
func NewRuntime(c *config.Config, clk clock.Clock, reg *metrics.Registry, options ...func(*fake.Config)) (*fake.Runtime, error) {
	rc := c.Simulator.Runtime
	fc := fake.Config{
		Clock:                 clk,
		NodeFS:                vfs.New(clk.Now),
		Seed:                  rc.Seed,
		InitContainerDuration: rc.InitContainerDuration.Duration,
		DefaultBehavior:       rc.DefaultBehavior,
		Faults:                rc.Faults,
		Metrics:               reg,
		PodsMemoryLimit:       podsMemoryLimit(c),
		PodPidsLimit:          podPidsLimit(c),
		CPUCapacityMilli:      c.Simulator.Machine.CPU.MilliValue(),
		Features: &cri.RuntimeFeatures{
			SupplementalGroupsPolicy: rc.Features.SupplementalGroupsPolicy,
		},
		Handlers: runtimeHandlers(rc),
	}
	// Validated by config.Load; a config built otherwise falls back to the default.
	if q, err := resource.ParseQuantity(c.Kubelet.ContainerLogMaxSize); err == nil {
		fc.LogMaxBytes = q.Value()
	}
	if n := c.Kubelet.ContainerLogMaxFiles; n != nil {
		fc.LogMaxFiles = int64(*n)
	}
	for _, o := range options {
		o(&fc)
	}
	rt, err := fake.New(fc)
	if err != nil {
		return nil, fmt.Errorf("create the container runtime from simulatorConfiguration.runtime: %w", err)
	}
	return rt, nil
}

// podsMemoryLimit is the kubepods cgroup's memory limit as the container manager sets it
// when it enforces node allocatable on pods: the machine's memory less systemReserved and
// kubeReserved (the eviction threshold stays inside it, so eviction comes before the OOM
// killer). Without enforcement, the machine's memory.
func podsMemoryLimit(c *config.Config) int64 {
	limit := c.Simulator.Machine.Memory.Value()
	if !enforcesPodsAllocatable(c) {
		return limit
	}
	for _, field := range []struct {
		name string
		m    map[string]string
	}{{"systemReserved", c.Kubelet.SystemReserved}, {"kubeReserved", c.Kubelet.KubeReserved}} {
		if r, err := reservation(field.name, field.m); err == nil {
			if q, ok := r[v1.ResourceMemory]; ok {
				limit -= q.Value()
			}
		}
	}
	return max(limit, 0)
}

// podPidsLimit is podPidsLimit, -1 (none) when unset.
func podPidsLimit(c *config.Config) int64 {
	if c.Kubelet.PodPidsLimit == nil {
		return -1
	}
	return *c.Kubelet.PodPidsLimit
}

// hostIP is the address pods report as status.hostIP: the bind address, or loopback when
// it is unspecified (0.0.0.0 binds every interface and names none).
func hostIP(address string) string {
	if ip := net.ParseIP(address); ip != nil && !ip.IsUnspecified() {
		return ip.String()
	}
	return "127.0.0.1"
}

// machine converts the SimulatorConfiguration's machine into node status terms.
func (k *Kubelet) machine() nodestatus.Machine {
	m := k.cfg.Simulator.Machine
	return nodestatus.Machine{
		CPU:              m.CPU.DeepCopy(),
		Memory:           m.Memory.DeepCopy(),
		EphemeralStorage: m.EphemeralStorage.DeepCopy(),
		MaxPIDs:          m.PIDs.Value(),
	}
}

// reservation parses a systemReserved/kubeReserved map; config.Validate has checked it, so an
// error here names the field anyway.
func reservation(field string, m map[string]string) (v1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(v1.ResourceList, len(m))
	for name, value := range m {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("kubeletConfiguration.%s[%q]: %q is not a quantity: %w", field, name, value, err)
		}
		out[v1.ResourceName(name)] = q
	}
	return out, nil
}

// buildNodeInfo takes what admission checks against from the node status manager: the
// node's allocatable resources (the MachineInfo setter's computation), maxPods, its name,
// labels and registered taints; and the sysctls pods may set (the safe ones and
// allowedUnsafeSysctls, validated with the config).
func (k *Kubelet) buildNodeInfo() error {
	k.nodeInfo = admission.NodeInfo{
		Allocatable: k.nodeStatus.Allocatable(),
		MaxPods:     int(k.cfg.Kubelet.MaxPods),
		Name:        k.nodeName,
		Labels:      k.nodeStatus.NodeLabels(),
		Taints:      k.cfg.Kubelet.RegisterWithTaints,
		// What the node status's features say (NodeFeatures): upstream reads the node.
		SupplementalGroupsPolicy: func() bool {
			f := k.state.Features()
			return f != nil && f.SupplementalGroupsPolicy
		},
	}
	sysctls, err := admission.NewSysctlAllowlist(k.cfg.Kubelet.AllowedUnsafeSysctls)
	if err != nil {
		return fmt.Errorf("kubeletConfiguration.allowedUnsafeSysctls: %w", err)
	}
	k.sysctls = sysctls
	return nil
}

// buildPLEG wires the PLEGs. v1.37: the generic PLEG relists at pleg.relistPeriod with
// pleg.relistThreshold whatever the EventedPLEG gate, with on-demand pod relists
// (PLEGOnDemandRelist, GA and locked); with the gate on, the EventedPLEG watches the CRI
// event stream and asks it to relist a pod whose container stopped. With
// cfg.LegacyEventedPLEG and the gate on, v1.30's pair instead: the generic PLEG relists at
// the evented cadence (eventedPLEG.relistPeriod/relistThreshold, 300s/10m) beside the
// evented PLEG, which restores pleg.* on the generic one if it falls back.
func (k *Kubelet) buildPLEG(evented bool) error {
	sc := &k.cfg.Simulator
	legacy := evented && k.legacyPLEG
	period, threshold := sc.PLEG.RelistPeriod.Duration, sc.PLEG.RelistThreshold.Duration
	if legacy {
		period, threshold = sc.EventedPLEG.RelistPeriod.Duration, sc.EventedPLEG.RelistThreshold.Duration
	}
	var err error
	if k.genericPLEG, err = pleg.NewGenericPLEG(pleg.Config{
		Runtime:         k.runtimeMgr,
		Cache:           k.cache,
		Clock:           k.clock,
		RelistPeriod:    period,
		RelistThreshold: threshold,
		ChannelCapacity: sc.PLEG.ChannelCapacity,
		Registry:        k.registry,
		// v1.30's evented design had no pod relists (LegacyEventedPLEG, the option), and
		// before v1.36 no release had them (the gate).
		OnDemandRelist:  !k.noPodRelists && k.gate.Enabled(features.PLEGOnDemandRelist),
		PodRelistMetric: !k.release.Before(36),
		LegacyEvented:   legacy,
		Notify:          k.wakeSyncLoop,
	}); err != nil {
		return fmt.Errorf("create generic PLEG: %w", err)
	}
	switch {
	case legacy:
		if k.legacyEventedPLEG, err = pleg.NewLegacyEventedPLEG(pleg.LegacyEventedConfig{
			Generic:                 k.genericPLEG,
			Runtime:                 k.rt,
			MaxRetries:              sc.EventedPLEG.MaxRetries,
			GlobalCacheUpdatePeriod: sc.EventedPLEG.GlobalCacheUpdatePeriod.Duration,
			EventedRelistPeriod:     sc.EventedPLEG.RelistPeriod.Duration,
			EventedRelistThreshold:  sc.EventedPLEG.RelistThreshold.Duration,
			GenericRelistPeriod:     sc.PLEG.RelistPeriod.Duration,
			GenericRelistThreshold:  sc.PLEG.RelistThreshold.Duration,
			AdjustRunningContainers: k.runtimeMgr.AdjustRunningContainers,
		}); err != nil {
			return fmt.Errorf("create evented PLEG: %w", err)
		}
	case evented:
		if k.eventedPLEG, err = pleg.NewEventedPLEG(pleg.EventedConfig{
			Generic:    k.genericPLEG,
			Runtime:    k.rt,
			MaxRetries: sc.EventedPLEG.MaxRetries,
		}); err != nil {
			return fmt.Errorf("create evented PLEG: %w", err)
		}
	}
	return nil
}

// requestPodRelist is upstream's RequestPodRelist: the generic PLEG relists the pod soon
// (after a sync that changed the runtime).
func (k *Kubelet) requestPodRelist(ctx context.Context, uid types.UID) {
	if k.genericPLEG != nil {
		k.genericPLEG.RequestRelist(ctx, uid)
	}
}

func (k *Kubelet) buildNodeStatus(nodeIP string) error {
	kc := &k.cfg.Kubelet
	sys, err := reservation("systemReserved", kc.SystemReserved)
	if err != nil {
		return err
	}
	kube, err := reservation("kubeReserved", kc.KubeReserved)
	if err != nil {
		return err
	}
	taints := kc.RegisterWithTaints
	// The kubelet endpoint is the secure port, which the API server's logs, exec and
	// port-forward go to; without one (tests), the read-only port.
	port := kc.Port
	switch {
	case k.secureListener != nil:
		if addr, ok := k.secureListener.Addr().(*net.TCPAddr); ok {
			port = int32(addr.Port)
		}
	case k.listener != nil:
		if addr, ok := k.listener.Addr().(*net.TCPAddr); ok {
			port = int32(addr.Port)
		}
	}
	k.nodeStatus, err = nodestatus.New(nodestatus.Config{
		NodeName:       k.nodeName,
		NodeIP:         hostIP(nodeIP),
		Labels:         k.cfg.NodeLabels,
		Taints:         taints,
		Machine:        k.machine(),
		MaxPods:        int(kc.MaxPods),
		SystemReserved: sys,
		KubeReserved:   kube,
		EvictionHard:   kc.EvictionHard,
		Versions: nodestatus.Versions{KubeletVersion: k.release.KubeletVersion(),
			KubeProxyVersion: !k.gate.Enabled(features.DisableNodeKubeProxyVersion)},
		// What the API server's NodeDeclaredFeatures admission and the scheduler read.
		DeclaredFeatures: k.declaredList(),
		// The conditions are the eviction manager's (built next), as upstream's setters'.
		Pressure:                  func(c v1.NodeConditionType) bool { return k.eviction != nil && k.eviction.IsUnderPressure(c) },
		KubeletPort:               port,
		NodeStatusUpdateFrequency: kc.NodeStatusUpdateFrequency.Duration,
		NodeStatusReportFrequency: kc.NodeStatusReportFrequency.Duration,
		NodeLeaseDurationSeconds:  kc.NodeLeaseDurationSeconds,
		Seed:                      k.cfg.Simulator.Runtime.Seed,
		Clock:                     k.clock,
		Health:                    k.state,
		Images:                    k.rt,
		Usage:                     k,
		ShutdownErrors:            k.shutdownStatus,
		RuntimeFeatures:           k.state.Features,
		RuntimeHandlers:           k.state.Handlers,
		Recorder:                  k.events,
		Registry:                  k.registry,
		API:                       k.nodeAPI(),
	})
	if err != nil {
		return fmt.Errorf("create node status manager: %w", err)
	}
	return nil
}

// shutdownStatus is the Ready condition's shutdown error source; the shutdown manager is
// built after the node status manager, so this indirection reads it late.
func (k *Kubelet) shutdownStatus() error {
	if k.shutdown == nil {
		return nil
	}
	return k.shutdown.ShutdownStatus()
}

// syncNodeStatusNow recomputes the node status at once (the shutdown manager calls it so
// the node reads NotReady without waiting for the status loop).
func (k *Kubelet) syncNodeStatusNow() {
	if err := k.nodeStatus.UpdateNodeStatus(context.Background()); err != nil {
		klog.ErrorS(err, "Failed to set some node status fields", "node", k.nodeName)
	}
}

func (k *Kubelet) buildSources(watch bool) error {
	var err error
	if k.merger, err = podsource.NewMerger(podsource.MergerConfig{
		Clock:    k.clock,
		Recorder: k.events,
		Sources:  k.sources(),
		Notify:   k.wakeSyncLoop,
	}); err != nil {
		return fmt.Errorf("create pod config merger: %w", err)
	}
	path := k.cfg.Kubelet.StaticPodPath
	if path == "" {
		return nil
	}
	if k.fileSource, err = podsource.NewFileSource(podsource.Config{
		Path:           path,
		NodeName:       k.nodeName,
		Clock:          k.clock,
		CheckFrequency: k.cfg.Kubelet.FileCheckFrequency.Duration,
		Watch:          watch,
		SharedWatcher:  k.manifestWatcher,
		Recorder:       k.events,
		Registry:       k.registry,
		Sink:           k.merger,
		UIDRoot:        k.manifestUIDRoot,
		Observer:       k.manifestObserver(),
	}); err != nil {
		return fmt.Errorf("create static pod source for %s: %w", path, err)
	}
	return nil
}

// getPodsToSync is the sync tick's list: the desired pods whose worker's requeue time is
// due, and (upstream's pod sync loop handlers) those past their active deadline that are
// not yet terminal, so a deadline fails its pod within the tick, not at the next resync.
func (k *Kubelet) getPodsToSync() []*v1.Pod {
	now := k.clock.Now()
	uids := k.podWorkers.PodsToSync(now)
	pods := make([]*v1.Pod, 0, len(uids))
	for _, uid := range uids {
		if pod, ok := k.pods.GetPodByUID(uid); ok {
			pods = append(pods, pod)
		}
	}
	deadlined := k.pods.podsWithDeadline()
	if len(deadlined) == 0 {
		return pods
	}
	seen := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		seen[p.UID] = true
	}
	sortPods(deadlined) // simulate mode replays the same order
	for _, pod := range deadlined {
		if seen[pod.UID] {
			continue
		}
		status, ok := k.status.GetPodStatus(pod.UID)
		if !ok {
			status = pod.Status
		}
		if status.Phase != v1.PodFailed && status.Phase != v1.PodSucceeded && PastActiveDeadline(pod, status, now) {
			pods = append(pods, pod)
		}
	}
	return pods
}

// cleanUpContainersInPod is the sync loop's ContainerDied hook: dead instances of the
// container are removed in the background, all of them once the pod's content may go.
func (k *Kubelet) cleanUpContainersInPod(podUID types.UID, exitedContainerID string) {
	podStatus, err := k.cache.Get(podUID)
	if err != nil {
		return
	}
	k.deletor.enqueue(podStatus, exitedContainerID, k.podWorkers.ShouldPodContentBeRemoved(podUID))
}

// sourcesReady reports whether every pod source has reported and been seen by the loop.
func (k *Kubelet) sourcesReady() bool {
	return k.merger.SeenAllSources(k.syncLoop.SourcesSeen())
}

// --- accessors: each component, so a scheduler can call its step ---

// NodeName is the node's name.
func (k *Kubelet) NodeName() string { return k.nodeName }

// NodeFS is the node's filesystem, with the pods' volumes and files under /var/lib/kubelet.
func (k *Kubelet) NodeFS() *vfs.View { return k.nodeFS }

// Clock is the kubelet's clock.
func (k *Kubelet) Clock() clock.Clock { return k.clock }

// Registry is the metrics registry.
func (k *Kubelet) Registry() *metrics.Registry { return k.registry }

// Events is the event store.
func (k *Kubelet) Events() *events.Store { return k.events }

// Runtime is the container runtime (its loop completes what falls due; faults).
func (k *Kubelet) Runtime() *fake.Runtime { return k.runtime }

// FileSource is the static pod source (Trigger asks for a relist), or nil without a staticPodPath.
func (k *Kubelet) FileSource() *podsource.FileSource { return k.fileSource }

// Merger merges source snapshots into config updates (Push / Merge).
func (k *Kubelet) Merger() *podsource.Merger { return k.merger }

// SyncLoop is the main loop.
func (k *Kubelet) SyncLoop() *syncloop.SyncLoop { return k.syncLoop }

// PodWorkers are the pod workers.
func (k *Kubelet) PodWorkers() *podworkers.PodWorkers { return k.podWorkers }

// PLEG is the source of pod lifecycle events: the generic PLEG, or v1.30's evented one when
// it is selected (LegacyEventedPLEG).
func (k *Kubelet) PLEG() pleg.Interface {
	if k.legacyEventedPLEG != nil {
		return k.legacyEventedPLEG
	}
	return k.genericPLEG
}

// GenericPLEG is the relisting PLEG (always present; it relists slowly only beside v1.30's
// evented PLEG).
func (k *Kubelet) GenericPLEG() *pleg.GenericPLEG { return k.genericPLEG }

// EventedPLEG is v1.37's evented PLEG (the CRI event watcher), or nil with the EventedPLEG
// gate off or LegacyEventedPLEG.
func (k *Kubelet) EventedPLEG() *pleg.EventedPLEG { return k.eventedPLEG }

// LegacyEventedPLEG is v1.30's evented PLEG, or nil unless the gate is on and
// LegacyEventedPLEG selected it.
func (k *Kubelet) LegacyEventedPLEG() *pleg.LegacyEventedPLEG { return k.legacyEventedPLEG }

// PLEGActiveType is pleg_active's type: TypeEvented while container exits come from the
// event stream (v1.37: the fast path is on; v1.30: the evented PLEG is in charge), else
// TypeGeneric; "" with the EventedPLEG gate off.
func (k *Kubelet) PLEGActiveType() string {
	switch {
	case k.eventedPLEG != nil:
		return k.eventedPLEG.ActiveType()
	case k.legacyEventedPLEG != nil:
		return k.legacyEventedPLEG.ActiveType()
	}
	return ""
}

// StatusCache is the pod status cache the PLEG writes.
func (k *Kubelet) StatusCache() *statuscache.Cache { return k.cache }

// StatusManager holds the pods' API statuses.
func (k *Kubelet) StatusManager() *podstatus.Manager { return k.status }

// RuntimeManager is the kuberuntime manager (SyncPod, KillPod, GarbageCollect).
func (k *Kubelet) RuntimeManager() *kuberuntime.Manager { return k.runtimeMgr }

// RuntimeState is the runtime health.
func (k *Kubelet) RuntimeState() *runtimestate.State { return k.state }

// NodeStatus owns the node and lease (UpdateNodeStatus, RenewLease, RefreshImages).
func (k *Kubelet) NodeStatus() *nodestatus.Manager { return k.nodeStatus }

// ShutdownManager is the graceful node shutdown manager (Start is the shutdown signal).
func (k *Kubelet) ShutdownManager() *nodeshutdown.Manager { return k.shutdown }

// Server is the HTTP API; its Handler serves without a listener.
func (k *Kubelet) Server() *server.Server { return k.server }

// NodeInfo is what admission checks pods against.
func (k *Kubelet) NodeInfo() admission.NodeInfo { return k.nodeInfo }

// GarbageCollect is one container garbage collection (the container GC loop's step).
func (k *Kubelet) GarbageCollect(ctx context.Context) error {
	return k.runtimeMgr.GarbageCollect(ctx, k.podWorkers, k.sourcesReady())
}

// wakeSyncLoop tells the sync loop an update or a PLEG event is waiting (the merger and the
// PLEG call it after putting one on its channel).
func (k *Kubelet) wakeSyncLoop() {
	if k.syncLoop != nil {
		k.syncLoop.Wake().Notify()
	}
}

// buildStats builds the stats provider over the runtime's usage model (/stats/summary) and
// the /metrics/resource registry.
func (k *Kubelet) buildStats() error {
	m := k.cfg.Simulator.Machine
	p, err := stats.New(stats.Config{
		NodeName:       k.nodeName,
		Clock:          k.clock,
		StartTime:      k.clock.Now(),
		MemoryCapacity: m.Memory.Value(),
		FsCapacity:     m.EphemeralStorage.Value(),
		MaxPID:         m.PIDs.Value(),
		Runtime:        k.rt,
		Node: func() stats.NodeUsage {
			cpu, nanoCores := k.runtime.NodeCPU()
			u := k.runtime.Usage()
			return stats.NodeUsage{CPUCoreNanoSeconds: cpu, CPUNanoCores: nanoCores, MemoryBytes: u.MemoryBytes, DiskBytes: u.DiskBytes, PIDs: u.PIDs,
				CPUPressure: k.runtime.NodeCPUPressure()}
		},
		Pods:    k.getPods, // from the owner (eviction) or an edge (/stats/summary)
		Volumes: k.volumeUsage,
		PSI:     k.gate.Enabled(features.KubeletPSI),
		PodMemoryLimit: func(pod *v1.Pod) int64 {
			if c, ok := k.podCgroups.config(pod); ok && c.MemoryMax != nil {
				return *c.MemoryMax
			}
			return 0
		},
	})
	if err != nil {
		return fmt.Errorf("create stats provider: %w", err)
	}
	k.stats = p
	k.resourceReg = metrics.NewRegistry("")
	delayed, ok := k.clock.(clock.WithDelayedExecution)
	if !ok {
		return fmt.Errorf("create stats provider: the clock (%T) has no AfterFunc to bound a scrape with", k.clock)
	}
	k.resourceReg.MustRegister(stats.NewResourceCollector(p, delayed, k.rt.Timeout()))
	k.cadvisorReg = metrics.NewRegistry("")
	cadvisor := stats.NewCadvisorCollector(k.runtime, k.GetPods, float64(m.CPU.MilliValue())/1000, m.Memory.Value())
	if k.gate.Enabled(features.KubeletPSI) {
		cadvisor.WithPSI()
	}
	k.cadvisorReg.MustRegister(cadvisor)
	return nil
}

// Stats is the provider behind /stats/summary and /metrics/resource.
func (k *Kubelet) Stats() *stats.Provider { return k.stats }

// ResourceRegistry holds the /metrics/resource series.
func (k *Kubelet) ResourceRegistry() *metrics.Registry { return k.resourceReg }

// CadvisorRegistry holds the /metrics/cadvisor series.
func (k *Kubelet) CadvisorRegistry() *metrics.Registry { return k.cadvisorReg }

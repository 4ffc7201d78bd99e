package kubelet

// The build steps of New, in order. Each reads the completed Config and what the steps
// before it built, and sets the parts its name says; buildSteps is the order.

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/allocation"
	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/nodeshutdown"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
	"github.com/minikubelet/minikubelet/pkg/podworkers"
	"github.com/minikubelet/minikubelet/pkg/prober"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/release"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/runtime/client"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/runtimestate"
	"github.com/minikubelet/minikubelet/pkg/server"
	"github.com/minikubelet/minikubelet/pkg/statemetrics"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
	"github.com/minikubelet/minikubelet/pkg/syncloop"
	"github.com/minikubelet/minikubelet/pkg/userns"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// New builds every component from cfg.Config and wires them together: the configuration
// completed (completeConfig), then each of buildSteps in order. Nothing runs yet: call Run
// (daemon) or drive the steps (simulate mode, tests).
func New(cfg Config) (*Kubelet, error) {
	cfg, rel, err := completeConfig(cfg)
	if err != nil {
		return nil, err
	}
	k := newKubelet(cfg, rel)
	for _, s := range buildSteps {
		if err := s.build(k, cfg); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// buildSteps are New's steps, in the order each needs the parts of those before it.
var buildSteps = []struct {
	name  string // what it builds, for a reader of this table
	build func(k *Kubelet, cfg Config) error
}{
	{"runtime client", (*Kubelet).buildRuntimeClient},
	{"node files and DNS configurer", (*Kubelet).buildNodeFiles},
	{"pod status cache and manager", (*Kubelet).buildStatus},
	{"prober and its results", (*Kubelet).buildProber},
	{"pod status generator, allocation and declared features", (*Kubelet).buildGenerator},
	{"user namespace manager", (*Kubelet).buildUserNamespaces},
	{"runtime manager", (*Kubelet).buildRuntimeManager},
	{"pod syncer", (*Kubelet).buildSyncer},
	{"pod workers", (*Kubelet).buildPodWorkers},
	{"PLEG", func(k *Kubelet, cfg Config) error { return k.buildPLEG(cfg.Gate.Enabled(features.EventedPLEG)) }},
	{"runtime state and its health checks", (*Kubelet).buildRuntimeState},
	{"API caller", (*Kubelet).buildAPICaller},
	{"node status manager", func(k *Kubelet, _ Config) error { return k.buildNodeStatus(nodeIPOf(k.cfg)) }},
	{"API objects and cluster DNS", (*Kubelet).buildAPIObjects},
	{"node info", func(k *Kubelet, _ Config) error { return k.buildNodeInfo() }},
	{"eviction manager", func(k *Kubelet, _ Config) error { return k.buildEviction() }},
	{"status sync", func(k *Kubelet, _ Config) error { k.buildStatusSync(); return nil }},
	{"node shutdown manager", (*Kubelet).buildShutdown},
	{"pod sources", func(k *Kubelet, cfg Config) error { return k.buildSources(cfg.WatchManifests) }},
	{"container garbage collection", (*Kubelet).buildGC},
	{"sync loop", (*Kubelet).buildSyncLoop},
	{"state metrics", (*Kubelet).buildStateMetrics},
	{"stats", func(k *Kubelet, _ Config) error { return k.buildStats() }},
	{"HTTP servers", (*Kubelet).buildServers},
}

// completeConfig checks cfg and fills what the caller left out (registry, events, node
// filesystem, runtime), and returns the node's release.
func completeConfig(cfg Config) (Config, release.Release, error) {
	if cfg.Config == nil {
		return cfg, release.Release{}, errors.New("kubelet config: Config is required")
	}
	c := cfg.Config
	if c.Simulator.NodeName == "" {
		return cfg, release.Release{}, errors.New("kubelet config: simulatorConfiguration.nodeName is empty (config.Load resolves it)")
	}
	if cfg.Gate == nil {
		cfg.Gate = features.DefaultFeatureGate
	}
	// The release decides gates (config.Load set the gate to emulate it) and behaviour that
	// no gate says: a configuration built in code must agree with its gate.
	rel, relErr := c.Simulator.CheckedRelease()
	if relErr != nil {
		return cfg, release.Release{}, fmt.Errorf("kubelet config: simulatorConfiguration.emulatedVersion %w", relErr)
	}
	type versioned interface{ EmulationVersion() *version.Version }
	if vg, ok := cfg.Gate.(versioned); ok && !vg.EmulationVersion().EqualTo(rel.Version()) {
		return cfg, release.Release{}, fmt.Errorf("kubelet config: the feature gate emulates %s but the node is kubelet %s (simulatorConfiguration.emulatedVersion): set the gate's emulation version (config.Load does)",
			vg.EmulationVersion(), rel)
	}
	if cfg.Clock == nil {
		// No silent real clock: every loop must be able to run on a fake one.
		return cfg, release.Release{}, errors.New("kubelet: Config.Clock is required")
	}
	if cfg.Registry == nil {
		cfg.Registry = metrics.NewRegistry(c.Simulator.MetricsPrefix)
	}
	if cfg.Events == nil {
		cfg.Events = events.NewStore(cfg.Clock, c.Simulator.NodeName, events.DefaultCapacity)
	}
	if cfg.NodeFS == nil && cfg.Runtime != nil {
		// A runtime built beforehand (the daemon's, simulate mode's) owns the node's
		// filesystem; the kubelet writes into that one.
		cfg.NodeFS = cfg.Runtime.NodeFS()
	}
	if cfg.NodeFS == nil {
		cfg.NodeFS = vfs.New(cfg.Clock.Now)
	}
	if cfg.Runtime == nil {
		rt, err := NewRuntime(c, cfg.Clock, cfg.Registry, func(fc *fake.Config) { fc.NodeFS = cfg.NodeFS })
		if err != nil {
			return cfg, release.Release{}, err
		}
		cfg.Runtime = rt
	}
	// The runtime runs containers with it; a bad one is a configuration error here first.
	if _, err := behavior.ParseValue(c.Simulator.Runtime.DefaultBehavior); err != nil {
		return cfg, release.Release{}, fmt.Errorf("simulatorConfiguration.runtime.defaultBehavior %q: %w", c.Simulator.Runtime.DefaultBehavior, err)
	}

	return cfg, rel, nil
}

// newKubelet holds what New's steps start from.
func newKubelet(cfg Config, rel release.Release) *Kubelet {
	c := cfg.Config
	k := &Kubelet{
		release:          rel,
		life:             lifecycle{done: make(chan struct{})},
		owned:            make(chan struct{}),
		recorder:         cfg.Recorder,
		cfg:              c,
		gate:             cfg.Gate,
		clock:            cfg.Clock,
		nodeName:         c.Simulator.NodeName,
		registry:         cfg.Registry,
		events:           cfg.Events,
		runtime:          cfg.Runtime,
		keepRuntime:      cfg.KeepRuntime,
		pods:             newPodManager(),
		reasons:          podstatus.NewReasonCache(),
		listener:         cfg.Listener,
		secureListener:   cfg.SecureListener,
		admissionMetrics: admission.NewMetrics(cfg.Registry),
		watchManifests:   cfg.WatchManifests,
		deferServingCert: cfg.DeferServingCert,
		manifestWatcher:  cfg.ManifestWatcher,
		manifestUIDRoot:  cfg.ManifestUIDRoot,
		kubeClient:       cfg.KubeClient,
		heartbeatClient:  cmp.Or[kubernetes.Interface](cfg.HeartbeatClient, cfg.KubeClient),
		eventClient:      cmp.Or[kubernetes.Interface](cfg.EventClient, cfg.KubeClient),
		inlineAPI:        cfg.InlineAPICalls,
		nodeFS:           cfg.NodeFS,
	}
	return k
}

// nodeIPOf is the node's IP as configured: --node-ip, else the address it serves on.
func nodeIPOf(c *config.Config) string {
	if c.NodeIP != "" {
		return c.NodeIP
	}
	return c.Kubelet.Address
}

// buildRuntimeClient wraps the runtime in the CRI client, instrumented.
func (k *Kubelet) buildRuntimeClient(cfg Config) error {
	c := k.cfg
	k.rt = client.New(cfg.Runtime, cfg.Clock, c.Kubelet.RuntimeRequestTimeout.Duration)
	k.rt.Instrument(cfg.Registry) // kubelet_runtime_operations_* by operation_type
	return nil
}

// buildNodeFiles seeds the node's files (hosts, resolv.conf) and the pods' DNS.
func (k *Kubelet) buildNodeFiles(Config) error {
	c := k.cfg
	var err error
	k.hostIP = hostIP(nodeIPOf(c))
	if err := seedNodeFiles(k.nodeFS, k.nodeName, k.hostIP); err != nil {
		return err
	}
	if k.dns, err = newDNSConfigurer(c, k.nodeName, k.hostIP); err != nil {
		return err
	}
	return nil
}

// buildStatus picks the PLEG design and builds the status cache and manager.
func (k *Kubelet) buildStatus(cfg Config) error {
	rel := k.release
	var err error
	evented := cfg.Gate.Enabled(features.EventedPLEG)
	// Until v1.37 the EventedPLEG was a PLEG of its own (docs/pleg.md): an emulated older
	// release runs that design when the gate is on.
	k.legacyPLEG = cfg.LegacyEventedPLEG || rel.Before(37)
	k.noPodRelists = cfg.LegacyEventedPLEG
	// Upstream's cache keeps dropping writes older than the cached one with the gate on; only
	// v1.30's answered an unknown pod at once (its event stream wrote the cache): v1.34 to
	// v1.36's waited for the global timestamp, as v1.37's does.
	k.cache = statuscache.New(statuscache.Config{EventedPLEG: evented, UnknownPodFresh: evented && cfg.LegacyEventedPLEG})
	restartAll := cfg.Gate.Enabled(features.RestartAllContainersOnContainerExits)
	if k.status, err = podstatus.NewManager(podstatus.ManagerConfig{Clock: cfg.Clock, OnChange: k.statusChanged,
		ContainerRestartRules: cfg.Gate.Enabled(features.ContainerRestartRules), RestartAllContainers: restartAll}); err != nil {
		return fmt.Errorf("create status manager: %w", err)
	}
	return nil
}

// buildProber builds the probe results, which wake the sync loop, and the prober.
func (k *Kubelet) buildProber(cfg Config) error {
	c := k.cfg
	rel := k.release
	var err error
	restartAll := cfg.Gate.Enabled(features.RestartAllContainersOnContainerExits)
	// The prober's results wake the sync loop, whose inputs they are.
	wakeSyncLoop := func() {
		if k.syncLoop != nil {
			k.syncLoop.Wake().Notify()
		}
	}
	k.probeResults = probeResults{
		liveness:  results.NewManager(wakeSyncLoop),
		readiness: results.NewManager(wakeSyncLoop),
		startup:   results.NewManager(wakeSyncLoop),
	}
	k.probeRegistry = metrics.NewRegistry("")
	// What a kubelet restart does to the containers it finds running: the prober and the
	// status generator must agree on it.
	changeOnRestart := cfg.Gate.Enabled(features.ChangeContainerStatusOnKubeletRestart)
	if k.prober, err = prober.NewManager(prober.Config{
		ContainerRestartRules:                 cfg.Gate.Enabled(features.ContainerRestartRules),
		RestartAllContainers:                  restartAll,
		ChangeContainerStatusOnKubeletRestart: changeOnRestart,
		Clock:                                 cfg.Clock,
		Status:                                k.status,
		Runtime:                               k.rt,
		Liveness:                              k.probeResults.liveness,
		Readiness:                             k.probeResults.readiness,
		Startup:                               k.probeResults.startup,
		Recorder:                              k.events,
		Registry:                              k.probeRegistry,
		Seed:                                  c.Simulator.Runtime.Seed,
		Network:                               cfg.Runtime.Network(),
		Release:                               rel,
	}); err != nil {
		return fmt.Errorf("create prober manager: %w", err)
	}
	return nil
}

// buildGenerator builds the pod cgroups, the declared features, the resize allocation
// and the pod status generator.
func (k *Kubelet) buildGenerator(cfg Config) error {
	rel := k.release
	var err error
	restartAll := cfg.Gate.Enabled(features.RestartAllContainersOnContainerExits)
	changeOnRestart := cfg.Gate.Enabled(features.ChangeContainerStatusOnKubeletRestart)
	k.podCgroups = podCgroups{tree: cfg.Runtime.CgroupFS(), fs: k.nodeFS}
	if cfg.Gate.Enabled(features.NodeDeclaredFeatures) {
		if k.declared, err = newDeclaredFeatures(cfg.Gate, rel.KubeletVersion()); err != nil {
			return err
		}
	}
	inPlaceResize := cfg.Gate.Enabled(features.InPlacePodVerticalScaling)
	podLevelResize := inPlaceResize && cfg.Gate.Enabled(features.InPlacePodLevelResourcesVerticalScaling)
	var resize podstatus.ResizeStatus
	k.podLevelResize = podLevelResize
	if inPlaceResize {
		k.alloc = allocation.New(cfg.Clock)
		k.resizeMetrics = newResizeMetrics(cfg.Registry)
		resize = resizeStatus{alloc: k.alloc, cgroups: k.podCgroups}
	}
	k.generator = podstatus.NewGenerator(podstatus.GeneratorConfig{
		Features: podstatus.Features{
			// GA since v1.33 and its gate gone since v1.36: every release from v1.34 on
			// has sidecars.
			SidecarContainers:                  true,
			PodReadyToStartContainersCondition: cfg.Gate.Enabled(features.PodReadyToStartContainersCondition),
			ContainerRestartRules:              cfg.Gate.Enabled(features.ContainerRestartRules),
			// The AllContainersRestarting condition and the statuses of a restart of all
			// containers.
			RestartAllContainersOnContainerExits: restartAll,
			InPlacePodVerticalScaling:            inPlaceResize,
			// The pod's status.resources and allocatedResources.
			InPlacePodLevelResourcesVerticalScaling: podLevelResize,
			PodObservedGenerationTracking:           cfg.Gate.Enabled(features.PodObservedGenerationTracking),
			// Whether a running container's status keeps the previous one's started.
			ChangeContainerStatusOnKubeletRestart: changeOnRestart,
		},
		Reasons: k.reasons,
		HostIP:  k.hostIP,
		Probes:  k.prober,
		Resize:  resize,
	})
	return nil
}

// buildUserNamespaces builds the pods' user namespace manager.
func (k *Kubelet) buildUserNamespaces(cfg Config) error {
	c := k.cfg
	var err error
	// UserNamespacesSupport is GA and locked: every node has the manager, as upstream's,
	// and its checks of userNamespaces.idsPerPod against maxPods.
	if k.userns, err = userns.New(klog.Background(), userns.Config{
		IDsPerPod: c.Kubelet.UserNamespacesIDsPerPod(),
		MaxPods:   int(c.Kubelet.MaxPods),
		NodeFS:    k.nodeFS,
		PodDir:    podDir,
		PodsDir:   podsDir,
		Seed:      uint64(c.Simulator.Runtime.Seed),
		Supports:  k.handlerSupportsUserNamespaces,
	}); err != nil {
		return fmt.Errorf("create user namespace manager: %w", err)
	}
	return nil
}

// buildRuntimeManager builds kuberuntime's manager over the CRI client.
func (k *Kubelet) buildRuntimeManager(cfg Config) error {
	c := k.cfg
	rel := k.release
	var err error
	restartAll := cfg.Gate.Enabled(features.RestartAllContainersOnContainerExits)
	inPlaceResize := cfg.Gate.Enabled(features.InPlacePodVerticalScaling)
	podLevelResize := k.podLevelResize
	var actuated kuberuntime.ActuatedState
	if k.alloc != nil {
		actuated = k.alloc
	}
	maxBackOff, initialBackOff := crashLoopBackOff(cfg.Gate, &k.cfg.Kubelet)
	k.imageVolume = cfg.Gate.Enabled(features.ImageVolume)
	if k.runtimeMgr, err = kuberuntime.NewManager(kuberuntime.Config{
		Runtime:             k.rt,
		Images:              k.rt,
		View:                k.rt,
		Clock:               cfg.Clock,
		Recorder:            k.events,
		Registry:            cfg.Registry,
		SidecarContainers:   true, // GA since v1.33, as above
		ContainerBackOff:    initialBackOff,
		MaxContainerBackOff: maxBackOff,
		Liveness:            k.probeResults.liveness,
		Startup:             k.probeResults.startup,
		// Resolved when a container is created: the objects are built after the API
		// caller.
		RunContainerOptions: k.runContainerOptions,
		OnPodSandboxReady:   k.onPodSandboxReady,
		ImageVolume:         k.imageVolume,
		UserNamespace:       k.podUserNamespace,
		RuntimeHandler:      k.runtimeHandler,
		NodeFS:              k.nodeFS,
		MemoryCapacity:      c.Simulator.Machine.Memory.Value(),
		ContainerLogTail:    k.containerLogTail,
		Network:             cfg.Runtime.Network(),
		Release:             rel,
		After:               cfg.Runtime.After,
		PullCredentials:     k.pullCredentials,
		// A container's own restartPolicy and rules override the pod's, and a
		// RestartAllContainers rule restarts all the pod's containers.
		ContainerRestartRules: cfg.Gate.Enabled(features.ContainerRestartRules),
		RestartAllContainers:  restartAll,
		// In-place pod resize.
		InPlacePodVerticalScaling:               inPlaceResize,
		InPlacePodLevelResourcesVerticalScaling: podLevelResize,
		InPlacePodVerticalScalingInitContainers: inPlaceResize && cfg.Gate.Enabled(features.InPlacePodVerticalScalingInitContainers),
		Actuated:                                actuated,
		PodCgroups:                              k.podCgroups,
		MemoryUsage:                             k.podMemoryUsage,
	}); err != nil {
		return fmt.Errorf("create runtime manager: %w", err)
	}
	return nil
}

// buildSyncer builds the pod syncer.
func (k *Kubelet) buildSyncer(cfg Config) error {
	var err error
	restartAll := cfg.Gate.Enabled(features.RestartAllContainersOnContainerExits)
	if k.syncer, err = NewSyncer(SyncerConfig{
		Runtime:   k.runtimeMgr,
		Status:    k.status,
		Generator: k.generator,
		Reasons:   k.reasons,
		Clock:     cfg.Clock,
		Recorder:  k.events,
		Registry:  cfg.Registry,
		Probes:    k.prober,
		Prepare:   k.preparePod,
		AfterSync: k.resizeFailed,
		// After a restart of all containers, the pod is synced again at once.
		RestartAllContainers: restartAll,
		Requeue:              k.requeuePod,
		RequestRelist:        k.requestPodRelist,
	}); err != nil {
		return fmt.Errorf("create pod syncer: %w", err)
	}
	return nil
}

// buildPodWorkers builds the pod workers.
func (k *Kubelet) buildPodWorkers(cfg Config) error {
	c := k.cfg
	var err error
	if k.podWorkers, err = podworkers.New(podworkers.Config{
		Handler:        k,
		Cache:          k.cache,
		Clock:          cfg.Clock,
		Recorder:       k.events,
		Registry:       cfg.Registry,
		ResyncInterval: c.Kubelet.SyncFrequency.Duration,
		JitterSeed:     c.Simulator.Runtime.Seed,
	}); err != nil {
		return fmt.Errorf("create pod workers: %w", err)
	}
	return nil
}

// buildRuntimeState builds the runtime state and the health checks that feed it.
func (k *Kubelet) buildRuntimeState(cfg Config) error {
	c := k.cfg
	var err error
	if k.state, err = runtimestate.New(runtimestate.Config{
		Clock:   cfg.Clock,
		Runtime: k.rt,
		Period:  c.Simulator.Runtime.StatusPollPeriod.Duration,
	}); err != nil {
		return fmt.Errorf("create runtime state: %w", err)
	}
	// As upstream, the PLEG health checks feed RuntimeErrors, hence both the sync loop
	// back-off and the node's Ready condition ("PLEG is not healthy: ...").
	k.state.AddHealthCheck(k.genericPLEG.Name(), k.genericPLEG.Healthy)
	if k.legacyEventedPLEG != nil {
		// Unlike upstream, v1.30's evented check (a full event channel) does not stop the
		// sync loop: the loop is what drains the channel, so upstream's node stays NotReady
		// for good once a burst fills it (docs/differences.md). v1.37's EventedPLEG has no
		// health check.
		k.state.AddReportOnlyHealthCheck(k.legacyEventedPLEG.Name(), k.legacyEventedPLEG.Healthy)
	}

	return nil
}

// buildAPICaller makes the caller every call to the API server goes through, in cluster
// mode (inline for tests that want the calls made at once), and the node's API client.
func (k *Kubelet) buildAPICaller(Config) error {
	if k.kubeClient == nil {
		return nil
	}
	k.apiCaller = cluster.NewCaller(context.Background())
	if k.inlineAPI {
		k.apiCaller = cluster.Inline()
	}
	k.nodeClient = cluster.NewNodeAPI(k.heartbeatClient, k.apiCaller, k.heartbeatTimeout()).RegisterWith(k.kubeClient)
	return nil
}

// buildAPIObjects builds the reader of the ConfigMaps and Secrets pods use, and the
// cluster DNS.
func (k *Kubelet) buildAPIObjects(cfg Config) error {
	c := k.cfg
	k.objects = newAPIObjects(k.kubeClient, k.apiCaller, k.clock, changeDetection(c.Kubelet.ConfigMapAndSecretChangeDetectionStrategy), c.Kubelet.SyncFrequency.Duration)
	k.startClusterDNS(cfg.Runtime.Network())
	if k.recorder != nil {
		k.objects.observe = k.recorder.APIObject
	}
	return nil
}

// buildShutdown builds the graceful node shutdown manager.
func (k *Kubelet) buildShutdown(cfg Config) error {
	c := k.cfg
	var err error
	if k.shutdown, err = nodeshutdown.NewManager(nodeshutdown.Config{
		Clock:                           cfg.Clock,
		ShutdownGracePeriod:             c.Kubelet.ShutdownGracePeriod.Duration,
		ShutdownGracePeriodCriticalPods: c.Kubelet.ShutdownGracePeriodCriticalPods.Duration,
		Enabled:                         c.GracefulShutdownEnabled(cfg.Gate),
		GetPods:                         k.GetActivePods,
		KillPod:                         k.killPodNow,
		Recorder:                        k.events,
		NodeName:                        k.nodeName,
		SyncNodeStatus:                  k.syncNodeStatusNow,
		PodObservedGenerationTracking:   cfg.Gate.Enabled(features.PodObservedGenerationTracking),
	}); err != nil {
		return fmt.Errorf("create node shutdown manager: %w", err)
	}

	return nil
}

// buildGC builds the container deletor and the periodic garbage collection.
func (k *Kubelet) buildGC(cfg Config) error {
	k.deletor = newContainerDeletor(k.runtimeMgr)
	k.gc = runner.NewPeriodic(cfg.Clock, runner.Every(ContainerGCPeriod), func(ctx context.Context) {
		if err := k.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Container garbage collection failed")
		}
	})
	return nil
}

// buildSyncLoop builds the sync loop over the config, PLEG and probe channels.
func (k *Kubelet) buildSyncLoop(cfg Config) error {
	c := k.cfg
	var err error
	if k.syncLoop, err = syncloop.New(syncloop.Config{
		Clock:                  cfg.Clock,
		ConfigCh:               k.merger.Updates(),
		PLEGCh:                 k.genericPLEG.Watch(),
		ResyncInterval:         c.Kubelet.SyncFrequency.Duration,
		RuntimeErrors:          k.state.SyncErrors,
		GetPodsToSync:          k.getPodsToSync,
		GetPodByUID:            k.pods.GetPodByUID,
		CleanUpContainersInPod: k.cleanUpContainersInPod,
		SourcesReady:           k.merger.SeenAllSources,
		Handler:                k,
		Registry:               cfg.Registry,
		Liveness:               k.probeResults.liveness,
		Readiness:              k.probeResults.readiness,
		Startup:                k.probeResults.startup,
	}); err != nil {
		return fmt.Errorf("create sync loop: %w", err)
	}
	if k.fileSource == nil {
		// Without a staticPodPath the file source is seen at once, empty, so housekeeping
		// can run (upstream's file source reports an empty snapshot too).
		_ = k.merger.Push(context.Background(), kubetypes.FileSource, nil)
	}
	return nil
}

// buildStateMetrics serves the node's state under kube-state-metrics' names, standalone.
func (k *Kubelet) buildStateMetrics(cfg Config) error {
	if k.kubeClient == nil {
		k.stateRegistry = metrics.NewRegistry("")
		k.stateRegistry.MustRegister(statemetrics.New(statemetrics.Config{
			NodeName:       k.nodeName,
			NodeConditions: k.nodeStatus.Conditions,
			Pods:           k.GetPods,
		}))
	}
	return nil
}

// buildServers builds the HTTP servers: read-only and, if any, secure.
func (k *Kubelet) buildServers(cfg Config) error {
	var err error
	scfg := k.serverConfig()
	if k.secureListener != nil {
		if err := k.buildSecurePort(&scfg); err != nil {
			return err
		}
	}
	if k.server, err = server.New(scfg); err != nil {
		return fmt.Errorf("create HTTP server: %w", err)
	}
	return nil
}

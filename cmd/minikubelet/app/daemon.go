package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/clientcert"
	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/cpubudget"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kubelet"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/podsource"
	"github.com/minikubelet/minikubelet/pkg/record"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// runDaemon runs the node (or the --node-count nodes) until ctx ends (SIGINT or SIGTERM).
// The configuration has been loaded, validated and applied to the feature gate; the
// effective configuration has been logged.
//
// For each node it builds the metrics registry, the fake runtime from the
// SimulatorConfiguration and the kubelet, binds the HTTP API on address:readOnlyPort and
// address:port (port 0 picks a free port; the bound addresses are logged as `Serving
// HTTP` and `Serving HTTPS`) and runs everything until ctx ends, then shuts down
// (terminating pods first when graceful node shutdown is enabled). Nodes share the real
// clock, the feature gate and the API server's connection, nothing else: if one fails,
// the others are stopped.
func runDaemon(ctx context.Context, cfg *config.Config) error {
	logger := klog.FromContext(ctx)
	tuneGC(logger)
	var rest *restclient.Config
	if cfg.Kubeconfig != "" && !managedClientCert(cfg) {
		r, err := kubeRESTConfig(cfg)
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		rest = r
		logger.Info("Joining the cluster of the kubeconfig", "kubeconfig", cfg.Kubeconfig, "nodes", cfg.Nodes())
	}
	n := cfg.Nodes()
	var rec *record.Recorder
	if cfg.Record != "" {
		r, err := openRecorder(cfg, logger)
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		rec = r
		defer rec.Close() // written once; the success path below reports its error
	}
	nodes := make([]*kubelet.Kubelet, 0, n)
	// The nodes of one process share a pod network, each with a pod range of its own
	// (10.64.0.0/10 in /20s: 4,094 pods per node, 1,024 nodes), so their pods reach each
	// other as pods of one cluster do; a single node keeps containerd's 10.88.0.0/16.
	var podNetwork *simnet.Network
	var watcher *podsource.SharedWatcher
	if n > 1 {
		podNetwork = simnet.New()
		// One inotify instance for every node's manifest directory: Linux allows 128
		// instances per user by default, a thousand nodes need one each otherwise.
		w, err := podsource.NewSharedWatcher()
		if err != nil {
			return err
		}
		watcher = w
		watchCtx, stopWatch := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); w.Run(watchCtx) }()
		defer func() { stopWatch(); <-done }()
	}
	// The programs of every node share one CPU budget (runtime.programCPU, --program-cpu).
	budget := cpubudget.New(cfg.Simulator.Runtime.ProgramCPU.MilliValue())
	for i := 0; i < n; i++ {
		pn := podNet{budget: budget}
		if n > 1 {
			pn.network, pn.cidr = podNetwork, nodePodCIDR(i)
		}
		k, err := newNode(ctx, cfg.ForNode(i), n > 1, rest, pn, rec, watcher)
		if err != nil {
			for _, k := range nodes {
				k.Close()
			}
			return err
		}
		nodes = append(nodes, k)
	}
	if n == 1 {
		err := nodes[0].Run(ctx)
		if rec != nil {
			if cerr := rec.Close(); cerr != nil && err == nil {
				err = cerr
			}
			logger.Info("Flight recording written", "file", cfg.Record, "replay", "minikubelet simulate -f "+cfg.Record)
		}
		return err
	}
	// Every node runs until ctx ends or one of them fails, which stops the rest.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, n)
	started := 0
	for i, k := range nodes {
		if i > 0 && i%nodeWave == 0 {
			// Nodes start in waves, a second apart, as the kubelets of a cluster start at
			// different instants: their 10 s lease renewals and status updates then spread
			// over the period instead of landing on the API server in the same second.
			logger.Info("Started nodes", "started", i, "nodes", n)
			select {
			case <-runCtx.Done():
			case <-clock.RealClock{}.After(nodeWaveInterval):
			}
			if runCtx.Err() != nil {
				break
			}
		}
		started++
		go func() {
			err := k.Run(klog.NewContext(runCtx, klog.LoggerWithValues(logger, "node", k.NodeName())))
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	if started == n {
		logger.Info("Started nodes", "started", n, "nodes", n)
	}
	for _, k := range nodes[started:] {
		k.Close() // never run: the process stopped while starting
	}
	var first error
	for range nodes[:started] {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// The nodes of a --node-count process start nodeWave at a time, nodeWaveInterval apart: a
// thousand nodes over ten seconds, the period of the kubelet's lease renewal and status
// update.
const (
	nodeWave         = 100
	nodeWaveInterval = time.Second
)

// openRecorder starts the flight recording of --record: a scenario whose header replays this
// node's configuration.
func openRecorder(cfg *config.Config, logger klog.Logger) (*record.Recorder, error) {
	var content string
	if cfg.ConfigFile != "" {
		data, err := os.ReadFile(cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("--record: read the config file to record it: %w", err)
		}
		content = string(data)
	}
	args := config.ReplayArgs(cfg.Args)
	// The node's name, whatever set it (a flag, the file, the hostname).
	args = append([]string{"--hostname-override=" + cfg.Simulator.NodeName}, args...)
	logger.Info("Flight recording", "file", cfg.Record, "maxBytes", cfg.RecordMaxBytes)
	return record.Open(record.Options{
		Path:     cfg.Record,
		MaxBytes: cfg.RecordMaxBytes,
		Clock:    clock.RealClock{},
		Node:     cfg.Simulator.NodeName,
		Args:     args,
		Config:   content,
		Seed:     cfg.Simulator.Runtime.Seed,
		Cluster:  cfg.Kubeconfig != "",
		Logger:   logger,
	})
}

// newNode builds one node of the daemon: its registry, runtime, listeners and kubelet.
// multi is set with --node-count above 1: the node's manifest subdirectory is created.
// podNet is a node's place on its process's pod network (zero: a network of its own).
type podNet struct {
	network *simnet.Network
	cidr    string
	budget  *cpubudget.Budget // the process's programs' CPU
}

// nodePodCIDR is the pod range of node i of a process: the i-th /20 of 10.64.0.0/10.
func nodePodCIDR(i int) string {
	n := uint32(10)<<24 | uint32(64)<<16 + uint32(i%1024)<<12
	return fmt.Sprintf("%d.%d.%d.%d/20", n>>24, n>>16&0xff, n>>8&0xff, n&0xff)
}

// processCollectors are the Go runtime's and the process' collectors, one pair that every
// node's registry holds: they describe the one process, and a pair per node was 10 MB of
// descriptors at 1,000 nodes. A collector may be in many registries; each collects it under
// its own lock.
var processCollectors = sync.OnceValue(func() []prometheus.Collector {
	return []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
})

func newNode(ctx context.Context, cfg *config.Config, multi bool, rest *restclient.Config, pn podNet, rec *record.Recorder, watcher *podsource.SharedWatcher) (*kubelet.Kubelet, error) {
	logger := klog.FromContext(ctx)
	gate := features.DefaultMutableFeatureGate
	clk := clock.RealClock{}
	node := cfg.Simulator.NodeName

	reg := metrics.NewRegistry(cfg.Simulator.MetricsPrefix)
	if reg.Prefix() == config.DefaultMetricsPrefix {
		// kubelet_node_name{node}, which kubelet dashboards and alerts join on.
		reg.RegisterNodeName(node)
	}
	// As the kubelet's registry: the Go runtime's and the process' own metrics
	// (go_goroutines, process_resident_memory_bytes, process_cpu_seconds_total), which the
	// kubelet dashboards' memory, CPU and goroutine panels read. The daemon only: in simulate
	// mode they would describe the simulator, not the node. With --node-count they describe
	// the process every node shares.
	reg.MustRegister(processCollectors()...)
	if err := gate.AddMetrics(reg); err != nil {
		return nil, fmt.Errorf("register feature gate metrics: %w", err)
	}
	if rest == nil && cfg.Kubeconfig != "" {
		// The node's own certificate: bootstrapped with the bootstrap token and/or rotated,
		// by a certificate manager of its own, asked to stop with the daemon.
		cc, err := clientcert.Load(clientcert.Config{Kubeconfig: cfg.Kubeconfig, BootstrapKubeconfig: cfg.BootstrapKubeconfig,
			CertDir: cfg.CertDir, NodeName: node, Rotate: cfg.Kubelet.RotateCertificates, Registry: reg, Prefix: reg.Prefix(),
			Clock: clk, Logger: logger})
		if err != nil {
			return nil, &ExitError{Code: 2, Err: err}
		}
		clientLimits(cc.Rest, cfg)
		cc.Start(ctx)
		context.AfterFunc(ctx, cc.Stop)
		rest = cc.Rest
	}
	var clients nodeClients
	if rest != nil {
		c, err := kubeClients(rest, cfg, node)
		if err != nil {
			return nil, &ExitError{Code: 2, Err: fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)}
		}
		clients = c
	}
	if multi && cfg.Kubelet.StaticPodPath != "" {
		if err := os.MkdirAll(cfg.Kubelet.StaticPodPath, 0o755); err != nil {
			return nil, fmt.Errorf("node %s: create its static pod directory (--node-count): %w", node, err)
		}
	}

	rt, err := kubelet.NewRuntime(cfg, clk, reg, func(fc *fake.Config) {
		fc.Network, fc.PodCIDR, fc.ProgramCPU = pn.network, pn.cidr, pn.budget
	})
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.Kubelet.Address, strconv.Itoa(int(cfg.Kubelet.ReadOnlyPort)))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on address:readOnlyPort %s (--address, --read-only-port): %w", addr, err)
	}
	secureAddr := net.JoinHostPort(cfg.Kubelet.Address, strconv.Itoa(int(cfg.Kubelet.Port)))
	secureLn, err := net.Listen("tcp", secureAddr)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("listen on address:port %s (--address, --port): %w", secureAddr, err)
	}
	k, err := kubelet.New(kubelet.Config{
		Config:          cfg,
		Gate:            gate,
		Clock:           clk,
		Registry:        reg,
		Runtime:         rt,
		Listener:        ln,
		SecureListener:  secureLn,
		WatchManifests:  true,
		KubeClient:      clients.main,
		HeartbeatClient: clients.heartbeat,
		EventClient:     clients.events,
		Recorder:        rec,
		// A thousand nodes would spend minutes of start-up on certificates (0.1 s each).
		DeferServingCert: multi,
		ManifestWatcher:  watcher,
	})
	if err != nil {
		_ = ln.Close()
		_ = secureLn.Close()
		return nil, err
	}
	logger.Info("Starting minikubelet", "node", node, "configFile", cfg.ConfigFile,
		"staticPodPath", cfg.Kubelet.StaticPodPath, "eventedPLEG", gate.Enabled(features.EventedPLEG),
		"gracefulNodeShutdown", cfg.GracefulShutdownEnabled(gate))
	debug := cfg.Kubelet.EnableDebuggingHandlers != nil && *cfg.Kubelet.EnableDebuggingHandlers
	logger.Info("Serving HTTP", "address", ln.Addr().String(), "debuggingHandlers", debug, "node", node)
	kc := cfg.Kubelet
	logger.Info("Serving HTTPS", "address", secureLn.Addr().String(), "anonymous", *kc.Authentication.Anonymous.Enabled,
		"webhookAuthentication", *kc.Authentication.Webhook.Enabled, "clientCAFile", kc.Authentication.X509.ClientCAFile,
		"authorizationMode", kc.Authorization.Mode, "node", node)
	return k, nil
}

// kubeRESTConfig is the API client configuration of --kubeconfig, with the kubeAPIQPS and
// kubeAPIBurst of the configuration (kubelet v1.37 defaults 50 and 100). An unreadable or invalid
// kubeconfig is an error naming the file.
func kubeRESTConfig(cfg *config.Config) (*restclient.Config, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	clientLimits(restCfg, cfg)
	return restCfg, nil
}

// managedClientCert says whether a certificate manager keeps the nodes' client certificates
// (--bootstrap-kubeconfig, rotateCertificates): then each node has a client of its own.
func managedClientCert(cfg *config.Config) bool {
	return cfg.BootstrapKubeconfig != "" || cfg.Kubelet.RotateCertificates
}

// clientLimits applies the configuration's contentType (default protobuf), kubeAPIQPS and
// kubeAPIBurst (defaults 50 and 100) to a node's client, as the kubelet's
// kubeClientConfigOverrides; Validate has checked them.
func clientLimits(restCfg *restclient.Config, cfg *config.Config) {
	kc := &cfg.Kubelet
	if kc.ContentType != "" {
		// Protobuf costs the nodes and the API server a fraction of JSON's encoding; the
		// kubelet asks for it and accepts JSON for the types that have no protobuf.
		restCfg.ContentType = kc.ContentType
		if kc.ContentType == runtime.ContentTypeProtobuf {
			restCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		}
	}
	if kc.KubeAPIQPS != nil {
		restCfg.QPS = float32(*kc.KubeAPIQPS)
	}
	restCfg.Burst = int(kc.KubeAPIBurst)
}

// nodeClients are one node's API clients, as the kubelet's: the main one with kubeAPIQPS
// and kubeAPIBurst, one for the node status and lease with no rate limit, one for events
// with eventRecordQPS and eventBurst. Each has its own limiter (the limits are per kubelet)
// and the node's user agent; all clients of one configuration share client-go's cached
// transport, so N nodes use the connection of one.
type nodeClients struct{ main, heartbeat, events kubernetes.Interface }

func kubeClients(rest *restclient.Config, cfg *config.Config, node string) (nodeClients, error) {
	build := func(qps float32, burst int) (kubernetes.Interface, error) {
		c := restclient.CopyConfig(rest)
		c.UserAgent = "minikubelet/" + node
		c.QPS, c.Burst = qps, burst
		return cluster.NodeClientset(c)
	}
	var out nodeClients
	var err error
	if out.main, err = build(rest.QPS, rest.Burst); err != nil {
		return out, err
	}
	// A negative QPS is client-go's "no rate limiter" (the kubelet's heartbeat client).
	if out.heartbeat, err = build(-1, 0); err != nil {
		return out, err
	}
	kc := &cfg.Kubelet
	var eventQPS float32
	if kc.EventRecordQPS != nil {
		eventQPS = float32(*kc.EventRecordQPS)
	}
	out.events, err = build(eventQPS, int(kc.EventBurst))
	return out, err
}

// daemonGCPercent is the garbage collector's target while the daemon runs, unless the GOGC
// environment variable sets one. Go's default (100) lets the heap grow to twice what is
// live before collecting; every simulated pod lives in this one heap, so at 10,000 pods
// that doubles a few hundred MB. At 35 the daemon keeps about 1.35x the live heap: 10,000
// nginx + redis pods measured 361 MiB at 2.8% of a core, against 373 to 397 MiB at 2.7 to
// 3.3% at 40 and 398 to 414 MiB at 2.2 to 2.8% at 50, and started 0.5 to 1 s later than
// at 50 (docs/scale.md has the figures). Simulate mode and the client commands keep Go's
// default: they are short and want the throughput.
const daemonGCPercent = 35

// tuneGC applies daemonGCPercent unless GOGC is set (GOGC=100 restores Go's default).
func tuneGC(logger klog.Logger) {
	if v, set := os.LookupEnv("GOGC"); set {
		logger.V(2).Info("Garbage collector target from the environment", "GOGC", v)
		return
	}
	debug.SetGCPercent(daemonGCPercent)
	logger.V(2).Info("Garbage collector target", "GOGC", daemonGCPercent)
}

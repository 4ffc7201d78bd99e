package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kubelet"
	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// runDaemon runs the node until ctx ends (SIGINT or SIGTERM). The configuration has been
// loaded, validated and applied to the feature gate; the effective configuration has
// been logged.
//
// It builds the real clock, the metrics registry, the fake runtime from the
// SimulatorConfiguration and the kubelet, binds the HTTP API on address:readOnlyPort
// (port 0 picks a free port; the bound address is logged as `Serving HTTP`) and runs
// everything until ctx ends, then shuts down (terminating pods first when graceful node
// shutdown is enabled).
func runDaemon(ctx context.Context, cfg *config.Config) error {
	logger := klog.FromContext(ctx)
	gate := features.DefaultMutableFeatureGate
	clk := clock.RealClock{}

	reg := metrics.NewRegistry(cfg.Simulator.MetricsPrefix)
	if reg.Prefix() == config.DefaultMetricsPrefix {
		// kubelet_node_name{node}, which kubelet dashboards and alerts join on.
		reg.RegisterNodeName(cfg.Simulator.NodeName)
	}
	// As the kubelet's registry: the Go runtime's and the process' own metrics
	// (go_goroutines, process_resident_memory_bytes, process_cpu_seconds_total), which the
	// kubelet dashboards' memory, CPU and goroutine panels read. The daemon only: in simulate
	// mode they would describe the simulator, not the node.
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := gate.AddMetrics(reg); err != nil {
		return fmt.Errorf("register feature gate metrics: %w", err)
	}
	var client kubernetes.Interface
	if cfg.Kubeconfig != "" {
		c, err := kubeClient(cfg)
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		client = c
		logger.Info("Joining the cluster of the kubeconfig as a node", "kubeconfig", cfg.Kubeconfig, "node", cfg.Simulator.NodeName)
	}

	rt, err := kubelet.NewRuntime(cfg, clk, reg)
	if err != nil {
		return err
	}

	addr := net.JoinHostPort(cfg.Kubelet.Address, strconv.Itoa(int(cfg.Kubelet.ReadOnlyPort)))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on address:readOnlyPort %s (--address, --read-only-port): %w", addr, err)
	}
	secureAddr := net.JoinHostPort(cfg.Kubelet.Address, strconv.Itoa(int(cfg.Kubelet.Port)))
	secureLn, err := net.Listen("tcp", secureAddr)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("listen on address:port %s (--address, --port): %w", secureAddr, err)
	}
	k, err := kubelet.New(kubelet.Config{
		Config:         cfg,
		Gate:           gate,
		Clock:          clk,
		Registry:       reg,
		Runtime:        rt,
		Listener:       ln,
		SecureListener: secureLn,
		WatchManifests: true,
		KubeClient:     client,
	})
	if err != nil {
		_ = ln.Close()
		_ = secureLn.Close()
		return err
	}
	logger.Info("Starting minikubelet", "node", cfg.Simulator.NodeName, "configFile", cfg.ConfigFile,
		"staticPodPath", cfg.Kubelet.StaticPodPath, "eventedPLEG", gate.Enabled(features.EventedPLEG),
		"gracefulNodeShutdown", cfg.GracefulShutdownEnabled(gate))
	debug := cfg.Kubelet.EnableDebuggingHandlers != nil && *cfg.Kubelet.EnableDebuggingHandlers
	logger.Info("Serving HTTP", "address", ln.Addr().String(), "debuggingHandlers", debug)
	kc := cfg.Kubelet
	logger.Info("Serving HTTPS", "address", secureLn.Addr().String(), "anonymous", *kc.Authentication.Anonymous.Enabled,
		"webhookAuthentication", *kc.Authentication.Webhook.Enabled, "clientCAFile", kc.Authentication.X509.ClientCAFile,
		"authorizationMode", kc.Authorization.Mode)
	return k.Run(ctx)
}

// The kubelet's client defaults (v1.30 kubeAPIQPS and kubeAPIBurst).
const (
	defaultKubeAPIQPS   = 50
	defaultKubeAPIBurst = 100
)

// kubeClient builds the API client of --kubeconfig, with the kubeAPIQPS and kubeAPIBurst of
// the configuration (v1.30 defaults 50 and 100). An unreadable or invalid kubeconfig is an
// error naming the file.
func kubeClient(cfg *config.Config) (kubernetes.Interface, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	restCfg.QPS, restCfg.Burst = defaultKubeAPIQPS, defaultKubeAPIBurst
	if raw := cfg.Kubelet.KubeAPIQPS; len(raw) > 0 {
		var qps float32
		if err := json.Unmarshal(raw, &qps); err != nil || qps <= 0 {
			return nil, fmt.Errorf("kubeletConfiguration.kubeAPIQPS %s: want a number greater than 0", raw)
		}
		restCfg.QPS = qps
	}
	if raw := cfg.Kubelet.KubeAPIBurst; len(raw) > 0 {
		var burst int
		if err := json.Unmarshal(raw, &burst); err != nil || burst <= 0 {
			return nil, fmt.Errorf("kubeletConfiguration.kubeAPIBurst %s: want an integer greater than 0", raw)
		}
		restCfg.Burst = burst
	}
	restCfg.UserAgent = "minikubelet/" + cfg.Simulator.NodeName
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	return client, nil
}

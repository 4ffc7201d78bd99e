package app

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kubelet"
	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// kubeletMetricsPrefix is the prefix that gives the real kubelet's metric names; with it
// the daemon also exposes kubelet_node_name{node}, which kubelet dashboards join on.
const kubeletMetricsPrefix = "kubelet_"

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
	if reg.Prefix() == kubeletMetricsPrefix {
		reg.RegisterNodeName(cfg.Simulator.NodeName)
	}
	if err := gate.AddMetrics(reg); err != nil {
		return fmt.Errorf("register feature gate metrics: %w", err)
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
	k, err := kubelet.New(kubelet.Config{
		Config:         cfg,
		Gate:           gate,
		Clock:          clk,
		Registry:       reg,
		Runtime:        rt,
		Listener:       ln,
		WatchManifests: true,
	})
	if err != nil {
		_ = ln.Close()
		return err
	}
	logger.Info("Starting minikubelet", "node", cfg.Simulator.NodeName, "configFile", cfg.ConfigFile,
		"staticPodPath", cfg.Kubelet.StaticPodPath, "eventedPLEG", gate.Enabled(features.EventedPLEG),
		"gracefulNodeShutdown", cfg.GracefulShutdownEnabled(gate))
	debug := cfg.Kubelet.EnableDebuggingHandlers != nil && *cfg.Kubelet.EnableDebuggingHandlers
	logger.Info("Serving HTTP", "address", ln.Addr().String(), "debuggingHandlers", debug)
	return k.Run(ctx)
}

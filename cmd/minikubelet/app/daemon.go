package app

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/config"
)

// runDaemon runs the node until ctx ends (SIGINT or SIGTERM). The configuration has been
// loaded, validated and applied to the feature gate; the effective configuration has
// been logged.
//
// For now it only waits: the runtime, PLEG, syncLoop, pod workers and node status are
// wired here by a later change, which replaces this body.
func runDaemon(ctx context.Context, cfg *config.Config) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting minikubelet", "node", cfg.Simulator.NodeName, "configFile", cfg.ConfigFile)
	logger.Info("The pod, PLEG and node status loops are not wired yet: no pods will run; waiting for a signal")
	<-ctx.Done()
	logger.Info("Shutting down", "reason", context.Cause(ctx))
	return nil
}

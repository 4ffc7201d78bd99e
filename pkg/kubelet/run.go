package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

// ErrSynchronous is returned by Run on a kubelet built with Config.Synchronous.
var ErrSynchronous = errors.New("kubelet: Run needs goroutine pod workers; this kubelet was built synchronous (simulate mode steps it)")

// Run is the daemon runner: it starts every component's runner in its own goroutine
// group (runtime transitions, runtime status poll, PLEG, pod workers, sync loop, container
// GC and deletor, node status and lease, the static pod source and the HTTP server when a
// listener was given) and blocks until ctx ends.
//
// Then it shuts down: with graceful node shutdown enabled (GracefulNodeShutdown gate and
// shutdownGracePeriod > 0), the shutdown manager first terminates the pods within
// shutdownGracePeriod while every loop keeps running (the pod workers need the PLEG to
// see their containers stop); then the components stop in order, sources first and the
// HTTP server last, each waiting for its goroutines. Run returns nil after a shutdown, or
// the error that stopped the HTTP server early.
func (k *Kubelet) Run(ctx context.Context) error {
	if k.synchronous {
		return ErrSynchronous
	}
	logger := klog.FromContext(ctx)
	// Every loop runs under base, which outlives ctx: the shutdown below needs them.
	base := klog.NewContext(context.WithoutCancel(ctx), logger)
	start := func(name string, fns ...func(context.Context)) *runner.Group {
		g := runner.NewGroup(base)
		for _, fn := range fns {
			g.Go(name, fn)
		}
		return g
	}

	runtimeG := start("runtime", k.runtime.Run)
	stateG := start("runtime-status", k.state.Run)
	plegG := start("pleg", k.runPLEG)
	syncG := start("sync-loop", k.syncLoop.Run)
	gcG := start("container-gc", k.runGarbageCollection, k.deletor.run)
	nodeG := start("node-status", k.nodeStatus.Run)
	sourceG := start("pod-source", k.runSources)
	serveErr := make(chan error, 1)
	var serverG *runner.Group
	if k.listener != nil {
		serverG = start("http-server", func(ctx context.Context) { serveErr <- k.server.ServeListener(ctx, k.listener) })
	}

	var err error
	select {
	case <-ctx.Done():
		logger.Info("Shutting down", "reason", context.Cause(ctx))
	case err = <-serveErr:
		logger.Error(err, "HTTP server stopped; shutting down")
	}

	if k.shutdown.Enabled() {
		grace := k.cfg.Kubelet.ShutdownGracePeriod.Duration
		start := k.clock.Now()
		logger.Info("Graceful node shutdown: terminating pods", "shutdownGracePeriod", grace,
			"shutdownGracePeriodCriticalPods", k.cfg.Kubelet.ShutdownGracePeriodCriticalPods.Duration, "pods", len(k.GetActivePods()))
		if serr := k.shutdown.Shutdown(base); serr != nil {
			logger.Error(serr, "Graceful node shutdown did not complete")
		} else {
			logger.Info("Graceful node shutdown complete")
		}
		k.waitForTerminations(base, start.Add(grace))
	}

	// Stop producers before consumers: no new pods, then no new syncs, then the workers
	// (cancelling syncs in flight), then what they read and report.
	sourceG.Stop()
	syncG.Stop()
	k.podWorkers.Stop()
	k.shutdown.Stop()
	gcG.Stop()
	plegG.Stop()
	nodeG.Stop()
	stateG.Stop()
	runtimeG.Stop()
	if serverG != nil {
		serverG.Stop()
		if err == nil {
			select {
			case err = <-serveErr:
			default:
			}
		}
	}
	logger.Info("Stopped")
	if err != nil {
		return fmt.Errorf("serve HTTP: %w", err)
	}
	return nil
}

// shutdownSettle is how long the daemon waits, at least, after the shutdown manager is
// done for the terminations it requested to finish. A container that ignores SIGTERM is
// killed when its grace period ends, the very instant its group times out; the pod
// workers need a moment more to see it stop and record the pod's final status.
const shutdownSettle = 2 * time.Second

// terminationPollPeriod is how often waitForTerminations looks at the pod workers.
const terminationPollPeriod = 100 * time.Millisecond

// waitForTerminations waits until the pod workers have finished every pod whose termination
// was requested, until deadline (the end of shutdownGracePeriod) or shutdownSettle from
// now, whichever is later, so the loops stop with the runtime's containers stopped and the
// pods' final statuses written. Terminations still going on then are abandoned.
func (k *Kubelet) waitForTerminations(ctx context.Context, deadline time.Time) {
	if settle := k.clock.Now().Add(shutdownSettle); deadline.Before(settle) {
		deadline = settle
	}
	for {
		n := k.podWorkers.UnfinishedTerminations()
		if n == 0 {
			return
		}
		if !k.clock.Now().Before(deadline) {
			klog.FromContext(ctx).Info("Stopping with pod terminations still in progress", "pods", n)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-k.clock.After(terminationPollPeriod):
		}
	}
}

// runPLEG runs the PLEG(s) until ctx ends: the generic one always, the evented one too with
// the gate on (upstream starts both).
func (k *Kubelet) runPLEG(ctx context.Context) {
	k.genericPLEG.Start(ctx)
	if k.eventedPLEG != nil {
		k.eventedPLEG.Start(ctx)
	}
	<-ctx.Done()
	if k.eventedPLEG != nil {
		k.eventedPLEG.Stop()
	}
	k.genericPLEG.Stop()
}

// runSources runs the static pod source into the merger; without a staticPodPath the file
// source reports one empty snapshot so the sync loop sees every source and housekeeping
// can run.
func (k *Kubelet) runSources(ctx context.Context) {
	if k.fileSource == nil {
		if err := k.merger.Push(ctx, kubetypes.FileSource, nil); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Failed to report the empty static pod source")
		}
		return
	}
	klog.FromContext(ctx).Info("Adding static pod path", "path", k.fileSource.Path())
	k.fileSource.Run(ctx, k.merger)
}

// runGarbageCollection collects dead containers every ContainerGCPeriod.
func (k *Kubelet) runGarbageCollection(ctx context.Context) {
	runner.Every(ctx, k.clock, runner.Fixed(ContainerGCPeriod), func(ctx context.Context) {
		if err := k.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Container garbage collection failed")
		}
	})
}

// Stop ends what the components started on their own (pod worker goroutines, PLEG loops, a
// shutdown in progress) and waits for it. Run does this itself; call Stop after driving
// the steps directly. Idempotent.
func (k *Kubelet) Stop() {
	k.stopOnce.Do(func() {
		k.podWorkers.Stop()
		k.shutdown.Stop()
		if k.eventedPLEG != nil {
			k.eventedPLEG.Stop()
		}
		k.genericPLEG.Stop()
		k.syncLoop.Stop()
	})
}

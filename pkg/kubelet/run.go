package kubelet

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

// Run is the daemon runner: every entry of Loops runs in a goroutine of its own on the
// kubelet's clock, beside the manifest watcher (fsnotify) and the HTTP server when a
// listener was given, until ctx ends.
//
// Then it shuts down: with graceful node shutdown enabled (GracefulNodeShutdown gate and
// shutdownGracePeriod > 0), the shutdown manager is signalled and the pods are terminated
// within shutdownGracePeriod while every loop keeps running (the pod workers need the PLEG to
// see their containers stop); then the loops stop, their work in flight is abandoned, and
// the HTTP server stops last. Run returns nil after a shutdown, or the error that stopped
// the HTTP server early.
func (k *Kubelet) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// The loops run under their own group, which outlives ctx: the shutdown below needs them.
	loops := runner.NewGroup(klog.NewContext(context.WithoutCancel(ctx), logger))
	k.Start(loops.Context())
	runner.Start(loops, k.clock, k.Loops())
	if k.fileSource != nil && k.watchManifests {
		loops.Go("manifest-watch", k.fileSource.WatchLoop)
	}
	if k.kubeClient != nil {
		loops.Go("api-pod-source", k.watchAPIPods)
		sink := cluster.NewEventSink(k.kubeClient)
		k.events.Subscribe(sink.Queue)
		loops.Go("api-event-sink", sink.Run)
	}
	serveErr := make(chan error, 2)
	var server *runner.Group
	if k.listener != nil || k.secureListener != nil {
		server = runner.NewGroup(context.WithoutCancel(ctx))
	}
	if k.listener != nil {
		server.Go("http-server", func(ctx context.Context) { serveErr <- k.server.ServeListener(ctx, k.listener) })
	}
	if k.secureListener != nil {
		server.Go("https-server", func(ctx context.Context) {
			serveErr <- k.server.ServeSecureListener(ctx, k.secureListener, k.servingCert)
		})
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
		k.shutdown.Start()
		<-k.shutdown.Done()
		logger.Info("Graceful node shutdown complete")
		k.waitForTerminations(loops.Context(), k.TerminationsDeadline(start, k.clock.Now()))
	}

	loops.Stop()
	loops.Wait()
	k.Stop()
	if server != nil {
		server.Stop()
		server.Wait()
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

// ShutdownSettle is how long, at least, the kubelet lets the terminations a shutdown
// requested finish after the shutdown manager is done. A container that ignores SIGTERM is
// killed when its grace period ends, the very instant its group times out; the pod workers
// need a moment more to see it stop and record the pod's final status.
const ShutdownSettle = 2 * time.Second

// terminationPollPeriod is how often waitForTerminations looks at the pod workers.
const terminationPollPeriod = 100 * time.Millisecond

// TerminationsDeadline is until when the loops keep running for the terminations of a
// shutdown that started at start, once the shutdown manager is done at doneAt: the end of
// shutdownGracePeriod, or ShutdownSettle after doneAt, whichever is later.
func (k *Kubelet) TerminationsDeadline(start, doneAt time.Time) time.Time {
	deadline := start.Add(k.cfg.Kubelet.ShutdownGracePeriod.Duration)
	if settle := doneAt.Add(ShutdownSettle); deadline.Before(settle) {
		deadline = settle
	}
	return deadline
}

// TerminationsSettled reports whether the loops may stop at now: no termination a shutdown
// requested is still going on, or deadline passed (the ones still going on are then logged
// and abandoned).
func (k *Kubelet) TerminationsSettled(ctx context.Context, deadline, now time.Time) bool {
	n := k.podWorkers.UnfinishedTerminations()
	if n == 0 {
		return true
	}
	if now.Before(deadline) {
		return false
	}
	klog.FromContext(ctx).Info("Stopping with pod terminations still in progress", "pods", n)
	return true
}

// waitForTerminations polls TerminationsSettled on the daemon's clock.
func (k *Kubelet) waitForTerminations(ctx context.Context, deadline time.Time) {
	for !k.TerminationsSettled(ctx, deadline, k.clock.Now()) {
		t := k.clock.NewTimer(terminationPollPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// Close releases what New took for a kubelet that will not Run: it stops the loops and
// closes the listeners. (Run closes them itself.)
func (k *Kubelet) Close() {
	k.Stop()
	for _, ln := range []net.Listener{k.listener, k.secureListener} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

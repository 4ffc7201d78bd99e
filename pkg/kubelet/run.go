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

// Run is the daemon runner: one goroutine (the node's owner, runner.Owner) steps the whole
// loop table on the kubelet's clock, beside the edges: the manifest watcher (fsnotify), the
// API watches and event sink in cluster mode, and the HTTP servers when listeners were given,
// until ctx ends.
//
// Then the owner gets the shutdown signal (Shutdown) and goes on stepping until the node
// halts; the owner stops, the work in flight is abandoned (Stop), and the HTTP servers stop
// last. Run returns nil after a shutdown, or the error that stopped the HTTP server early.
func (k *Kubelet) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// The owner and the edges run under their own group, which outlives ctx: the shutdown
	// below needs them.
	loops := runner.NewGroup(klog.NewContext(context.WithoutCancel(ctx), logger))
	k.Start(loops.Context())
	owner := runner.NewOwner(k.clock, k.Loops(), func(ctx context.Context, now time.Time) { k.Settle(ctx, now) })
	k.owner.Store(owner)
	close(k.owned)
	if k.apiCaller != nil {
		k.apiCaller.DeliverOn(func(complete func()) { owner.Post(func(context.Context) { complete() }) })
	}
	loops.Go("node", owner.Run)
	if k.fileSource != nil && k.watchManifests {
		loops.Go("manifest-watch", k.fileSource.WatchLoop)
	}
	if k.servingCertManager != nil {
		// client-go's manager runs its own goroutines; it stops with the node.
		k.servingCertManager.Start()
		context.AfterFunc(ctx, k.servingCertManager.Stop)
	}
	if k.kubeClient != nil {
		k.objects.watchObjects() // before the first pods arrive: their objects' watches start
		loops.Go("api-pod-source", k.watchAPIPods)
		loops.Go("api-node-watch", func(ctx context.Context) { k.nodeClient.WatchNode(ctx, k.kubeClient, k.nodeName) })
		loops.Go("api-service-watch", k.objects.runServiceWatch)
		loops.Go("api-runtimeclass-watch", k.objects.runRuntimeClassWatch)
		sink := cluster.NewEventSink(k.eventClient, k.clock)
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
	owner.Post(func(ctx context.Context) { k.Shutdown(ctx, k.clock.Now()) })
	<-k.life.done

	loops.Stop()
	k.Stop()
	if server != nil {
		server.Stop()
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

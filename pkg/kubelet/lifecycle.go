package kubelet

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/runner"
)

// lifecycle is the node's one life, written once for the daemon, --node-count and simulate:
// running, then (after the shutdown signal) shutting down while its loops keep running, then
// halted: the loops may stop. Its state belongs to whoever steps the table.
type lifecycle struct {
	shutdownStart time.Time // zero until the shutdown signal
	shutdownEnd   time.Time // zero until the shutdown manager is done
	halted        bool

	haltOnce sync.Once
	done     chan struct{} // closed once halted, for the daemon waiting beside the owner
}

// Shutdown is the node shutdown signal (SIGTERM to the daemon). With graceful node shutdown
// enabled (GracefulNodeShutdown gate and shutdownGracePeriod > 0) the shutdown manager
// terminates the pods within shutdownGracePeriod while every loop keeps running (the pod
// workers need the PLEG to see their containers stop), and the node halts once they are
// done (Settle); otherwise it halts at once, leaving the pods as they are (upstream: "node
// shutdown will be immediate"). Called from the goroutine that steps the table; a second
// signal changes nothing. The flight recorder is told here, whoever sends the signal.
func (k *Kubelet) Shutdown(ctx context.Context, now time.Time) {
	if k.life.halted || !k.life.shutdownStart.IsZero() {
		return
	}
	if k.recorder != nil {
		k.recorder.Shutdown()
	}
	if !k.shutdown.Enabled() {
		k.halt()
		return
	}
	k.life.shutdownStart = now
	klog.FromContext(ctx).Info("Graceful node shutdown: terminating pods", "shutdownGracePeriod", k.cfg.Kubelet.ShutdownGracePeriod.Duration,
		"shutdownGracePeriodCriticalPods", k.cfg.Kubelet.ShutdownGracePeriodCriticalPods.Duration, "pods", len(k.GetActivePods()))
	k.shutdown.Start()
}

// Settle is called with the state complete for now (nothing more is due at now): it halts
// the node once a shutdown is complete, the manager done and the terminations it asked for
// finished (or their time is up). It reports whether the node is halted.
func (k *Kubelet) Settle(ctx context.Context, now time.Time) bool {
	if k.life.halted || k.life.shutdownStart.IsZero() {
		return k.life.halted
	}
	select {
	case <-k.shutdown.Done():
	default:
		return false
	}
	if k.life.shutdownEnd.IsZero() {
		klog.FromContext(ctx).Info("Graceful node shutdown complete")
		k.life.shutdownEnd = k.TerminationsDeadline(k.life.shutdownStart, now)
	}
	if k.TerminationsSettled(ctx, k.life.shutdownEnd, now) {
		k.halt()
	}
	return k.life.halted
}

// Halted reports whether the node's loops may stop: a shutdown is complete.
func (k *Kubelet) Halted() bool { return k.life.halted }

// ShuttingDown reports whether the shutdown signal came and the node has not halted yet.
func (k *Kubelet) ShuttingDown() bool { return !k.life.shutdownStart.IsZero() && !k.life.halted }

func (k *Kubelet) halt() {
	k.life.halted = true
	k.life.haltOnce.Do(func() { close(k.life.done) })
}

// lifecycleLoop is the table's entry for the end of a shutdown: due when the time the
// terminations were given runs out, so that the node halts then even if nothing else is due.
func (k *Kubelet) lifecycleLoop() runner.Loop {
	return runner.Loop{
		Name: "node-lifecycle",
		Due: func(time.Time) time.Time {
			if k.life.halted {
				return time.Time{}
			}
			return k.life.shutdownEnd
		},
		Step: func(ctx context.Context) { k.Settle(ctx, k.clock.Now()) },
	}
}

// ShutdownSettle is how long, at least, the kubelet lets the terminations a shutdown
// requested finish after the shutdown manager is done. A container that ignores SIGTERM is
// killed when its grace period ends, the very instant its group times out; the pod workers
// need a moment more to see it stop and record the pod's final status.
const ShutdownSettle = 2 * time.Second

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

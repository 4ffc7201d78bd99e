package kubelet

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/podsource"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// The edges: what comes into the node from outside. While the daemon's owner runs, a change
// is handed to it (runner.Owner.Do or Post) and made between two steps; the flight recorder,
// if any, is told of it at the instant it is made.

// onOwner runs fn on the owner's goroutine and waits for it while the daemon runs; before
// Run (or in simulate, whose single goroutine is the caller) it runs fn at once.
func (k *Kubelet) onOwner(ctx context.Context, fn func(ctx context.Context) error) error {
	if o := k.owner.Load(); o != nil {
		return o.Do(ctx, fn)
	}
	return fn(ctx)
}

// AddFault injects a fault into the node's runtime, and tells the flight recorder: the one
// way in for a fault, whether from the HTTP API (/debug/faults) or a simulate step. It is
// made between two steps while the daemon runs.
func (k *Kubelet) AddFault(spec fault.Spec) (fault.Spec, error) {
	var added fault.Spec
	err := k.onOwner(context.Background(), func(context.Context) error {
		var err error
		if added, err = k.runtime.AddFault(spec); err == nil && k.recorder != nil {
			k.recorder.FaultAdded(added)
		}
		return err
	})
	return added, err
}

// Faults lists the runtime's faults in force.
func (k *Kubelet) Faults() []fault.Spec { return k.runtime.Faults() }

// RemoveFault clears one fault, by its ID (see AddFault).
func (k *Kubelet) RemoveFault(id string) error {
	return k.onOwner(context.Background(), func(context.Context) error {
		err := k.runtime.RemoveFault(id)
		if err == nil && k.recorder != nil {
			k.recorder.FaultCleared(id)
		}
		return err
	})
}

// ClearFaults clears every fault and returns those it cleared (see AddFault).
func (k *Kubelet) ClearFaults() []fault.Spec {
	var cleared []fault.Spec
	_ = k.onOwner(context.Background(), func(context.Context) error {
		cleared = k.runtime.Faults()
		k.runtime.ClearFaults()
		if k.recorder != nil {
			k.recorder.FaultsCleared()
		}
		return nil
	})
	return cleared
}

// faultEdge is the HTTP fault-injection API's way into the runtime: the kubelet's.
type faultEdge struct{ k *Kubelet }

func (e faultEdge) AddFault(spec fault.Spec) (fault.Spec, error) { return e.k.AddFault(spec) }
func (e faultEdge) Faults() []fault.Spec                         { return e.k.Faults() }
func (e faultEdge) RemoveFault(id string) error                  { return e.k.RemoveFault(id) }
func (e faultEdge) ClearFaults()                                 { e.k.ClearFaults() }

// manifestObserver is the file source's observer: the recorder, if any.
func (k *Kubelet) manifestObserver() podsource.Observer {
	if k.recorder == nil {
		return nil
	}
	return k.recorder
}

// apiPodsArrived is the API pod watch's edge: the objects the pods refer to are read on the
// watch's goroutine (a blocking read is the edge's to wait for), then the pods are handed to
// the owner.
func (k *Kubelet) apiPodsArrived(ctx context.Context, pods []*v1.Pod) {
	regular, mirrors := splitAPIPods(pods)
	k.objects.fetchForPods(ctx, regular)
	k.onOwnerAsync(ctx, func(ctx context.Context) { k.handAPIPods(ctx, regular, mirrors) })
}

// onOwnerAsync posts fn to the owner while the daemon runs, else runs it at once.
func (k *Kubelet) onOwnerAsync(ctx context.Context, fn func(ctx context.Context)) {
	if o := k.owner.Load(); o != nil {
		o.Post(fn)
		return
	}
	fn(ctx)
}

// Owned is closed once Run has handed the node to its owner goroutine. From then on the
// edges (Inspect, GetPods, the HTTP handlers) go through the owner; a caller that starts
// Run on another goroutine waits for it before using them, since until then they read the
// node directly, as simulate does.
func (k *Kubelet) Owned() <-chan struct{} { return k.owned }

// Inspect runs fn where it may read the node's components: on the owner's goroutine, between
// two steps, while the daemon runs (tests and tools looking in from outside); at once
// otherwise. It reports false when the node has stopped and fn did not run.
func (k *Kubelet) Inspect(fn func()) bool {
	return k.onOwner(context.Background(), func(context.Context) error { fn(); return nil }) == nil
}

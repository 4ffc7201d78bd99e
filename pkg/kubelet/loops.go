package kubelet

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
)

// RuntimeLoop is the runtime's entry of a node's loop table: its containers' programs and
// pending operations. A node whose kubelet is stopped (simulate's kubelet restart) steps
// it alone.
func RuntimeLoop(rt *fake.Runtime) runner.Loop {
	return runner.Loop{Name: "runtime", Due: rt.Due, Step: rt.Step, Wake: rt.Wake(), Slack: RuntimeSlack}
}

// Loops is the node's loop table: every control loop of this kubelet, once, in the order
// the virtual-time scheduler breaks ties at one instant (the runtime first, so what falls
// due is visible to the loops that look at it; producers before their consumers). The
// daemon steps the table on one goroutine of the node's on the real clock (runner.Owner);
// simulate mode steps it on a virtual clock (runner.Sim). Same entries, same stepping, same
// component code. Each entry owns its Stop: Stop walks this table.
//
// docs/architecture.md lists the table with what each loop does and its upstream period.
func (k *Kubelet) Loops() []runner.Loop {
	images, status, lease := k.nodeStatus.Loops().Images, k.nodeStatus.Loops().Status, k.nodeStatus.Loops().Lease
	// The kubelet's own loops: between the runtime's two entries.
	loops := []runner.Loop{
		{Name: "runtime-status", Due: k.state.Due, Step: k.state.Step, Wake: k.state.Wake(), Stop: k.state.Stop},
	}
	if k.fileSource != nil {
		loops = append(loops, runner.Loop{Name: "file-source", Due: k.fileSource.Due, Step: k.fileSource.Step, Wake: k.fileSource.Wake()})
	}
	loops = append(loops, runner.Loop{Name: "config-merger", Due: k.merger.Due, Step: k.merger.Step})
	if k.statusSync != nil {
		// Ahead of the PLEG and the pod workers: upstream's status manager sends a status
		// the moment a sync sets it, while the sync goes on (killing containers takes its
		// time there). Here a whole sync, the relist after it and the next sync can fall in
		// one instant; after them, the API server would only see the last status (a pod's
		// AllContainersRestarting True never reached it).
		loops = append(loops, k.statusSync.loop())
	}
	loops = append(loops,
		runner.Loop{Name: "pleg", Due: k.genericPLEG.Due, Step: k.genericPLEG.Step, Wake: k.genericPLEG.Wake(), Stop: k.genericPLEG.Stop},
	)
	switch {
	case k.eventedPLEG != nil:
		loops = append(loops, runner.Loop{Name: "evented-pleg", Due: k.eventedPLEG.Due, Step: k.eventedPLEG.Step, Wake: k.eventedPLEG.Wake(), Stop: k.eventedPLEG.Stop})
	case k.legacyEventedPLEG != nil:
		loops = append(loops, runner.Loop{Name: "evented-pleg", Due: k.legacyEventedPLEG.Due, Step: k.legacyEventedPLEG.Step, Wake: k.legacyEventedPLEG.Wake(), Stop: k.legacyEventedPLEG.Stop})
	}
	loops = append(loops,
		runner.Loop{Name: "sync-loop", Due: k.syncLoop.Due, Step: k.syncLoop.Step, Wake: k.syncLoop.Wake(), Stop: k.syncLoop.Stop},
		runner.Loop{Name: "pod-workers", Due: k.podWorkers.Due, Step: k.podWorkers.Step, Wake: k.podWorkers.Wake(), Stop: k.podWorkers.Stop},
		runner.Loop{Name: "prober", Due: k.prober.Due, Step: k.prober.Step, Wake: k.prober.Wake(), Stop: k.prober.Stop},
	)
	loops = append(loops,
		runner.Loop{Name: "container-deletor", Due: k.deletor.Due, Step: k.deletor.Step, Wake: k.deletor.wake, Stop: k.deletor.Stop},
		k.gc.Loop("container-gc"),
		images.Loop("node-images"),
		status.Loop("node-status"),
		lease.Loop("node-lease"),
		runner.Loop{Name: "eviction", Due: k.eviction.Due, Step: k.eviction.Step},
		runner.Loop{Name: "node-shutdown", Due: k.shutdown.Due, Step: func(ctx context.Context) { k.shutdown.Step(ctx) }, Wake: k.shutdown.Wake(), Stop: k.shutdown.Stop},
		k.lifecycleLoop(),
	)
	for i := range loops {
		loops[i].Grain = LoopGrain
	}
	return slices.Concat([]runner.Loop{RuntimeLoop(k.runtime)}, loops, []runner.Loop{
		// Last: the containers' programs run on what the kubelet's loops leave (on the real
		// clock with a program CPU budget; inert otherwise), as a node's pods do not take the
		// kubelet's reserved CPU.
		{Name: "programs", Due: k.runtime.ProgramsDue, Step: k.runtime.StepPrograms, Wake: k.runtime.Wake()},
	})
}

// LoopGrain is the grain (runner.Loop.Grain) of the kubelet's loops on the real clock: their
// timed wakes (the relist and the sync loop every second, housekeeping every 2 s, probes,
// status, lease, ...) are rounded up to a multiple of it, so the nodes of a --node-count
// process wake together instead of one by one. The kubelet's periods are a second and more:
// a step late by under 50 ms is within what a loaded kubelet's goroutines see. 1,000 nodes
// of 10 static pods took a third less CPU with it (standalone; less of the whole in a
// cluster, docs/scale.md). The containers keep their own timing (the runtime's
// RuntimeSlack), and simulate keeps every instant exact.
const LoopGrain = 50 * time.Millisecond

// RuntimeSlack batches the runtime's timed work on the real clock: 10,000 containers whose
// programs sleep in a loop fall due at some 2,000 different instants a second, and waking
// the runtime for each cost more than the programs did. With it the daemon steps the
// runtime at most 100 times a second, each due transition late by under 10 ms (a sleep
// never ends early). simulate keeps every instant exact.
const RuntimeSlack = 10 * time.Millisecond

// Start does what the kubelet does once before its loops run: log the static pod path and
// put the evented PLEG in charge when its gate is on (upstream starts it beside the generic
// one). Run calls it; simulate mode calls it before stepping the table. Idempotent.
func (k *Kubelet) Start(ctx context.Context) {
	k.startOnce.Do(func() {
		// The kubelet's birth cry, then the container manager enforcing node allocatable on
		// the pods cgroup (enforceNodeAllocatable defaults to [pods]).
		node := events.NodeRef(k.nodeName)
		k.events.Eventf(node, v1.EventTypeNormal, "Starting", "Starting kubelet.")
		if k.enforcesPodsAllocatable() {
			k.events.Eventf(node, v1.EventTypeNormal, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
		}
		if k.fileSource != nil {
			klog.FromContext(ctx).Info("Adding static pod path", "path", k.fileSource.Path())
		}
		switch {
		case k.eventedPLEG != nil:
			k.eventedPLEG.Activate(ctx)
		case k.legacyEventedPLEG != nil:
			k.legacyEventedPLEG.Activate(ctx)
		}
	})
}

// Stop abandons the work in flight of every loop of the table (a sync waiting for the
// runtime, a relist, a shutdown under way): their tasks end before Stop returns. Then the
// API calls still in flight end and the runtime closes. Call it once the table is no longer
// stepped. Idempotent.
func (k *Kubelet) Stop() {
	k.stopOnce.Do(func() {
		runner.StopAll(k.Loops())
		if k.apiCaller != nil {
			k.apiCaller.Stop() // API calls still in flight end now
		}
		// The node goes with its kubelet (the simulated processes' coroutines end), unless
		// the runtime outlives it: a kubelet restart keeps the containers running.
		if !k.keepRuntime {
			k.runtime.Close()
		}
	})
}

// enforcesPodsAllocatable reports whether enforceNodeAllocatable names "pods" (its default).
func (k *Kubelet) enforcesPodsAllocatable() bool { return enforcesPodsAllocatable(k.cfg) }

func enforcesPodsAllocatable(c *config.Config) bool {
	raw := c.Kubelet.EnforceNodeAllocatable
	if len(raw) == 0 {
		return true
	}
	var keys []string
	if err := json.Unmarshal(raw, &keys); err != nil {
		return true // config.Load accepted it; the default stands
	}
	return slices.Contains(keys, "pods")
}

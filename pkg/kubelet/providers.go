package kubelet

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/nodestatus"
	"github.com/minikubelet/minikubelet/pkg/server"
)

// listedPod is a desired pod with its latest status (nil: none yet). Neither is ever
// changed once stored (an update is a new object), so an edge may read them after taking
// them from the owner.
type listedPod struct {
	pod    *v1.Pod
	status *v1.PodStatus
}

// listedPods takes the desired pods and their statuses from the pod and status managers
// on the owner's goroutine, and sorts them by namespace, name and UID off it: the read edges
// (/pods, /stats/summary, /metrics/resource) never touch the managers' state. Called from a
// step of the owner (ctx says so: the eviction manager reads the stats summary), it reads
// them at once.
func (k *Kubelet) listedPods(ctx context.Context) []listedPod {
	var out []listedPod
	_ = k.onOwner(ctx, func(context.Context) error {
		pods := k.pods.unsortedPods()
		out = make([]listedPod, len(pods))
		for i, p := range pods {
			st, _ := k.status.StatusOf(p.UID)
			out[i] = listedPod{p, st}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return podLess(out[i].pod, out[j].pod) })
	return out
}

// GetPods returns the desired pods with their current status, as the kubelet's read-only
// /pods does without an API server: the pod manager's pods, each with the status
// manager's latest status when it has one (a copy; the pod manager is not modified).
// Sorted by namespace and name.
func (k *Kubelet) GetPods() []*v1.Pod { return k.getPods(context.Background()) }

// getPods is GetPods from ctx: the owner's, or an edge's.
func (k *Kubelet) getPods(ctx context.Context) []*v1.Pod {
	listed := k.listedPods(ctx)
	out := make([]*v1.Pod, 0, len(listed))
	for _, l := range listed {
		p := l.pod.DeepCopy()
		asListed(p, l.status)
		out = append(out, p)
	}
	return out
}

// PodListItems returns the JSON encoding of each pod GetPods returns, in its order
// (server.PodListEncoder): each pod is encoded again only when it or its status changed.
func (k *Kubelet) PodListItems() [][]byte {
	return k.podsJSON.items(k.listedPods(context.Background()))
}

// podByName is the desired pod with that namespace and name, or nil (the edges' lookup:
// /containerLogs, /exec and /run name pods so), found on the owner's goroutine.
func (k *Kubelet) podByName(namespace, name string) *v1.Pod {
	var pod *v1.Pod
	k.Inspect(func() {
		for _, e := range k.pods.byUID {
			// The lowest UID when two share the name (a pod and its replacement), as the
			// sorted listing would find first.
			if e.pod.Namespace == namespace && e.pod.Name == name && (pod == nil || e.pod.UID < pod.UID) {
				pod = e.pod
			}
		}
	})
	return pod
}

// podByUID is the desired pod with that UID (the edges' lookup: the streaming server names
// pods so).
func (k *Kubelet) podByUID(uid types.UID) (pod *v1.Pod, ok bool) {
	k.Inspect(func() { pod, ok = k.pods.GetPodByUID(uid) })
	return pod, ok
}

// podStatusOf is the pod's latest status, read as listedPods reads it; nil if none.
func (k *Kubelet) podStatusOf(uid types.UID) *v1.PodStatus {
	var st *v1.PodStatus
	k.Inspect(func() { st, _ = k.status.StatusOf(uid) })
	return st
}

// Configz is what GET /configz serves: the effective configurations and every feature
// gate's effective value.
type Configz struct {
	KubeletConfig   config.KubeletConfiguration   `json:"kubeletconfig"`
	SimulatorConfig config.SimulatorConfiguration `json:"simulatorconfig"`
	FeatureGates    map[string]bool               `json:"featureGates"`
}

// Configz returns the effective configuration (GET /configz).
func (k *Kubelet) Configz() any {
	gates := map[string]bool{}
	for name := range features.Specs() {
		gates[string(name)] = k.gate.Enabled(name)
	}
	return Configz{KubeletConfig: k.cfg.Kubelet, SimulatorConfig: k.cfg.Simulator, FeatureGates: gates}
}

// HealthChecks are the /healthz checks: the sync loop's liveness and the PLEG's health
// (both PLEGs when the evented one is in use).
func (k *Kubelet) HealthChecks() []server.HealthCheck {
	return []server.HealthCheck{
		{Name: "syncloop", Check: k.syncLoop.SyncLoopHealthy},
		server.HealthyCheck("pleg", k.plegHealthy),
	}
}

func (k *Kubelet) plegHealthy() (bool, error) {
	if ok, err := k.genericPLEG.Healthy(); !ok {
		return ok, err
	}
	if k.legacyEventedPLEG != nil {
		return k.legacyEventedPLEG.Healthy() // v1.30 only: v1.37's EventedPLEG has no check
	}
	return true, nil
}

// serverConfig wires the HTTP API to the kubelet's providers.
func (k *Kubelet) serverConfig() server.Config {
	debug := k.cfg.Kubelet.EnableDebuggingHandlers != nil && *k.cfg.Kubelet.EnableDebuggingHandlers
	return server.Config{
		Pods:                    k, // GetPods, and PodListItems for /pods
		Node:                    k.nodeStatus,
		Lease:                   k.nodeStatus,
		Events:                  k.events,
		Registry:                k.registry,
		ProbeRegistry:           k.probeRegistry,
		StateRegistry:           k.stateRegistry,
		ResourceRegistry:        k.resourceReg,
		CadvisorRegistry:        k.cadvisorReg,
		Stats:                   k.stats,
		Logs:                    k,
		Configz:                 server.ConfigzFunc(k.Configz),
		HealthChecks:            k.HealthChecks(),
		EnableDebuggingHandlers: debug,
		EnableProfiling:         k.cfg.Kubelet.EnableProfilingHandler != nil && *k.cfg.Kubelet.EnableProfilingHandler,
		Faults:                  faultEdge{k},
		Clock:                   k.clock,
	}
}

// --- nodestatus.UsageProvider: the simulated usage behind the pressure conditions ---

// Usage is the node's use, from the runtime's usage model: memory is its base use plus what
// every running container uses now (memoryUsage, else the memory request, plus any
// memoryGrowth), the figures /stats/summary reports, of which the pods' part drives
// allocatableMemory.available; disk is the images, writable layers and logs on the
// machine's ephemeral storage; and the scripted number of processes.
func (k *Kubelet) Usage() nodestatus.Usage {
	u := k.runtime.Usage()
	return nodestatus.Usage{MemoryBytes: u.MemoryBytes, PodMemoryBytes: u.PodMemoryBytes, HasPodMemory: true, DiskBytes: u.DiskBytes, PIDs: u.PIDs}
}

package kubelet

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/nodestatus"
	"github.com/minikubelet/minikubelet/pkg/server"
)

// GetPods returns the desired pods with their current status, as the kubelet's read-only
// /pods does without an API server: the pod manager's pods, each with the status
// manager's latest status when it has one (a copy; the pod manager is not modified).
// Sorted by namespace and name.
func (k *Kubelet) GetPods() []*v1.Pod {
	pods := k.pods.GetPods()
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		p = p.DeepCopy()
		if status, ok := k.status.GetPodStatus(p.UID); ok {
			asListed(p, &status)
		} else {
			asListed(p, nil)
		}
		out = append(out, p)
	}
	return out
}

// PodListItems returns the JSON encoding of each pod GetPods returns, in its order
// (server.PodListEncoder): each pod is encoded again only when it or its status changed.
func (k *Kubelet) PodListItems() [][]byte {
	return k.podsJSON.items(k.pods.GetPods(), k.status.StatusOf)
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
	if k.eventedPLEG != nil {
		return k.eventedPLEG.Healthy()
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

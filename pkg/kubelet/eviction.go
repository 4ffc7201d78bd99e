package kubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/eviction"
	"github.com/minikubelet/minikubelet/pkg/nodestatus"
)

// buildEviction makes the eviction manager: the evictionHard thresholds over the node's
// observed signals (the usage model), the stats summary for the ranking, killPodNow for
// the kill, as the kubelet wires its eviction manager.
func (k *Kubelet) buildEviction() error {
	hard, err := nodestatus.ParseEvictionHard(k.cfg.Kubelet.EvictionHard)
	if err != nil {
		return fmt.Errorf("kubeletConfiguration.evictionHard: %w", err)
	}
	thresholds := make([]eviction.Threshold, len(hard))
	for i, t := range hard {
		thresholds[i] = eviction.Threshold{Threshold: t}
	}
	k.eviction, err = eviction.New(eviction.Config{
		Clock:                    k.clock,
		Thresholds:               thresholds,
		PressureTransitionPeriod: nodestatus.DefaultPressureTransitionPeriod,
		Observe:                  k.nodeStatus.Observe,
		ActivePods:               k.GetActivePods,
		Usage:                    k.podUsage,
		KillPod:                  k.killPodNow,
		Recorder:                 k.events,
		NodeRef:                  events.NodeRef(k.nodeName),
		Registry:                 k.registry,
	})
	if err != nil {
		return fmt.Errorf("create eviction manager: %w", err)
	}
	return nil
}

// podUsage is each pod's use from the stats summary (the runtime's usage model), as the
// eviction manager ranks pods by it.
func (k *Kubelet) podUsage(ctx context.Context) (map[types.UID]eviction.PodUsage, error) {
	summary, err := k.stats.Summary(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[types.UID]eviction.PodUsage, len(summary.Pods))
	for _, ps := range summary.Pods {
		var u eviction.PodUsage
		if ps.Memory != nil && ps.Memory.WorkingSetBytes != nil {
			u.MemoryWorkingSetBytes = int64(*ps.Memory.WorkingSetBytes)
		}
		if ps.EphemeralStorage != nil && ps.EphemeralStorage.UsedBytes != nil {
			u.DiskBytes = int64(*ps.EphemeralStorage.UsedBytes)
		}
		if ps.ProcessStats != nil && ps.ProcessStats.ProcessCount != nil {
			u.Processes = int64(*ps.ProcessStats.ProcessCount)
		}
		for _, cs := range ps.Containers {
			c := eviction.ContainerUsage{Name: cs.Name}
			if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
				c.MemoryWorkingSetBytes = int64(*cs.Memory.WorkingSetBytes)
			}
			if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil {
				c.DiskBytes += int64(*cs.Rootfs.UsedBytes)
			}
			if cs.Logs != nil && cs.Logs.UsedBytes != nil {
				c.DiskBytes += int64(*cs.Logs.UsedBytes)
			}
			u.Containers = append(u.Containers, c)
		}
		out[types.UID(ps.PodRef.UID)] = u
	}
	return out, nil
}

// IsUnderPressure reports the eviction manager's view of a pressure condition.
func (k *Kubelet) IsUnderPressure(cond v1.NodeConditionType) bool {
	return k.eviction.IsUnderPressure(cond)
}

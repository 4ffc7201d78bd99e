package kubelet

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/eviction"
	evictionapi "github.com/minikubelet/minikubelet/pkg/eviction/api"
	"github.com/minikubelet/minikubelet/pkg/features"
)

// buildEviction makes the eviction manager: the evictionHard thresholds over the node's
// observed signals (the usage model), the stats summary for the ranking, killPodNow for
// the kill, as the kubelet wires its eviction manager.
func (k *Kubelet) buildEviction() error {
	kc := &k.cfg.Kubelet
	thresholds, err := evictionThresholds(kc.EvictionHard, kc.EvictionSoft, kc.EvictionSoftGracePeriod, kc.EvictionMinimumReclaim)
	if err != nil {
		return err
	}
	k.eviction, err = eviction.New(eviction.Config{
		Clock:                    k.clock,
		Thresholds:               thresholds,
		PressureTransitionPeriod: kc.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriodSeconds: int64(kc.EvictionMaxPodGracePeriod),
		Observe:                  k.nodeStatus.Observe,
		ActivePods:               k.GetActivePods,
		Usage:                    k.podUsage,
		KillPod:                  k.killPodNow,
		ReclaimDisk:              k.reclaimDisk,
		Recorder:                 k.events,
		NodeRef:                  events.NodeRef(k.nodeName),
		Registry:                 k.registry,
		// The DisruptionTarget condition's observedGeneration.
		PodObservedGenerationTracking: k.gate.Enabled(features.PodObservedGenerationTracking),
	})
	if err != nil {
		return fmt.Errorf("create eviction manager: %w", err)
	}
	return nil
}

// evictionThresholds parses the configuration's thresholds as the kubelet's
// ParseThresholdConfig: the hard ones, the soft ones with their grace periods, and the
// minimum reclaim of each signal.
func evictionThresholds(hard, soft, grace, reclaim map[string]string) ([]eviction.Threshold, error) {
	var out []eviction.Threshold
	minReclaim := map[evictionapi.Signal]*evictionapi.Threshold{}
	if len(reclaim) > 0 {
		parsed, err := evictionapi.ParseEvictionHard(reclaim)
		if err != nil {
			return nil, fmt.Errorf("kubeletConfiguration.evictionMinimumReclaim: %w", err)
		}
		for i := range parsed {
			minReclaim[parsed[i].Signal] = &parsed[i]
		}
	}
	h, err := evictionapi.ParseEvictionHard(hard)
	if err != nil {
		return nil, fmt.Errorf("kubeletConfiguration.evictionHard: %w", err)
	}
	for _, t := range h {
		out = append(out, eviction.Threshold{Threshold: t, MinReclaim: minReclaim[t.Signal]})
	}
	if len(soft) > 0 {
		s, err := evictionapi.ParseEvictionHard(soft)
		if err != nil {
			return nil, fmt.Errorf("kubeletConfiguration.evictionSoft: %w", err)
		}
		for _, t := range s {
			d, err := time.ParseDuration(grace[string(t.Signal)])
			if err != nil {
				return nil, fmt.Errorf("kubeletConfiguration.evictionSoftGracePeriod[%s]: grace period must be specified for the soft eviction threshold %s", t.Signal, t.Signal)
			}
			out = append(out, eviction.Threshold{Threshold: t, Soft: true, GracePeriod: d, MinReclaim: minReclaim[t.Signal]})
		}
	}
	return out, nil
}

// reclaimDisk is the kubelet's node-level reclaim for disk pressure: every container that
// is not running is removed (DeleteAllUnusedContainers), then every image no container
// uses (DeleteUnusedImages), an image a container mounts as an image volume being in use
// (upstream's handleImageVolumes, which reads it from the container's status).
func (k *Kubelet) reclaimDisk(ctx context.Context) error {
	containers, err := k.rt.ListContainers(ctx, nil)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, c := range containers {
		if c.State == cri.ContainerRunning || c.State == cri.ContainerCreated {
			used[c.ImageRef] = true
			// Only the containers of pods with image volumes are asked: a status for each
			// of 20,000 containers would be 20,000 calls for nothing.
			if k.imageVolume && k.hasImageVolumes(types.UID(c.Labels[cri.PodUIDLabel])) {
				st, err := k.rt.ContainerStatus(ctx, c.ID)
				if err != nil {
					return fmt.Errorf("get container status: %w", err)
				}
				for _, m := range st.ImageMounts {
					used[m.Image.Image] = true
				}
			}
			continue
		}
		if err := k.rt.RemoveContainer(ctx, c.ID); err != nil {
			return err
		}
	}
	images, err := k.rt.ListImages(ctx)
	if err != nil {
		return err
	}
	for _, img := range images {
		if used[img.ID] {
			continue
		}
		if err := k.rt.RemoveImage(ctx, cri.ImageSpec{Image: img.ID}); err != nil {
			return err
		}
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
		for _, v := range ps.VolumeStats {
			if v.UsedBytes != nil {
				if u.Volumes == nil {
					u.Volumes = map[string]int64{}
				}
				u.Volumes[v.Name] = int64(*v.UsedBytes)
			}
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

// hasImageVolumes reports whether the pod with uid (one the kubelet has) has an image volume.
func (k *Kubelet) hasImageVolumes(uid types.UID) bool {
	pod, ok := k.pods.GetPodByUID(uid)
	if !ok {
		return false
	}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Image != nil {
			return true
		}
	}
	return false
}

package kubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/podworkers"
	"github.com/minikubelet/minikubelet/pkg/scratch"
)

// HandlePodCleanups is housekeeping (upstream HandlePodCleanups, without the cgroup and
// mirror pod parts the simulator has no use for): the pod workers forget finished pods no
// source wants and start terminating running ones; statuses and probes of pods no source
// wants are dropped; desired pods the workers do not know (a static pod re-created with
// the same UID) are restarted; runtime pods nobody knows (orphans) are killed with a 1s
// grace period; the directories of pods the node no longer has are removed and the
// ConfigMaps and Secrets no pod refers to forgotten. As upstream, it leaves running_pods
// and running_containers to the PLEG.
func (k *Kubelet) HandlePodCleanups(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// In no particular order: housekeeping runs every 2s over every pod, and only the pods
	// it restarts (rarely any) need the pod manager's stable order.
	allPods := k.pods.unsortedPods()

	k.desired = scratch.Map(k.desired, len(allPods))
	desired := k.desired
	for _, pod := range allPods {
		desired[pod.UID] = true
	}

	logger.V(3).Info("Clean up pod workers for terminated pods")
	workingPods := k.podWorkers.SyncKnownPods(desired)

	runtimePods, err := k.runtimeMgr.ListPods(ctx, true)
	if err != nil {
		return fmt.Errorf("list runtime pods for housekeeping: %w", err)
	}

	logger.V(3).Info("Clean up orphaned pod statuses")
	k.status.RemoveOrphanedStatuses(desired)
	k.podsJSON.forgetRemoved(desired)
	logger.V(3).Info("Clean up probes for terminated pods")
	k.prober.CleanupPods(desired)

	// Pods in the desired set the workers do not know: most often a static pod re-created
	// with the same UID while its predecessor was terminating. Only admitted, active pods
	// qualify: the pod manager also holds pods admission rejected.
	var restart []*v1.Pod
	for _, pod := range allPods {
		if _, known := workingPods[pod.UID]; !known && k.isActive(pod) {
			restart = append(restart, pod)
		}
	}
	sortPods(restart)
	for _, pod := range restart {
		logger.V(3).Info("Pod will be restarted because it is in the desired set and not known to the pod workers (likely due to UID reuse)", "podUID", pod.UID)
		k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: kubetypes.SyncPodCreate, Pod: pod})
		workingPods[pod.UID] = podworkers.PodWorkerSync{State: podworkers.SyncPodState, HasConfig: true, Static: kubetypes.IsStaticPod(pod)}
	}

	// Finally, terminate what runs in the runtime but is unknown to the workers. The
	// termination happens in the background; the next housekeeping sees its result.
	for _, rp := range runtimePods {
		if !isRunningRuntimePod(rp) {
			continue
		}
		if _, known := workingPods[rp.ID]; known {
			continue
		}
		one := int64(1)
		running := *rp // the listing's pods are shared with the runtime's cache
		logger.V(2).Info("Clean up containers for orphaned pod we had not seen before", "podUID", rp.ID, "pod", klog.KRef(rp.Namespace, rp.Name))
		k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{
			UpdateType:     kubetypes.SyncPodKill,
			RunningPod:     &running,
			KillPodOptions: &podworkers.KillPodOptions{PodTerminationGracePeriodSecondsOverride: &one},
		})
		workingPods[rp.ID] = podworkers.PodWorkerSync{State: podworkers.TerminatingPodState, Orphan: true}
	}

	// The pods' directories on the node (volumes, etc-hosts, termination messages) go with
	// the pods: kept while a source wants the pod, a worker has it or the runtime runs it.
	k.inRuntime = scratch.Map(k.inRuntime, len(runtimePods))
	inRuntime := k.inRuntime
	for _, rp := range runtimePods {
		inRuntime[rp.ID] = true
	}
	k.cleanupOrphanedPodDirs(ctx, func(uid types.UID) bool {
		_, working := workingPods[uid]
		return desired[uid] || working || inRuntime[uid]
	})
	// Their cgroups likewise, once no container of theirs is left in them.
	k.podCgroups.cleanupOrphans(ctx, func(uid types.UID) bool {
		_, working := workingPods[uid]
		return desired[uid] || working || inRuntime[uid]
	})
	// And the user namespaces of the pods neither a source nor the runtime has (upstream's
	// CleanupOrphanedPodUsernsAllocations): only pods with one are looked at.
	logger.V(3).Info("Clean up orphaned pod user namespace allocations")
	k.userns.CleanupOrphans(logger, func(uid types.UID) bool { return desired[uid] || inRuntime[uid] })
	k.objects.prune(allPods)

	k.runtimeMgr.ContainerBackOff().GC()
	// Pods terminated since: a deferred resize may fit now (upstream retries them when
	// pods leave and periodically).
	k.retryPendingResizes(triggerTerminated)
	return nil
}

// isRunningRuntimePod: the pod has a running container or a ready sandbox (what the
// kubelet's runtime cache lists with all=false).
func isRunningRuntimePod(p *container.Pod) bool {
	for _, c := range p.Containers {
		if c.State == container.ContainerStateRunning {
			return true
		}
	}
	for _, s := range p.Sandboxes {
		if s.State == container.ContainerStateRunning {
			return true
		}
	}
	return false
}

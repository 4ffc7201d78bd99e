package kubelet

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/podworkers"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// HandlePodAdditions is the config ADD handler (upstream HandlePodAdditions): pods are
// taken oldest first, added to the pod manager, admitted against the pods admitted
// before them, and either rejected (phase Failed, a Warning event) or handed to their
// pod worker as a create.
func (k *Kubelet) HandlePodAdditions(pods []*v1.Pod) {
	start := k.clock.Now()
	sorted := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp)
	})
	// Upstream filters the pod manager's pods before each addition and admission sums
	// their requests again for each pod. Within one batch only the batch's own pods change
	// that set, so it is filtered and summed once (with the requests the pod manager keeps),
	// then each pod of the batch that stays active is added to the sums: a batch of n pods
	// costs O(n), not O(n^2).
	usage := admission.NewUsage(nil)
	for _, e := range k.pods.entries() {
		if k.isActive(e.pod) {
			usage.AddWithRequests(e.pod, e.requests)
		}
	}
	for _, pod := range sorted {
		requests := k.pods.AddPod(pod)
		// A pod being terminated is not admitted again: its worker finishes the termination
		// and housekeeping restarts it if it is still wanted.
		if !k.podWorkers.IsPodTerminationRequested(pod.UID) {
			if res := k.canAdmitPod(usage, pod); !res.Admit {
				k.rejectPod(pod, res.Reason, res.Message)
				continue
			}
		}
		if k.alloc != nil && !k.alloc.Has(pod.UID) {
			k.alloc.Allocate(pod) // what it was admitted with
		}
		k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate, StartTime: start})
		// An ADD of a UID already known replaces it.
		usage.Remove(pod.UID)
		if k.isActive(pod) {
			usage.AddWithRequests(pod, requests)
		}
	}
}

// HandlePodUpdates is the config UPDATE (and DELETE) handler: the new spec replaces the
// old one and the worker syncs it.
func (k *Kubelet) HandlePodUpdates(pods []*v1.Pod) {
	start := k.clock.Now()
	for _, pod := range pods {
		old, _ := k.pods.GetPodByUID(pod.UID)
		k.pods.AddPod(pod)
		// An admitted pod whose resources changed asks for an in-place resize (the API
		// server's resize subresource): accepted, or pending until there is room.
		if k.alloc != nil && k.alloc.Has(pod.UID) && resizeRequested(old, pod) {
			k.resizeMetrics.recordRequested(old, pod)
			k.handleResize(pod, triggerPodUpdated)
		}
		k.checkUpdateFeatures(old, pod)
		k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodUpdate, StartTime: start})
	}
}

// HandlePodRemoves is the config REMOVE handler: the pod leaves the desired set and its
// worker is told to kill it. Until every source has reported, nothing is killed, as
// upstream: housekeeping catches up once they have.
func (k *Kubelet) HandlePodRemoves(pods []*v1.Pod) {
	start := k.clock.Now()
	for _, pod := range pods {
		k.pods.RemovePod(pod)
		if !k.sourcesReady() {
			klog.V(2).InfoS("Skipping delete because sources aren't ready yet", "pod", klog.KObj(pod), "podUID", pod.UID)
			continue
		}
		klog.V(3).InfoS("Pod has been deleted and must be killed", "pod", klog.KObj(pod), "podUID", pod.UID)
		k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, StartTime: start})
	}
	// Room was freed: a deferred resize may fit now.
	k.retryPendingResizes(triggerPodsRemoved)
}

// HandlePodReconcile is the config RECONCILE handler: only the status changed at the
// source. The pod manager keeps the newest copy; a pod with readiness gates is synced so
// its Ready condition follows them (upstream NeedToReconcilePodReadiness).
func (k *Kubelet) HandlePodReconcile(pods []*v1.Pod) {
	start := k.clock.Now()
	for _, pod := range pods {
		k.pods.AddPod(pod)
		if len(pod.Spec.ReadinessGates) > 0 {
			k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodSync, StartTime: start})
		}
	}
}

// HandlePodSyncs syncs pods now (a PLEG event or a due resync), with the pod manager's
// copy of each.
func (k *Kubelet) HandlePodSyncs(pods []*v1.Pod) {
	start := k.clock.Now()
	for _, pod := range pods {
		if current, ok := k.pods.GetPodByUID(pod.UID); ok {
			pod = current
		}
		k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodSync, StartTime: start})
	}
}

// requeuePod asks the pod's worker for another sync (upstream's UpdatePod with
// SyncPodUpdate after a restart of all containers), with the pod manager's copy. Called
// from the pod's own sync: the update waits until that sync is done and the runtime's state
// after it is known.
func (k *Kubelet) requeuePod(pod *v1.Pod) {
	if current, ok := k.pods.GetPodByUID(pod.UID); ok {
		pod = current
	}
	k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodUpdate})
}

// canAdmitPod runs the admit handlers and returns the first rejection: the sysctl
// allowlist (upstream's second handler, SysctlForbidden), the predicate handler (the
// operating system, then resources and host ports against usage, the active pods', node
// affinity, node name and NoExecute taints), then the eviction manager's (under node
// pressure: BestEffort pods refused under memory pressure, every non-critical pod under other
// pressure; static pods are critical), then graceful node shutdown. Upstream asks the
// eviction manager first; a pod two handlers refuse gets the other reason here.
//
// Deviation: upstream turns an insufficient-resource rejection of a critical (static) pod
// into a preemption attempt, and with no lower-priority pod to evict reports
// "UnexpectedAdmissionError". The simulator reports the resource reason itself
// (OutOfcpu, OutOfmemory, OutOfpods ...), which is what the rejection is about.
func (k *Kubelet) canAdmitPod(usage *admission.Usage, pod *v1.Pod) admission.Result {
	res := k.sysctls.Admit(pod)
	if res.Admit {
		res = usage.AdmitPredicates(pod, k.nodeInfo)
	}
	if res.Admit && k.declared != nil {
		res = k.declared.admit(pod)
	}
	if res.Admit && k.eviction != nil {
		if ok, reason, message := k.eviction.Admit(pod); !ok {
			res = admission.Result{Reason: reason, Message: message}
		}
	}
	if res.Admit {
		res = k.shutdown.Admit(pod)
	}
	k.admissionMetrics.Observe(res)
	return res
}

// rejectPod records the rejection and fails the pod (upstream rejectPod).
func (k *Kubelet) rejectPod(pod *v1.Pod, reason, message string) {
	klog.InfoS("Pod rejected", "pod", klog.KObj(pod), "podUID", pod.UID, "reason", reason, "message", message)
	k.events.Eventf(events.PodRef(pod), v1.EventTypeWarning, reason, "%s", message)
	k.status.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message})
}

// isAdmittedPodTerminal: the pod is Succeeded or Failed at its source or in the status
// manager (rejected pods are Failed there).
func (k *Kubelet) isAdmittedPodTerminal(pod *v1.Pod) bool {
	if isTerminalPhase(pod.Status.Phase) {
		return true
	}
	if phase, ok := k.status.GetPodPhase(pod.UID); ok && isTerminalPhase(phase) {
		return true
	}
	return false
}

func isTerminalPhase(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// filterOutInactivePods keeps the pods that hold node resources (upstream
// filterOutInactivePods).
func (k *Kubelet) filterOutInactivePods(pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		if k.isActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// isActive: the pod is not known terminated, and not terminal unless still terminating.
func (k *Kubelet) isActive(p *v1.Pod) bool {
	if k.podWorkers.IsPodKnownTerminated(p.UID) {
		return false
	}
	return !k.isAdmittedPodTerminal(p) || k.podWorkers.IsPodTerminationRequested(p.UID)
}

// GetActivePods returns the admitted pods that are not finished (upstream GetActivePods):
// what the shutdown manager terminates.
func (k *Kubelet) GetActivePods() []*v1.Pod {
	return k.filterOutInactivePods(k.pods.GetPods())
}

// killPodNow asks the pod's worker to terminate it with gracePeriod and returns at once an
// operation completed when its containers are stopped (upstream killPodNow, used by node
// shutdown, which waits on it).
func (k *Kubelet) killPodNow(pod *v1.Pod, gracePeriod int64, status func(*v1.PodStatus)) (*task.Op, error) {
	done := task.NewOp()
	grace := gracePeriod
	k.podWorkers.UpdatePod(podworkers.UpdatePodOptions{
		Pod:        pod,
		UpdateType: kubetypes.SyncPodKill,
		KillPodOptions: &podworkers.KillPodOptions{
			PodTerminationGracePeriodSecondsOverride: &grace,
			PodStatusFunc:                            status,
			Completed:                                done,
		},
	})
	return done, nil
}

// --- podworkers.SyncHandler: the kubelet's sync functions, delegated to the standard
// Syncer (status generation + kuberuntime) ---

// SyncPod generates and stores the pod's status and, unless it is terminal, lets the
// runtime manager converge it.
func (k *Kubelet) SyncPod(ctx context.Context, updateType kubetypes.SyncPodType, pod *v1.Pod, podStatus *container.PodStatus) (bool, error) {
	if k.alloc != nil {
		// The pod runs with what was allocated to it, not what a pending resize asks.
		pod, _ = k.alloc.PodFromAllocation(pod)
		k.syncResize(pod, podStatus)
	}
	return k.syncer.SyncPod(ctx, updateType, pod, podStatus)
}

// SyncTerminatingPod stops the pod's containers within gracePeriod and stores the final
// status.
func (k *Kubelet) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error {
	return k.syncer.SyncTerminatingPod(ctx, pod, podStatus, gracePeriod, podStatusFn)
}

// SyncTerminatingRuntimePod stops an orphaned runtime pod.
func (k *Kubelet) SyncTerminatingRuntimePod(ctx context.Context, runningPod *container.Pod) error {
	return k.syncer.SyncTerminatingRuntimePod(ctx, runningPod)
}

// SyncTerminatedPod writes the pod's terminal status, tears its volumes down (upstream
// waits there for the volume manager to unmount them) and releases its user namespace.
func (k *Kubelet) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) error {
	if err := k.syncer.SyncTerminatedPod(ctx, pod, podStatus); err != nil {
		return err
	}
	if k.alloc != nil {
		k.alloc.Remove(pod.UID)
		k.resizeMetrics.observe(k.alloc, k.pods)
	}
	k.unmountVolumes(ctx, pod.UID)
	// Its user namespace's range is free for another pod (upstream releases it here).
	k.userns.Release(klog.FromContext(ctx), pod.UID)
	return nil
}

package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/allocation"
	"github.com/minikubelet/minikubelet/pkg/cgroupfs"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Resize events (upstream's pkg/kubelet/events).
const (
	ReasonResizeDeferred   = "ResizeDeferred"
	ReasonResizeInfeasible = "ResizeInfeasible"
	ReasonResizeStarted    = "ResizeStarted"
	ReasonResizeCompleted  = "ResizeCompleted"
	ReasonResizeError      = "ResizeError"
)

// podCgroups are the node's pod cgroups under the kubelet's cgroupfs driver: kubepods,
// then the QoS class (none for Guaranteed), then pod<uid> (upstream's pod container
// manager, with cgroupsPerQOS). A nil tree (a kubelet built without a runtime's) has none.
// fs is the node's filesystem, where the tree is mounted (fake.CgroupRoot).
type podCgroups struct {
	tree *cgroupfs.Tree
	fs   *vfs.View
}

// children are the names in the directory of the cgroup parent that keep selects, read
// from the node's filesystem (a listing of the directory, not a walk of the whole tree).
func (p podCgroups) children(parent string, keep func(string) bool) []string {
	if p.fs == nil {
		return nil
	}
	names, _ := p.fs.SelectDirNames(fake.CgroupRoot+parent, keep)
	return names
}

var _ kuberuntime.PodCgroups = podCgroups{}

// Name is the pod's cgroup: the tree's copy of the name once it exists, since the sandbox
// keeps it as its cgroup parent as long as the pod lives.
func (p podCgroups) Name(pod *v1.Pod) string {
	var buf [96]byte
	name := string(appendName(buf[:0], pod))
	if p.tree != nil {
		return p.tree.Path(name)
	}
	return name
}

// appendName appends the pod's cgroup to b.
func appendName(b []byte, pod *v1.Pod) []byte {
	switch podstatus.QOS(pod) {
	case v1.PodQOSGuaranteed:
		b = append(b, "/kubepods/pod"...)
	case v1.PodQOSBurstable:
		b = append(b, "/kubepods/burstable/pod"...)
	default:
		b = append(b, "/kubepods/besteffort/pod"...)
	}
	return append(b, pod.UID...)
}

// config is what the pod's cgroup is set to, and whether it exists: looked up by a name
// made on the stack (every sync of every pod reads it).
func (p podCgroups) config(pod *v1.Pod) (cgroupfs.Config, bool) {
	if p.tree == nil {
		return cgroupfs.Config{}, false
	}
	var buf [96]byte
	return p.tree.GetClean(appendName(buf[:0], pod))
}

// Get is what the pod's cgroup is set to.
func (p podCgroups) Get(pod *v1.Pod) kuberuntime.PodResourceConfig {
	if p.tree == nil {
		return kuberuntime.PodResourceConfig{}
	}
	c, _ := p.config(pod)
	return kuberuntime.PodResourceConfig{CPUShares: c.CPUShares, CPUQuota: c.CPUQuota, CPUPeriod: c.CPUPeriod, Memory: c.MemoryMax}
}

// Set writes c's set fields on the pod's cgroup, keeping the others.
func (p podCgroups) Set(pod *v1.Pod, c kuberuntime.PodResourceConfig) error {
	if p.tree == nil {
		return nil
	}
	name := p.Name(pod)
	cur, _ := p.tree.Get(name)
	if c.CPUShares != nil {
		cur.CPUShares = c.CPUShares
	}
	if c.CPUQuota != nil {
		cur.CPUQuota = c.CPUQuota
	}
	if c.CPUPeriod != nil {
		cur.CPUPeriod = c.CPUPeriod
	}
	if c.Memory != nil {
		cur.MemoryMax = c.Memory
	}
	p.tree.Set(name, cur)
	return nil
}

// ensure makes the pod's cgroup with pod's configuration unless it exists (upstream's
// EnsureExists: an existing one is left as it is; a resize updates it).
func (p podCgroups) ensure(pod *v1.Pod) bool {
	if p.tree == nil {
		return false
	}
	if _, ok := p.config(pod); ok {
		return false
	}
	c := kuberuntime.ResourceConfigForPod(pod)
	p.tree.Set(p.Name(pod), cgroupfs.Config{CPUShares: c.CPUShares, CPUQuota: c.CPUQuota, CPUPeriod: c.CPUPeriod, MemoryMax: c.Memory})
	return true
}

// qosParents are where the pods' cgroups are, by QoS class.
var qosParents = []string{"/kubepods", "/kubepods/burstable", "/kubepods/besteffort"}

// cleanupOrphans removes the cgroups of pods that can no longer be running (upstream's
// cleanupOrphanedPodCgroups): one that still has a container's is left for the next pass.
func (p podCgroups) cleanupOrphans(ctx context.Context, possiblyRunning func(types.UID) bool) {
	if p.tree == nil {
		return
	}
	orphan := func(name string) bool {
		uid, ok := strings.CutPrefix(name, "pod")
		return ok && !possiblyRunning(types.UID(uid))
	}
	for _, parent := range qosParents {
		for _, name := range p.children(parent, orphan) {
			uid := strings.TrimPrefix(name, "pod")
			if err := p.tree.Remove(parent + "/" + name); err != nil {
				klog.FromContext(ctx).V(4).Info("Orphaned pod cgroup not removed yet", "podUID", uid, "err", err)
			}
		}
	}
}

// resizeStatus is what a pod's status shows of a resize (podstatus.ResizeStatus).
type resizeStatus struct {
	alloc   *allocation.Manager
	cgroups podCgroups
}

func (r resizeStatus) ResizeConditions(uid types.UID) []v1.PodCondition {
	return r.alloc.Conditions(uid)
}

// PodCgroupResources converts the pod cgroup's values back to quantities, as upstream's
// CPURequestsFromConfig, CPULimitsFromConfig and MemoryLimitsFromConfig.
func (r resizeStatus) AllocatedPodRequests(uid types.UID) (v1.ResourceList, bool) {
	return r.alloc.PodRequests(uid)
}

func (r resizeStatus) PodCgroupResources(pod *v1.Pod) (cpuRequest, cpuLimit, memoryLimit *resource.Quantity) {
	if r.cgroups.tree == nil {
		return nil, nil, nil
	}
	c, ok := r.cgroups.config(pod)
	if !ok {
		return nil, nil, nil
	}
	if c.CPUShares != nil {
		cpuRequest = resource.NewMilliQuantity(sharesToMilliCPU(int64(*c.CPUShares)), resource.DecimalSI)
	}
	if c.CPUQuota != nil && c.CPUPeriod != nil && *c.CPUPeriod > 0 {
		milli := int64(0)
		if *c.CPUQuota > 0 {
			milli = *c.CPUQuota * 1000 / int64(*c.CPUPeriod)
		}
		cpuLimit = resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
	if c.MemoryMax != nil && *c.MemoryMax > 0 {
		memoryLimit = resource.NewQuantity(*c.MemoryMax, resource.BinarySI)
	}
	return cpuRequest, cpuLimit, memoryLimit
}

// sharesToMilliCPU is upstream's: the millicores shares stand for, rounded up.
func sharesToMilliCPU(shares int64) int64 {
	if shares < 2 {
		return 0
	}
	return int64(math.Ceil(float64(shares*1000) / 1024))
}

// resizeRequested reports whether an update of pod changes the resources of any
// container or of the pod (upstream's recordResizeOperations).
func resizeRequested(old, pod *v1.Pod) bool {
	if old == nil {
		return false
	}
	return !apiequality.Semantic.DeepEqual(allocation.ForPod(old), allocation.ForPod(pod))
}

// handleResize decides a resize of an admitted pod (upstream's handlePodResourcesResize):
// accepted when the node has room for the new requests beside the other pods' allocations,
// which become the pod's; else it is Deferred and tried again when pods leave.
func (k *Kubelet) handleResize(pod *v1.Pod, trigger string) bool {
	defer k.resizeMetrics.observe(k.alloc, k.pods)
	allocated, differs := k.alloc.PodFromAllocation(pod)
	if !differs {
		k.alloc.ClearPending(pod.UID) // a pending resize was reverted
		return false
	}
	if detail, msg := k.resizeInfeasible(allocated, pod); msg != "" {
		if k.resizeMetrics != nil {
			k.resizeMetrics.infeasible.WithLabelValues(detail).Inc()
		}
		k.resizePending(pod, v1.PodReasonInfeasible, msg)
		return false
	}
	usage := admission.NewUsage(nil)
	for _, other := range k.GetActivePods() {
		if other.UID == pod.UID || !k.alloc.Has(other.UID) {
			continue
		}
		allocated, _ := k.alloc.PodFromAllocation(other)
		usage.Add(allocated)
	}
	res := usage.AdmitPredicates(pod, k.nodeInfo)
	if !res.Admit {
		k.resizePending(pod, res.Reason, res.Message)
		return false
	}
	if c := k.alloc.Pending(pod.UID); c != nil && c.Reason == v1.PodReasonDeferred && k.resizeMetrics != nil {
		k.resizeMetrics.deferredAccepted.WithLabelValues(trigger).Inc()
	}
	k.alloc.Allocate(pod)
	k.alloc.ClearPending(pod.UID)
	k.alloc.ClearInProgress(pod.UID)
	k.alloc.SetInProgress(pod.UID, "", "", pod.Generation)
	k.recordEvent(events.PodRef(pod), v1.EventTypeNormal, ReasonResizeStarted, "%s", resizeMessage(pod, pod.Generation, "", "Pod resize started"))
	return true
}

// resizePending records a resize that waits: PodResizePending with reason Infeasible,
// or Deferred for any other, and a ResizeInfeasible or ResizeDeferred event when the
// condition is new or its reason or generation changed.
func (k *Kubelet) resizePending(pod *v1.Pod, reason, message string) {
	if !k.alloc.SetPending(pod.UID, reason, message, pod.Generation) {
		return
	}
	c := k.alloc.Pending(pod.UID)
	eventReason := ReasonResizeDeferred
	if c.Reason == v1.PodReasonInfeasible {
		eventReason = ReasonResizeInfeasible
	}
	k.recordEvent(events.PodRef(pod), v1.EventTypeWarning, eventReason, "%s", resizeMessage(pod, pod.Generation, message, "Pod resize "+c.Reason))
}

// resizeInfeasible is upstream's podResizesAdmitHandler for what the node can model: a
// resize of pod-level resources with InPlacePodLevelResourcesVerticalScaling off, or of a
// memory-backed emptyDir's sizeLimit with InPlacePodVerticalScalingMemoryBackedVolumes
// off, can never be done. It returns the metric's reason detail and the message.
func (k *Kubelet) resizeInfeasible(allocated, pod *v1.Pod) (string, string) {
	if !k.podLevelResize && !apiequality.Semantic.DeepEqual(allocated.Spec.Resources, pod.Spec.Resources) {
		return "plr_feature_gate_off", "InPlacePodLevelResourcesVerticalScaling is disabled"
	}
	if !k.gate.Enabled(memoryBackedVolumesResize) && memoryBackedVolumeResized(allocated, pod) {
		return "memory_volume_resize_gate_off", "Memory-backed emptyDir volume resize is disabled"
	}
	return "", ""
}

// memoryBackedVolumesResize is the gate of memory-backed emptyDir resize (alpha in
// v1.37, not modelled: only its refusal is).
const memoryBackedVolumesResize = "InPlacePodVerticalScalingMemoryBackedVolumes"

// memoryBackedVolumeResized: a memory-backed emptyDir's sizeLimit differs between the
// two (upstream's IsMemoryBackedVolumeResizeRequested).
func memoryBackedVolumeResized(allocated, pod *v1.Pod) bool {
	if len(allocated.Spec.Volumes) != len(pod.Spec.Volumes) {
		return false
	}
	for i, a := range allocated.Spec.Volumes {
		if a.EmptyDir == nil || a.EmptyDir.Medium != v1.StorageMediumMemory || a.EmptyDir.SizeLimit == nil {
			continue
		}
		if d := pod.Spec.Volumes[i].EmptyDir; d == nil || !apiequality.Semantic.DeepEqual(a.EmptyDir.SizeLimit, d.SizeLimit) {
			return true
		}
	}
	return false
}

// retryPendingResizes tries the deferred resizes again (upstream's RetryPendingResizes),
// after pods left the node: each accepted one is synced.
func (k *Kubelet) retryPendingResizes(trigger string) {
	if k.alloc == nil {
		return
	}
	var deferred []*v1.Pod
	for _, uid := range k.alloc.PendingPods() {
		if c := k.alloc.Pending(uid); c == nil || c.Reason != v1.PodReasonDeferred {
			continue
		}
		if pod, ok := k.pods.GetPodByUID(uid); ok {
			deferred = append(deferred, pod)
		}
	}
	// Upstream's order (sortPendingResizes): higher priority first, then Guaranteed before
	// Burstable, then the longest waiting.
	qosRank := map[v1.PodQOSClass]int{v1.PodQOSGuaranteed: 0, v1.PodQOSBurstable: 1, v1.PodQOSBestEffort: 2}
	sort.SliceStable(deferred, func(i, j int) bool {
		a, b := deferred[i], deferred[j]
		if pa, pb := podPriority(a), podPriority(b); pa != pb {
			return pa > pb
		}
		if qa, qb := qosRank[podstatus.QOS(a)], qosRank[podstatus.QOS(b)]; qa != qb {
			return qa < qb
		}
		ta, tb := k.alloc.Pending(a.UID).LastTransitionTime, k.alloc.Pending(b.UID).LastTransitionTime
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return a.UID < b.UID
	})
	for _, pod := range deferred {
		if k.handleResize(pod, trigger) {
			k.HandlePodSyncs([]*v1.Pod{pod})
		}
	}
}

func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// containerAllocation and resizeSummary are upstream's resize event message body.
type containerAllocation struct {
	Name      string                  `json:"name"`
	Resources v1.ResourceRequirements `json:"resources,omitempty"`
}

type resizeSummary struct {
	InitContainers []containerAllocation `json:"initContainers,omitempty"`
	Containers     []containerAllocation `json:"containers,omitempty"`
	Generation     int64                 `json:"generation"`
	Error          string                `json:"error,omitempty"`
}

// resizeMessage is upstream's podResizeMessage: the prefix, then the pod's container
// resources and the generation as JSON.
func resizeMessage(pod *v1.Pod, generation int64, errorMsg, prefix string) string {
	s := resizeSummary{Generation: generation, Error: errorMsg}
	for _, c := range pod.Spec.InitContainers {
		s.InitContainers = append(s.InitContainers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	data, err := json.Marshal(s)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(data)
}

// podMemoryUsage is what the pod and each of its running containers hold now, for the
// check before a memory limit is lowered: their resident memory, not the request the
// stats show as the use of a container that scripts none (docs/differences.md).
func (k *Kubelet) podMemoryUsage(ctx context.Context, pod *v1.Pod) (int64, map[string]int64, error) {
	status, err := k.cache.Get(pod.UID)
	if err != nil || status == nil {
		return 0, nil, fmt.Errorf("no status of pod %q", kuberuntime.FormatPod(pod))
	}
	var total int64
	byName := map[string]int64{}
	for _, cs := range status.ContainerStatuses {
		if cs.State != container.ContainerStateRunning {
			continue
		}
		use, err := k.runtime.ContainerResidentMemory(cs.ID.ID)
		if err != nil {
			continue
		}
		byName[cs.Name] += use
		total += use
	}
	return total, byName, nil
}

// syncResize sets the pod's PodResizeInProgress condition before its status is generated
// (upstream's SyncPod): present while what is allocated (pod) is not yet actuated;
// cleared, with a ResizeCompleted event, once it is.
func (k *Kubelet) syncResize(pod *v1.Pod, podStatus *container.PodStatus) {
	if k.alloc == nil {
		return
	}
	if k.runtimeMgr.IsPodResizeInProgress(pod, podStatus) {
		if _, changed := k.alloc.SetInProgress(pod.UID, "", "", pod.Generation); changed {
			k.resizeMetrics.observe(k.alloc, k.pods)
		}
	} else if generation, cleared := k.alloc.ClearInProgress(pod.UID); cleared {
		k.recordEvent(events.PodRef(pod), v1.EventTypeNormal, ReasonResizeCompleted, "%s", resizeMessage(pod, generation, "", "Pod resize completed"))
		k.resizeMetrics.observe(k.alloc, k.pods)
	}
}

// resizeFailed follows the in-place resize of a sync: done, the pod is inspected again;
// failed, its PodResizeInProgress condition turns Error with the message, and a
// ResizeError event says so.
func (k *Kubelet) resizeFailed(pod *v1.Pod, result kuberuntime.PodSyncResult) bool {
	if k.alloc == nil {
		return false
	}
	changed := false
	for _, r := range result.SyncResults {
		if r.Action != kuberuntime.ResizePodInPlace {
			continue
		}
		if r.Error == nil {
			// The runtime now reports other resources, not another state: the next relist
			// reads the pod again and syncs it, which clears PodResizeInProgress.
			if k.genericPLEG != nil {
				k.genericPLEG.RequestReinspect(pod.UID)
			}
			continue
		}
		if generation, updated := k.alloc.SetInProgress(pod.UID, v1.PodReasonError, r.Message, pod.Generation); updated {
			k.recordEvent(events.PodRef(pod), v1.EventTypeWarning, ReasonResizeError, "%s", resizeMessage(pod, generation, r.Message, "Pod resize error"))
			changed = true
		}
	}
	return changed
}

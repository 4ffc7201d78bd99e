package kuberuntime

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/podstatus"
)

// ActuatedState keeps what was last set on each container's and pod's cgroups (upstream's
// actuated state checkpoint): a running container whose allocated resources differ from
// it is being resized.
type ActuatedState interface {
	Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool)
	SetActuated(uid types.UID, name string, r v1.ResourceRequirements)
	ActuatedPod(uid types.UID) *v1.ResourceRequirements
	SetActuatedPod(uid types.UID, r *v1.ResourceRequirements)
}

// PodResourceConfig is a pod cgroup's CPU and memory, upstream's cm.ResourceConfig: nil
// fields are not set (no limit).
type PodResourceConfig struct {
	CPUShares *uint64
	CPUQuota  *int64
	CPUPeriod *uint64
	Memory    *int64
}

// PodCgroups is the node's pod cgroups (the kubelet's pod container manager).
type PodCgroups interface {
	// Name is the pod's cgroup, its sandbox's cgroup parent.
	Name(pod *v1.Pod) string
	// Get is what its cgroup is set to now.
	Get(pod *v1.Pod) PodResourceConfig
	// Set writes the non-nil fields of c on it.
	Set(pod *v1.Pod, c PodResourceConfig) error
}

// ErrResizePodInPlace fails the resize action of a sync (kubecontainer.ErrResizePodInPlace).
var ErrResizePodInPlace = fmt.Errorf("ResizePodInPlaceError")

// ResizePodInPlace is the sync action that updates running containers' resources.
const ResizePodInPlace SyncAction = "ResizePodInPlace"

// EffectiveLimits are a container's limits with the pod-level ones it lacks (upstream's
// GetLimits): a container without a CPU or memory limit is bounded by its pod's.
func EffectiveLimits(podResources *v1.ResourceRequirements, c *v1.ResourceRequirements) v1.ResourceList {
	limits := c.Limits.DeepCopy()
	if limits == nil {
		limits = v1.ResourceList{}
	}
	if podResources == nil || len(podResources.Limits) == 0 {
		return limits
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		q, has := limits[name]
		if p, ok := podResources.Limits[name]; ok && !p.IsZero() && (!has || q.IsZero()) {
			limits[name] = p.DeepCopy()
		}
	}
	return limits
}

// actuation is what is set on the cgroup of a container of pod: its resources with the
// effective limits when pod-level resources are resized too.
//
// It shares c's lists (a pod is never changed): only pod-level limits make new ones.
func (m *Manager) actuation(pod *v1.Pod, c *v1.Container) v1.ResourceRequirements {
	r := c.Resources
	if m.cfg.InPlacePodLevelResourcesVerticalScaling && pod.Spec.Resources != nil && len(pod.Spec.Resources.Limits) > 0 {
		r.Limits = EffectiveLimits(pod.Spec.Resources, &c.Resources)
	}
	return r
}

// ResourceConfigForPod is the pod cgroup's configuration for pod (upstream's
// cm.ResourceConfigForPod): CPU shares from its requests; the CFS quota and the memory
// limit from its limits, set only when every container (or the pod level) declares one,
// or always for a Guaranteed pod; a BestEffort pod gets the minimum shares.
func ResourceConfigForPod(pod *v1.Pod) PodResourceConfig {
	reqs := admission.PodRequests(pod)
	limits := podLimits(pod)
	cpuDeclared, memDeclared := true, true
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Resources.Limits.Cpu().IsZero() {
				cpuDeclared = false
			}
			if list[i].Resources.Limits.Memory().IsZero() {
				memDeclared = false
			}
		}
	}
	if r := pod.Spec.Resources; r != nil {
		if !r.Limits.Cpu().IsZero() {
			cpuDeclared = true
		}
		if !r.Limits.Memory().IsZero() {
			memDeclared = true
		}
	}
	shares := uint64(milliCPUToShares(reqs.Cpu().MilliValue()))
	quota := milliCPUToQuota(limits.Cpu().MilliValue(), quotaPeriod)
	period := uint64(quotaPeriod)
	mem := limits.Memory().Value()
	var c PodResourceConfig
	switch podstatus.QOS(pod) {
	case v1.PodQOSGuaranteed:
		c = PodResourceConfig{CPUShares: &shares, CPUQuota: &quota, CPUPeriod: &period, Memory: &mem}
	case v1.PodQOSBurstable:
		c.CPUShares = &shares
		if cpuDeclared {
			c.CPUQuota, c.CPUPeriod = &quota, &period
		}
		if memDeclared {
			c.Memory = &mem
		}
	default:
		min := uint64(2)
		c.CPUShares = &min
	}
	return c
}

// podLimits are the pod's limits: its containers' aggregate, with the pod-level ones in
// place of theirs (component-helpers' PodLimits).
func podLimits(pod *v1.Pod) v1.ResourceList {
	limits := admission.PodLimits(pod)
	if r := pod.Spec.Resources; r != nil {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := r.Limits[name]; ok {
				limits[name] = q.DeepCopy()
			}
		}
	}
	return limits
}

// resourceValues are the four values a resize compares (upstream's resourceRequirements).
type resourceValues struct {
	memoryLimit, memoryRequest, cpuLimit, cpuRequest int64
}

func valuesOf(r *v1.ResourceRequirements) resourceValues {
	if r == nil {
		return resourceValues{}
	}
	return resourceValues{
		memoryLimit: r.Limits.Memory().Value(), memoryRequest: r.Requests.Memory().Value(),
		cpuLimit: r.Limits.Cpu().MilliValue(), cpuRequest: r.Requests.Cpu().MilliValue(),
	}
}

// containerToUpdate is a running container to resize in place.
type containerToUpdate struct {
	c       *v1.Container
	id      container.ContainerID
	desired resourceValues
	// current is shared by the container's memory and CPU updates: each sets the other
	// resource to what the one before it left (upstream's currentContainerResources).
	current *resourceValues
}

// resizeActions are what a sync does for an in-place resize.
type resizeActions struct {
	// byResource are the containers whose memory (or CPU) changes, decreases first.
	byResource map[v1.ResourceName][]containerToUpdate
	// restarted: a container is restarted for its resizePolicy, so the pod cgroup is
	// updated too; podLevel: the pod-level resources changed.
	restarted, podLevel bool
}

func (r *resizeActions) any() bool { return len(r.byResource) > 0 || r.restarted || r.podLevel }

// computeResize decides how a running container follows its allocated resources
// (upstream's computePodResizeAction): nothing to do, an update in place (queued in
// changes.resize), or a restart when a changed resource's resizePolicy is
// RestartContainer. It returns false when the container is to be restarted.
func (m *Manager) computeResize(pod *v1.Pod, c *v1.Container, s *container.ContainerStatus, changes *podActions) bool {
	if !m.cfg.InPlacePodVerticalScaling || m.cfg.Actuated == nil || s.State != container.ContainerStateRunning {
		return true
	}
	actual, found := m.cfg.Actuated.Actuated(pod.UID, c.Name)
	if !found {
		klog.ErrorS(nil, "Missing actuated resource record", "pod", klog.KObj(pod), "container", c.Name)
	}
	desiredReq := m.actuation(pod, c)
	desired, current := valuesOf(&desiredReq), valuesOf(&actual)
	shared := &current
	if desired == current {
		return true
	}
	changed := func(name v1.ResourceName, d, cur int64) (resize, restart bool) {
		if d == cur {
			return false, false
		}
		for _, p := range c.ResizePolicy {
			if p.ResourceName == name {
				return true, p.RestartPolicy == v1.RestartContainer
			}
		}
		return true, false
	}
	resizeMemLim, restartMemLim := changed(v1.ResourceMemory, desired.memoryLimit, current.memoryLimit)
	resizeMemReq, restartMemReq := changed(v1.ResourceMemory, desired.memoryRequest, current.memoryRequest)
	resizeCPULim, restartCPULim := changed(v1.ResourceCPU, desired.cpuLimit, current.cpuLimit)
	resizeCPUReq, restartCPUReq := changed(v1.ResourceCPU, desired.cpuRequest, current.cpuRequest)
	if restartCPULim || restartCPUReq || restartMemLim || restartMemReq {
		changes.ContainersToKill[s.ID] = containerToKillInfo{name: s.Name, container: c,
			message: fmt.Sprintf("Container %s resize requires restart", c.Name)}
		changes.resize.restarted = true
		return false
	}
	mark := func(name v1.ResourceName, d, cur int64) {
		u := containerToUpdate{c: c, id: s.ID, desired: desired, current: shared}
		list := changes.resize.byResource[name]
		if d < cur { // decreases first, so the pod's total never overshoots on the way
			list = append([]containerToUpdate{u}, list...)
		} else {
			list = append(list, u)
		}
		if changes.resize.byResource == nil {
			changes.resize.byResource = map[v1.ResourceName][]containerToUpdate{}
		}
		changes.resize.byResource[name] = list
	}
	switch {
	case resizeMemLim:
		mark(v1.ResourceMemory, desired.memoryLimit, current.memoryLimit)
	case resizeMemReq:
		mark(v1.ResourceMemory, desired.memoryRequest, current.memoryRequest)
	}
	switch {
	case resizeCPULim:
		mark(v1.ResourceCPU, desired.cpuLimit, current.cpuLimit)
	case resizeCPUReq:
		mark(v1.ResourceCPU, desired.cpuRequest, current.cpuRequest)
	}
	return true
}

// podLevelResizeNeeded: the pod-level resources allocated differ from those actuated, none
// counting as zero (upstream's computePodLevelResourcesResizeAction): pod-level resources
// a resize added are applied to the pod cgroup.
func (m *Manager) podLevelResizeNeeded(pod *v1.Pod) bool {
	if !m.cfg.InPlacePodLevelResourcesVerticalScaling || m.cfg.Actuated == nil {
		return false
	}
	return valuesOf(pod.Spec.Resources) != valuesOf(m.cfg.Actuated.ActuatedPod(pod.UID))
}

// podLevelResizeInProgress is upstream's isPodLevelResourcesResizeInProgress: only once
// something was actuated (the pod cgroup is made with the allocation at the pod's first
// sync, which must not count as a resize).
func (m *Manager) podLevelResizeInProgress(pod *v1.Pod) bool {
	if !m.cfg.InPlacePodLevelResourcesVerticalScaling || m.cfg.Actuated == nil || pod.Spec.Resources == nil {
		return false
	}
	actual := m.cfg.Actuated.ActuatedPod(pod.UID)
	return actual != nil && valuesOf(pod.Spec.Resources) != valuesOf(actual)
}

// IsPodResizeInProgress reports whether what is allocated to pod (its spec, the allocated
// pod) differs from what was set on the cgroups of its running containers or its own.
func (m *Manager) IsPodResizeInProgress(pod *v1.Pod, podStatus *container.PodStatus) bool {
	if !m.cfg.InPlacePodVerticalScaling || m.cfg.Actuated == nil {
		return false
	}
	for k, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			s := podStatus.FindContainerStatusByName(c.Name)
			if s == nil || s.State != container.ContainerStateRunning {
				continue
			}
			if k == 0 && !m.cfg.InPlacePodVerticalScalingInitContainers && !container.IsRestartableInitContainer(c, true) {
				continue // not resizable: it keeps what it started with
			}
			actual, _ := m.cfg.Actuated.Actuated(pod.UID, c.Name)
			want := m.actuation(pod, c)
			if valuesOf(&want) != valuesOf(&actual) {
				return true
			}
		}
	}
	return m.podLevelResizeInProgress(pod)
}

// doPodResize applies the resize actions (upstream's doPodResizeAction): memory first, then
// CPU; for each, a pod cgroup limit or weight that grows is raised before its containers'
// and one that shrinks is lowered after them. A memory limit is never lowered below what
// the pod or container uses: the resize fails with the reason, and is tried again at the
// next sync.
func (m *Manager) doPodResize(ctx context.Context, pod *v1.Pod, changes podActions) *SyncResult {
	r := &SyncResult{Action: ResizePodInPlace, Target: FormatPod(pod)}
	start := m.clock.Now()
	defer func() {
		m.metrics.resizeDuration.WithLabelValues(strconv.FormatBool(r.Error == nil)).Observe(float64(m.clock.Since(start).Milliseconds()))
	}()
	fail := func(err error) *SyncResult {
		r.Error, r.Message = ErrResizePodInPlace, err.Error()
		return r
	}
	desired := ResourceConfigForPod(pod)
	var current PodResourceConfig
	if m.cfg.PodCgroups != nil {
		current = m.cfg.PodCgroups.Get(pod)
	}
	if err := m.validateMemoryResize(ctx, pod, current, desired, changes.resize); err != nil {
		return fail(err)
	}
	setPod := func(c PodResourceConfig) error {
		if m.cfg.PodCgroups == nil {
			return nil
		}
		return m.cfg.PodCgroups.Set(pod, c)
	}
	resize := func(name v1.ResourceName, curLim, newLim, curReq, newReq int64, lim, req PodResourceConfig) error {
		if newLim > curLim {
			if err := setPod(lim); err != nil {
				return err
			}
		}
		if newReq > curReq {
			if err := setPod(req); err != nil {
				return err
			}
		}
		for _, u := range changes.resize.byResource[name] {
			if err := m.updateContainer(ctx, pod, name, u); err != nil {
				return err
			}
		}
		if newReq < curReq {
			if err := setPod(req); err != nil {
				return err
			}
		}
		if newLim < curLim {
			if err := setPod(lim); err != nil {
				return err
			}
		}
		if changes.resize.podLevel {
			m.setActuatedPodLevel(pod, name)
		}
		return nil
	}
	unlimited := func(p *int64) int64 {
		if p == nil || *p <= 0 {
			return 1<<63 - 1
		}
		return *p
	}
	if len(changes.resize.byResource[v1.ResourceMemory]) > 0 || changes.resize.restarted || changes.resize.podLevel {
		if err := resize(v1.ResourceMemory, unlimited(current.Memory), unlimited(desired.Memory), 0, 0,
			PodResourceConfig{Memory: orUnlimited(desired.Memory)}, PodResourceConfig{}); err != nil {
			return fail(err)
		}
	}
	if len(changes.resize.byResource[v1.ResourceCPU]) > 0 || changes.resize.restarted || changes.resize.podLevel {
		curShares, newShares := int64(0), int64(0)
		if current.CPUShares != nil {
			curShares = int64(*current.CPUShares)
		}
		if desired.CPUShares != nil {
			newShares = int64(*desired.CPUShares)
		}
		period := uint64(quotaPeriod)
		if err := resize(v1.ResourceCPU, unlimited(current.CPUQuota), unlimited(desired.CPUQuota), curShares, newShares,
			PodResourceConfig{CPUQuota: orUnlimited(desired.CPUQuota), CPUPeriod: &period}, PodResourceConfig{CPUShares: desired.CPUShares}); err != nil {
			return fail(err)
		}
	}
	return r
}

// orUnlimited is p, or -1 (no limit) when nil: lowering to none must be written too.
func orUnlimited(p *int64) *int64 {
	if p != nil {
		return p
	}
	v := int64(-1)
	return &v
}

// setActuatedPodLevel records the pod-level resource name as actuated.
func (m *Manager) setActuatedPodLevel(pod *v1.Pod, name v1.ResourceName) {
	alloc := pod.Spec.Resources
	if alloc == nil {
		return
	}
	actual := m.cfg.Actuated.ActuatedPod(pod.UID)
	if actual == nil {
		actual = &v1.ResourceRequirements{}
	} else {
		actual = actual.DeepCopy()
	}
	copyOne := func(dst *v1.ResourceList, src v1.ResourceList) {
		if src == nil {
			return
		}
		if *dst == nil {
			*dst = v1.ResourceList{}
		}
		if q, ok := src[name]; ok {
			(*dst)[name] = q.DeepCopy()
		} else {
			delete(*dst, name)
		}
	}
	copyOne(&actual.Requests, alloc.Requests)
	copyOne(&actual.Limits, alloc.Limits)
	m.cfg.Actuated.SetActuatedPod(pod.UID, actual)
}

// validateMemoryResize refuses to lower a memory limit to or below current use (upstream's
// validateMemoryResizeAction), with upstream's message.
func (m *Manager) validateMemoryResize(ctx context.Context, pod *v1.Pod, current, desired PodResourceConfig, rs resizeActions) error {
	podDecreasing := desired.Memory != nil && (current.Memory == nil || *current.Memory <= 0 || *desired.Memory < *current.Memory)
	decreasing := map[string]int64{}
	for _, u := range rs.byResource[v1.ResourceMemory] {
		if u.desired.memoryLimit != 0 && (u.current.memoryLimit == 0 || u.desired.memoryLimit < u.current.memoryLimit) {
			decreasing[u.c.Name] = u.desired.memoryLimit
		}
	}
	if (!podDecreasing && len(decreasing) == 0) || m.cfg.MemoryUsage == nil {
		return nil
	}
	podUse, containers, err := m.cfg.MemoryUsage(ctx, pod)
	if err != nil {
		return fmt.Errorf("unable to read memory usage for pod %q", FormatPod(pod))
	}
	var errs []error
	if podDecreasing && podUse >= *desired.Memory {
		errs = append(errs, fmt.Errorf("attempting to set pod memory limit (%d) below current usage (%d)", *desired.Memory, podUse))
	}
	for name, limit := range decreasing {
		if use, ok := containers[name]; ok && use >= limit {
			// upstream prints the pod's use here, not the container's
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", name, limit, podUse))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot decrease memory limits: %w", utilerrors.NewAggregate(errs))
	}
	return nil
}

// updateContainer sets one resource of a running container to its desired value, the
// other to what it has (upstream's updatePodContainerResources), and records it actuated.
func (m *Manager) updateContainer(ctx context.Context, pod *v1.Pod, name v1.ResourceName, u containerToUpdate) error {
	v := *u.current
	switch name {
	case v1.ResourceMemory:
		v.memoryLimit, v.memoryRequest = u.desired.memoryLimit, u.desired.memoryRequest
	case v1.ResourceCPU:
		v.cpuLimit, v.cpuRequest = u.desired.cpuLimit, u.desired.cpuRequest
	}
	c := u.c.DeepCopy()
	c.Resources.Limits = v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(v.cpuLimit, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(v.memoryLimit, resource.BinarySI),
	}
	c.Resources.Requests = v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(v.cpuRequest, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(v.memoryRequest, resource.BinarySI),
	}
	res := m.containerResources(pod, c)
	if err := m.runtime.UpdateContainerResources(ctx, u.id.ID, res); err != nil {
		klog.FromContext(ctx).Error(err, "updateContainerResources failed", "container", c.Name, "cID", u.id, "pod", klog.KObj(pod), "resourceName", name)
		return err
	}
	*u.current = v
	// What is actuated is the container's allocation for this resource, the other as it was.
	actual, _ := m.cfg.Actuated.Actuated(pod.UID, u.c.Name)
	actual = *actual.DeepCopy()
	want := m.actuation(pod, u.c)
	for _, list := range []struct{ dst, src *v1.ResourceList }{{&actual.Limits, &want.Limits}, {&actual.Requests, &want.Requests}} {
		if q, ok := (*list.src)[name]; ok {
			if *list.dst == nil {
				*list.dst = v1.ResourceList{}
			}
			(*list.dst)[name] = q.DeepCopy()
		} else {
			delete(*list.dst, name)
		}
	}
	m.cfg.Actuated.SetActuated(pod.UID, u.c.Name, actual)
	return nil
}

// sandboxCgroupParent is the pod's cgroup its sandbox's containers go under.
func (m *Manager) sandboxCgroupParent(pod *v1.Pod) string {
	if m.cfg.PodCgroups == nil {
		return ""
	}
	return m.cfg.PodCgroups.Name(pod)
}

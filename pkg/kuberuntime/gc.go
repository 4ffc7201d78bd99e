package kuberuntime

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
)

// minDeadContainerInPod is how many exited instances of each container are kept: the newest
// one carries the restart count, the exit code for lastState and the crash-loop clock.
const minDeadContainerInPod = 1

// PodStateProvider answers the pod workers' questions the garbage collector needs.
type PodStateProvider interface {
	// ShouldPodContentBeRemoved: the pod is deleted and stopped (or evicted, or unknown
	// after the workers synced); remove all of it.
	ShouldPodContentBeRemoved(uid types.UID) bool
}

// CleanUpContainersInPod removes old exited instances of the container that just died
// (exitedContainerID, from a PLEG ContainerDied event), keeping the newest one, or all of
// them when removeAll (the pod is terminal and its content should go).
func (m *Manager) CleanUpContainersInPod(ctx context.Context, podStatus *container.PodStatus, exitedContainerID string, removeAll bool) error {
	keep := minDeadContainerInPod
	if removeAll {
		keep = 0
	}
	var errs []error
	for _, s := range containersToDeleteInPod(exitedContainerID, podStatus, keep) {
		klog.FromContext(ctx).V(4).Info("Removing dead container", "containerName", s.Name, "containerID", s.ID.ID, "podUID", podStatus.ID)
		if err := m.runtime.RemoveContainer(ctx, s.ID.ID); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %q of pod %q: %w", s.ID.ID, podStatus.ID, err))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// containersToDeleteInPod is upstream's getContainersToDeleteInPod: the exited instances of
// the filtered container's name (or of every container without a filter) beyond the newest
// keep.
func containersToDeleteInPod(filterID string, podStatus *container.PodStatus, keep int) []*container.ContainerStatus {
	if podStatus == nil {
		return nil
	}
	var matched *container.ContainerStatus
	if filterID != "" {
		for _, s := range podStatus.ContainerStatuses {
			if s.ID.ID == filterID {
				matched = s
				break
			}
		}
		if matched == nil {
			return nil
		}
	}
	var candidates []*container.ContainerStatus
	for _, s := range podStatus.ContainerStatuses {
		if s.State != container.ContainerStateExited {
			continue
		}
		if matched == nil || matched.Name == s.Name {
			candidates = append(candidates, s)
		}
	}
	if len(candidates) <= keep {
		return nil
	}
	sortByCreatedDesc(candidates)
	return candidates[keep:]
}

// GarbageCollect is the container GC of housekeeping: for each pod and container name it
// keeps the newest non-running instance and removes older ones, removes every non-running
// container of pods whose content should be removed, and removes sandboxes that are not
// ready and hold no containers (all of them for a pod whose content should be removed, all
// but the newest otherwise). Without allSourcesReady nothing is treated as deleted, so a
// source that has not reported yet cannot get its pods collected. It also drops expired
// crash-loop back-off entries.
func (m *Manager) GarbageCollect(ctx context.Context, state PodStateProvider, allSourcesReady bool) error {
	m.backOff.GC()
	m.imageBackOff.GC()
	if allSourcesReady {
		// upstream's evictPodLogsDirectories: the logs of a removed pod go with it
		m.logs.forget(state.ShouldPodContentBeRemoved)
	}
	m.gcPrevPullErrors()
	sandboxes, err := m.runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("list sandboxes for garbage collection: %w", err)
	}
	containers, err := m.runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers for garbage collection: %w", err)
	}
	logger := klog.FromContext(ctx)

	type key struct{ uid, name string }
	dead := map[key][]cri.Container{}
	inSandbox := map[string]int{}
	for _, c := range containers {
		if c.State == cri.ContainerRunning {
			inSandbox[c.PodSandboxID]++
			continue
		}
		k := key{c.Labels[cri.PodUIDLabel], c.Metadata.Name}
		dead[k] = append(dead[k], c)
	}
	var errs []error
	for k, list := range dead {
		keep := minDeadContainerInPod
		if allSourcesReady && state.ShouldPodContentBeRemoved(types.UID(k.uid)) {
			keep = 0
		}
		// newest first; on a fast virtual clock equal creation times fall back to the attempt
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].CreatedAt == list[j].CreatedAt {
				return list[i].Metadata.Attempt > list[j].Metadata.Attempt
			}
			return list[i].CreatedAt > list[j].CreatedAt
		})
		for i, c := range list {
			if i < keep {
				inSandbox[c.PodSandboxID]++
				continue
			}
			logger.V(4).Info("Removing container", "containerID", c.ID, "containerName", c.Metadata.Name, "podUID", k.uid)
			if err := m.runtime.RemoveContainer(ctx, c.ID); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("remove container %q: %w", c.ID, err))
				inSandbox[c.PodSandboxID]++
			}
		}
	}

	// Only a sandbox that is not ready and holds no container may go, and the newest of
	// its pod's stays unless the pod's content should be removed. Grouping every pod's
	// sandboxes to find the newest cost 10,000 slices a minute on a node where none goes.
	var idle []int
	for i := range sandboxes {
		if sandboxes[i].State != cri.SandboxReady && inSandbox[sandboxes[i].ID] == 0 {
			idle = append(idle, i)
		}
	}
	if len(idle) == 0 {
		return utilerrors.NewAggregate(errs)
	}
	newest := make(map[string]int, len(idle)) // a pod's UID -> its newest sandbox's index
	for _, i := range idle {
		newest[sandboxes[i].Metadata.UID] = -1
	}
	for i := range sandboxes {
		uid := sandboxes[i].Metadata.UID
		// The first of equal creation times counts as the newer, as a stable sort keeps them.
		if cur, ok := newest[uid]; ok && (cur < 0 || sandboxes[i].CreatedAt > sandboxes[cur].CreatedAt) {
			newest[uid] = i
		}
	}
	for _, i := range idle {
		s := &sandboxes[i]
		uid := s.Metadata.UID
		if newest[uid] == i && !(allSourcesReady && state.ShouldPodContentBeRemoved(types.UID(uid))) {
			continue // keep the newest sandbox of a pod that may still run
		}
		logger.V(4).Info("Removing sandbox", "podSandboxID", s.ID, "podUID", uid)
		if err := m.runtime.RemovePodSandbox(ctx, s.ID); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %q: %w", s.ID, err))
		}
	}
	return utilerrors.NewAggregate(errs)
}

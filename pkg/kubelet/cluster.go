package kubelet

import (
	"context"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

// sources are the pod sources the merger waits for: the manifest directory, and in cluster
// mode the API server.
func (k *Kubelet) sources() []string {
	if k.kubeClient == nil {
		return []string{kubetypes.FileSource}
	}
	return []string{kubetypes.FileSource, kubetypes.ApiserverSource}
}

// watchAPIPods is the API server pod source (cluster mode): the pods bound to this node,
// pushed to the merger as source "api" after every change, until ctx ends.
func (k *Kubelet) watchAPIPods(ctx context.Context) {
	cluster.WatchPods(ctx, k.kubeClient, k.nodeName, func(pods []*v1.Pod) {
		for _, p := range pods {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[kubetypes.ConfigSourceAnnotationKey] = kubetypes.ApiserverSource
		}
		_ = k.merger.Push(ctx, kubetypes.ApiserverSource, pods)
	})
}

// apiStatusSync is the status manager's API side (cluster mode): a loop that writes every
// changed status of the API server's pods to pods/status, at once after a change and every
// StatusSyncPeriod, and deletes a pod being deleted once its containers are gone.
type apiStatusSync struct {
	k        *Kubelet
	sync     *cluster.PodStatusSync
	periodic *runner.Periodic
	version  atomic.Uint64 // the status manager's version the last run synced
}

func (k *Kubelet) buildStatusSync() {
	if k.kubeClient == nil {
		return
	}
	s := &apiStatusSync{k: k, sync: cluster.NewPodStatusSync(k.kubeClient, k.apiCaller)}
	s.periodic = runner.NewPeriodic(k.clock, runner.Every(cluster.StatusSyncPeriod), s.run)
	k.statusSync = s
}

// statusChanged is the status manager's change hook: the API sync runs at once.
func (k *Kubelet) statusChanged() {
	if k.statusSync != nil {
		k.statusSync.periodic.Trigger()
	}
}

func (s *apiStatusSync) loop() runner.Loop {
	return s.periodic.Loop("api-status-sync")
}

// run syncs the API server's pods (static pods have no API object until mirror pods exist).
func (s *apiStatusSync) run(ctx context.Context) {
	k := s.k
	s.version.Store(k.status.Version())
	type item struct {
		pod    *v1.Pod
		status v1.PodStatus
	}
	var items []item
	k.status.Each(func(pod *v1.Pod, status *v1.PodStatus) {
		if pod.Annotations[kubetypes.ConfigSourceAnnotationKey] == kubetypes.ApiserverSource {
			items = append(items, item{pod, *status.DeepCopy()})
		}
	})
	known := map[types.UID]bool{}
	for _, it := range items {
		known[it.pod.UID] = true
		// The newest copy of the pod (it may carry a deletion timestamp by now).
		pod := it.pod
		if p, ok := k.pods.GetPodByUID(pod.UID); ok {
			pod = p
		}
		s.sync.Sync(ctx, pod, it.status, s.canBeDeleted(pod, it.status))
	}
	s.sync.Forget(func(uid types.UID) bool { return known[uid] })
}

// canBeDeleted is upstream's: a pod being deleted, in a terminal phase, with no container
// that could still run.
func (s *apiStatusSync) canBeDeleted(pod *v1.Pod, status v1.PodStatus) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	if status.Phase != v1.PodSucceeded && status.Phase != v1.PodFailed {
		return false
	}
	return !s.k.podWorkers.CouldHaveRunningContainers(pod.UID)
}

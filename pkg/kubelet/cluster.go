package kubelet

import (
	"context"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/podsource"
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
	cluster.WatchPods(ctx, k.kubeClient, k.nodeName, k.annotateAPIPod, func(pods []*v1.Pod) { k.apiPodsArrived(ctx, pods) })
}

// annotateAPIPod gives a pod from the watch, as it is decoded, the annotations the merger
// would give a copy of it (podsource.AnnotateSourcePod), so that the merger keeps the
// watch's pod. Mirror pods are the status manager's and keep the API's annotations.
func (k *Kubelet) annotateAPIPod(pod, old *v1.Pod) {
	if cluster.IsMirrorPod(pod) {
		return
	}
	podsource.AnnotateSourcePod(pod, old, kubetypes.ApiserverSource, k.clock.Now())
}

// UpdateAPIPods hands the kubelet the API server's pods bound to the node (the whole set,
// as the pod watch sees it): mirror pods go to the status manager, the others, with the
// ConfigMaps and Secrets they use read first, to the config merger as the api source.
// simulate mode calls it after the in-process API changed; the daemon's pod watch does the
// same in two halves, the reads on its own goroutine (apiPodsArrived).
func (k *Kubelet) UpdateAPIPods(ctx context.Context, pods []*v1.Pod) {
	regular, mirrors := splitAPIPods(pods)
	k.objects.fetchForPods(ctx, regular)
	k.handAPIPods(ctx, regular, mirrors)
}

// handAPIPods is UpdateAPIPods once the objects the pods refer to were read.
func (k *Kubelet) handAPIPods(ctx context.Context, regular []*v1.Pod, mirrors map[string]*v1.Pod) {
	if k.recorder != nil {
		k.recorder.APIPods(regular)
	}
	if k.statusSync != nil {
		k.statusSync.setMirrors(mirrors)
	}
	_ = k.merger.Push(ctx, kubetypes.ApiserverSource, regular)
}

// splitAPIPods separates the pods to run from the mirror pods (by namespace/name), the API's
// view of static pods, which upstream's pod manager also keeps apart. The pods are the
// informer's, annotated as the merger's own (annotateAPIPod): read only.
func splitAPIPods(pods []*v1.Pod) (regular []*v1.Pod, mirrors map[string]*v1.Pod) {
	regular = make([]*v1.Pod, 0, len(pods))
	mirrors = map[string]*v1.Pod{}
	for _, p := range pods {
		if cluster.IsMirrorPod(p) {
			mirrors[p.Namespace+"/"+p.Name] = p
			continue
		}
		regular = append(regular, p)
	}
	return regular, mirrors
}

// apiStatusSync is the status manager's API side (cluster mode): a loop that writes every
// changed status of the API server's pods to pods/status, at once after a change and every
// StatusSyncPeriod, and deletes a pod being deleted once its containers are gone.
type apiStatusSync struct {
	k        *Kubelet
	sync     *cluster.PodStatusSync
	mirror   *cluster.MirrorPods
	periodic *runner.Periodic
	version  atomic.Uint64 // the status manager's version the last run synced

	mirrors map[string]*v1.Pod // the API's mirror pods, by namespace/name (from the pod watch)

	// settled are the API pods whose status, as the status manager has it now (a stored
	// status is replaced, never changed, so its pointer names it), the API server has, with
	// the pod object it was synced for: a run skips them. A thousand nodes' periodic runs
	// otherwise copied and compared every pod's status every 10 s.
	settled map[types.UID]settledStatus
}

type settledStatus struct {
	status *v1.PodStatus
	pod    *v1.Pod
}

// setMirrors records the API's mirror pods and syncs them at once.
func (s *apiStatusSync) setMirrors(m map[string]*v1.Pod) {
	s.mirrors = m
	s.periodic.Trigger()
}

func (s *apiStatusSync) mirrorOf(fullName string) *v1.Pod {
	return s.mirrors[fullName]
}

func (k *Kubelet) buildStatusSync() {
	if k.kubeClient == nil {
		return
	}
	s := &apiStatusSync{k: k, sync: cluster.NewPodStatusSync(k.kubeClient, k.apiCaller),
		mirror: cluster.NewMirrorPods(cluster.NewNodeAPI(k.kubeClient, k.apiCaller, 0))}
	s.periodic = runner.NewPeriodic(k.clock, runner.Every(cluster.StatusSyncPeriod), s.run)
	k.statusSync = s
}

// statusChanged is the status manager's change hook: the API sync runs at once, and the
// status watcher (simulate's timeline) sees the status.
func (k *Kubelet) statusChanged(pod *v1.Pod, status *v1.PodStatus) {
	if k.statusSync != nil {
		k.statusSync.periodic.Trigger()
	}
	if k.statusWatcher != nil {
		k.statusWatcher(pod, status)
	}
}

// WatchPodStatuses has f called with every pod status the status manager stores, at the
// moment it does, from the loop being stepped (so f must not block nor call back into the
// node). One watcher: simulate's timeline.
func (k *Kubelet) WatchPodStatuses(f func(pod *v1.Pod, status *v1.PodStatus)) {
	k.statusWatcher = f
}

func (s *apiStatusSync) loop() runner.Loop {
	return s.periodic.Loop("api-status-sync")
}

// run syncs the API server's pods' statuses, and the static pods' mirror pods and their
// statuses.
func (s *apiStatusSync) run(ctx context.Context) {
	k := s.k
	s.version.Store(k.status.Version())
	type item struct {
		pod    *v1.Pod
		status *v1.PodStatus // the stored one: never changed, only replaced
	}
	var items, statics []item
	k.status.Each(func(pod *v1.Pod, status *v1.PodStatus) {
		switch {
		case pod.Annotations[kubetypes.ConfigSourceAnnotationKey] == kubetypes.ApiserverSource:
			items = append(items, item{pod, status})
		case kubetypes.IsStaticPod(pod):
			statics = append(statics, item{pod, status})
		}
	})
	known := map[types.UID]bool{}
	wanted := map[string]bool{} // the static pods the node has: their mirrors stay
	for _, p := range k.pods.GetPods() {
		if kubetypes.IsStaticPod(p) {
			wanted[p.Namespace+"/"+p.Name] = true
		}
	}
	for _, it := range statics {
		static, ok := k.pods.GetPodByUID(it.pod.UID)
		if !ok {
			continue // removed: its mirror goes below
		}
		if mirror := s.syncMirror(ctx, static); mirror != nil {
			known[mirror.UID] = true
			// The static pod's status goes to its mirror (upstream translates the UID).
			s.sync.Sync(ctx, mirror, *it.status.DeepCopy(), false)
		}
	}
	s.deleteOrphanedMirrors(ctx, wanted)
	for _, it := range items {
		known[it.pod.UID] = true
		// The newest copy of the pod (it may carry a deletion timestamp by now).
		pod := it.pod
		if p, ok := k.pods.GetPodByUID(pod.UID); ok {
			pod = p
		}
		if st, ok := s.settled[pod.UID]; ok && st.status == it.status && st.pod == pod {
			continue
		}
		if s.sync.Sync(ctx, pod, *it.status.DeepCopy(), s.canBeDeleted(pod, *it.status)) {
			if s.settled == nil {
				s.settled = map[types.UID]settledStatus{}
			}
			s.settled[pod.UID] = settledStatus{status: it.status, pod: pod}
		} else {
			delete(s.settled, pod.UID)
		}
	}
	for uid := range s.settled {
		if !known[uid] {
			delete(s.settled, uid)
		}
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

// syncMirror makes sure the static pod has its current mirror pod in the API (upstream
// SyncPod's mirror pod part): a mirror of an older version of the pod is deleted, a missing
// one created (once the node is registered). It returns the mirror when one is current.
func (s *apiStatusSync) syncMirror(ctx context.Context, static *v1.Pod) *v1.Pod {
	logger := klog.FromContext(ctx)
	mirror := s.mirrorOf(static.Namespace + "/" + static.Name)
	if mirror != nil && cluster.MirrorMatches(mirror, static) {
		return mirror
	}
	if mirror != nil {
		// Outdated, or being deleted by someone: remove it now; the next sync creates the
		// current one (upstream SyncPod).
		logger.Info("Trying to delete pod", "pod", klog.KObj(mirror), "podUID", mirror.UID)
		if err := s.mirror.Delete(ctx, mirror); err != nil && ctx.Err() == nil {
			logger.Error(err, "Failed deleting mirror pod", "pod", klog.KObj(mirror))
		}
		return nil
	}
	node := s.k.nodeStatus.GetNode()
	if mirror == nil && node != nil && !s.k.podWorkers.IsPodTerminationRequested(static.UID) {
		logger.V(4).Info("Creating a mirror pod for static pod", "pod", klog.KObj(static))
		if err := s.mirror.Create(ctx, static, node); err != nil && ctx.Err() == nil {
			logger.Error(err, "Failed creating a mirror pod for", "pod", klog.KObj(static))
		}
	}
	return nil
}

// deleteOrphanedMirrors deletes the mirror pods of static pods that are gone (upstream
// HandlePodCleanups' deleteOrphanedMirrorPods).
func (s *apiStatusSync) deleteOrphanedMirrors(ctx context.Context, wanted map[string]bool) {
	var orphans []*v1.Pod
	for name, m := range s.mirrors {
		if !wanted[name] {
			orphans = append(orphans, m)
		}
	}
	for _, m := range orphans {
		if err := s.mirror.Delete(ctx, m); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Failed deleting orphaned mirror pod", "pod", klog.KObj(m))
		}
	}
}

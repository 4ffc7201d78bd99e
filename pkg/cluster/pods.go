package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/task"
)

// WatchPods is the kubelet's API server pod source (upstream NewSourceApiserver): it lists
// and watches the pods bound to nodeName and hands push the whole set after every change,
// until ctx ends. prepare, unless nil, is given each pod as decoded, before anything else
// sees it, with the version of it the watch held before (nil if none), and may change it:
// the kubelet sets its annotations there, as upstream's config does on the informer's pods.
// Run it in a goroutine of its own.
func WatchPods(ctx context.Context, client kubernetes.Interface, nodeName string, prepare func(pod, old *v1.Pod), push func(pods []*v1.Pod)) {
	selector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	lw := selectedListWatch(selector,
		func(opts metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		},
		func(opts metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
		})
	send := func(objs []interface{}) {
		pods := make([]*v1.Pod, 0, len(objs))
		for _, o := range objs {
			// The store's own pods, as upstream's apiserver source sends them: nothing
			// changes a pod once decoded (the merger copies what it annotates), and a copy
			// of every pod of the node at every event was a second copy of each held.
			if p, ok := o.(*v1.Pod); ok {
				pods = append(pods, p)
			}
		}
		push(pods)
	}
	store := podStore{Store: cache.NewUndeltaStore(send, cache.MetaNamespaceKeyFunc), prepare: prepare}
	// The wrapper tells the reflector whether client can stream its list (WatchListClient,
	// on in client-go v0.37): a real API server can, the fake clientset of tests cannot.
	r := cache.NewReflector(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Pod{}, store, 0)
	klog.FromContext(ctx).V(2).Info("Watching apiserver", "node", nodeName)
	// RunWithContext, not Run(ctx.Done()): Run wraps the channel in a context of its own
	// type, and every context derived from one of those waits on it in a goroutine of the
	// context package's, one per watch (3,000 at 1,000 nodes).
	r.RunWithContext(ctx)
}

// podStore is the pod watch's store: it drops each pod's managed fields before keeping it,
// as the scheduler's and controller manager's informers do (TransformStripManagedFields),
// and has prepare change it. The kubelet never reads managed fields, and they were a tenth
// of what a node's pods held (25 MB at 10,000 pods). The kubelet's own store keeps them
// (see docs/differences.md).
type podStore struct {
	cache.Store
	prepare func(pod, old *v1.Pod)
}

// Transformer has a watch-list's temporary store drop them too (cache.TransformingStore).
func (s podStore) Transformer() cache.TransformFunc { return stripManagedFields }

func (s podStore) Add(obj any) error    { return s.Store.Add(s.prepared(obj)) }
func (s podStore) Update(obj any) error { return s.Store.Update(s.prepared(obj)) }

func (s podStore) Replace(list []any, resourceVersion string) error {
	for i := range list {
		list[i] = s.prepared(list[i])
	}
	return s.Store.Replace(list, resourceVersion)
}

// prepared is obj, freshly decoded and the reflector's own, as the node keeps it.
func (s podStore) prepared(obj any) any {
	obj, _ = stripManagedFields(obj)
	pod, ok := obj.(*v1.Pod)
	if !ok || s.prepare == nil {
		return obj
	}
	var old *v1.Pod
	if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
		if o, exists, err := s.Store.GetByKey(key); err == nil && exists {
			old, _ = o.(*v1.Pod)
		}
	}
	s.prepare(pod, old)
	return obj
}

// stripManagedFields drops obj's managed fields in place: the reflector's objects are
// freshly decoded and its own.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// PodStatusSync writes the kubelet's pod statuses to the API server (upstream's status
// manager syncPod): each changed status as a strategic merge patch of pods/status, and a pod
// being deleted whose containers are all gone is deleted with grace 0 and its UID as
// precondition.
type PodStatusSync struct {
	client kubernetes.Interface
	caller *Caller
	sent   map[types.UID]v1.PodStatus // the last status each pod's patch carried
	gone   map[types.UID]bool         // pods deleted from the API (or found gone): nothing more to send
}

// NewPodStatusSync returns the status sync of client.
func NewPodStatusSync(client kubernetes.Interface, caller *Caller) *PodStatusSync {
	return &PodStatusSync{client: client, caller: caller, sent: map[types.UID]v1.PodStatus{}, gone: map[types.UID]bool{}}
}

// Sync patches status when it differs from what was last sent for the pod, then deletes the
// pod when canDelete. Errors are logged as upstream's; the next sync retries. It returns
// whether the API server has it all (status sent, deletion done or not asked): the same
// status and pod need no other Sync until they change.
func (s *PodStatusSync) Sync(ctx context.Context, pod *v1.Pod, status v1.PodStatus, canDelete bool) bool {
	logger := klog.FromContext(ctx)
	if s.gone[pod.UID] {
		return true // deleted: the pod leaves the kubelet next; patching it again would fail
	}
	old, ok := s.sent[pod.UID]
	if !ok {
		old = pod.Status
	}
	if !statusEqual(old, status) {
		patch, err := podStatusPatch(old, status)
		if err == nil {
			err = task.Await(ctx, s.caller.Go(func(cctx context.Context) error {
				_, err := s.client.CoreV1().Pods(pod.Namespace).Patch(cctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
				return err
			}))
		}
		if apierrors.IsNotFound(err) {
			// As upstream's status manager: the pod is gone from the API; its status is
			// dropped when the pod leaves the kubelet. Nothing to retry.
			logger.V(3).Info("Pod does not exist on the server", "pod", klog.KObj(pod), "podUID", pod.UID)
			s.gone[pod.UID] = true
			delete(s.sent, pod.UID)
			return true
		}
		if err != nil {
			if ctx.Err() == nil {
				logger.Info("Failed to update status for pod", "pod", klog.KObj(pod), "err", err)
			}
			return false
		}
		s.sent[pod.UID] = *status.DeepCopy()
		logger.V(3).Info("Patch status for pod", "pod", klog.KObj(pod), "podUID", pod.UID, "patch", string(patch))
	}
	if !canDelete {
		return true
	}
	zero := int64(0)
	uid := pod.UID
	err := task.Await(ctx, s.caller.Go(func(cctx context.Context) error {
		return s.client.CoreV1().Pods(pod.Namespace).Delete(cctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	}))
	if err != nil && !apierrors.IsNotFound(err) { // not found: deleted already
		if ctx.Err() == nil {
			logger.Info("Failed to delete status for pod", "pod", klog.KObj(pod), "err", err)
		}
		return false
	}
	logger.V(3).Info("Pod fully terminated and removed from etcd", "pod", klog.KObj(pod))
	delete(s.sent, pod.UID)
	s.gone[pod.UID] = true
	return true
}

// Forget drops what was sent for pods no longer known.
func (s *PodStatusSync) Forget(keep func(types.UID) bool) {
	for uid := range s.sent {
		if !keep(uid) {
			delete(s.sent, uid)
		}
	}
	for uid := range s.gone {
		if !keep(uid) {
			delete(s.gone, uid)
		}
	}
}

func statusEqual(a, b v1.PodStatus) bool { return apiequality.Semantic.DeepEqual(a, b) }

func podStatusPatch(old, status v1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(&v1.Pod{Status: old})
	if err != nil {
		return nil, fmt.Errorf("marshal pod status: %w", err)
	}
	newData, err := json.Marshal(&v1.Pod{Status: status})
	if err != nil {
		return nil, fmt.Errorf("marshal pod status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("create pod status patch: %w", err)
	}
	return patch, nil
}

// StatusSyncPeriod is upstream's status manager batch period: every status is checked at
// least this often.
const StatusSyncPeriod = 10 * time.Second

// selectedListWatch is a list and watch of the objects selector (a field selector) picks,
// through list and watch: the kubelet's informers and reflectors watch its pods, its Node
// and each object its pods use so.
func selectedListWatch(selector string, list func(metav1.ListOptions) (runtime.Object, error), watchFn func(metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return list(opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return watchFn(opts)
		},
	}
}

// ObjectListWatch is the list and watch of one object by name (field selector
// metadata.name), as the kubelet's watch-based ConfigMap and Secret managers make it.
func ObjectListWatch(name string, list func(metav1.ListOptions) (runtime.Object, error), watchFn func(metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return selectedListWatch(fields.OneTermEqualSelector(metav1.ObjectNameField, name).String(), list, watchFn)
}

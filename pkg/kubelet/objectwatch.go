package kubelet

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// The Watch strategy (configMapAndSecretChangeDetectionStrategy's default), as the
// kubelet's watch-based managers keep ConfigMaps and Secrets
// (pkg/kubelet/util/manager/watch_based_manager.go): each one the node's pods refer to has
// a list and watch of its own (field selector metadata.name, in its namespace) from when a
// pod that refers to it arrives until no pod does. A read waits up to a second for the
// watch's first list and serves the watch's copy, so a pod's syncs ask the API server
// nothing and a change reaches its volumes at the next sync. A watch not read for five sync
// periods (an object only a container's environment used) stops until it is read again;
// the watch of an immutable object stops for good.
//
// The watches run in the daemon only (watchObjects, from Run): simulate's in-process API
// and the tests' fake clients keep the Cache strategy.

// syncWait is how long a read waits for its watch's first list (upstream polls for a
// second).
const syncWait = time.Second

// watchKey names a watched object.
type watchKey struct {
	resource  string // "configmaps" or "secrets"
	namespace string
	name      string
}

// objectWatch is the watch of one object. Its fields are apiObjects' (under its mutex),
// but the store, which the watch's goroutine fills.
type objectWatch struct {
	store     cache.Store
	synced    chan struct{}      // closed at the watch's first list
	cancel    context.CancelFunc // stops the watch; nil when stopped
	lastRead  time.Time
	immutable bool
	observed  string // the resourceVersion last told to apiObjects.observe
}

// syncStore closes synced at the first Replace (the reflector's list).
type syncStore struct {
	cache.Store
	synced chan struct{}
}

func (s *syncStore) Replace(list []any, rv string) error {
	err := s.Store.Replace(list, rv)
	select {
	case <-s.synced:
	default:
		close(s.synced)
	}
	return err
}

// watchObjects switches the apiObjects to the configured strategy's watches, if it is
// Watch (they end with the API caller), and the Services and RuntimeClasses to their
// informers' watches, which runServiceWatch and runRuntimeClassWatch run.
func (o *apiObjects) watchObjects() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.watching = o.client != nil && o.strategy == watchStrategy
	o.watchClusterLocked()
}

// ensureWatchLocked returns the object's watch, started if it is new or was stopped for
// being idle. Called with o.mu held.
func (o *apiObjects) ensureWatchLocked(key watchKey) *objectWatch {
	w := o.watches[key]
	if w == nil {
		// Read now as far as idling goes: the pod that refers to it reads it next.
		w = &objectWatch{store: cache.NewStore(cache.MetaNamespaceKeyFunc), lastRead: o.clock.Now()}
		o.watches[key] = w
	}
	if w.cancel == nil && !w.immutable {
		o.startWatchLocked(key, w)
	}
	return w
}

// startWatchLocked runs the object's reflector on the API caller until the watch is
// stopped or the caller is.
func (o *apiObjects) startWatchLocked(key watchKey, w *objectWatch) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.synced = make(chan struct{})
	store := &syncStore{Store: w.store, synced: w.synced}
	client, ns := o.client, key.namespace
	var lw *cache.ListWatch
	var example runtime.Object
	switch key.resource {
	case "configmaps":
		example = &v1.ConfigMap{}
		lw = cluster.ObjectListWatch(key.name,
			func(opts metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().ConfigMaps(ns).List(ctx, opts)
			},
			func(opts metav1.ListOptions) (watch.Interface, error) {
				return client.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
			})
	default:
		example = &v1.Secret{}
		lw = cluster.ObjectListWatch(key.name,
			func(opts metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().Secrets(ns).List(ctx, opts)
			},
			func(opts metav1.ListOptions) (watch.Interface, error) {
				return client.CoreV1().Secrets(ns).Watch(ctx, opts)
			})
	}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), example, store, cache.ReflectorOptions{
		Name: fmt.Sprintf("object-%q/%q", key.namespace, key.name),
		// As upstream: a watch lives 30 to 60 minutes before it is made again.
		MinWatchTimeout: 30 * time.Minute,
	})
	o.caller.Go(func(cctx context.Context) error {
		stop := context.AfterFunc(cctx, cancel) // the caller stops: so does the watch
		defer stop()
		r.RunWithContext(ctx) // not Run(ctx.Done()): see cluster.WatchPods
		return nil
	})
}

// stopWatchLocked stops the object's watch; its store keeps the last copy.
func stopWatchLocked(w *objectWatch) {
	if w.cancel != nil {
		w.cancel()
		w.cancel = nil
	}
}

// watchedObject reads the object from its watch (started now if need be), waiting up to
// syncWait for the watch's first list.
func watchedObject[T runtime.Object](ctx context.Context, o *apiObjects, resource schema.GroupResource, key watchKey, immutable func(T) bool) (T, error) {
	var zero T
	now := o.clock.Now()
	o.mu.Lock()
	w := o.ensureWatchLocked(key)
	w.lastRead = now
	synced, store := w.synced, w.store
	o.mu.Unlock()
	select {
	case <-synced:
	default:
		err := task.Await(ctx, o.caller.Go(func(cctx context.Context) error {
			cctx, cancel := context.WithTimeout(cctx, syncWait)
			defer cancel()
			select {
			case <-synced:
				return nil
			case <-cctx.Done():
				return fmt.Errorf("failed to sync %s cache: timed out waiting for the condition", resource.String())
			}
		}))
		if err != nil {
			return zero, err
		}
	}
	obj, ok, err := store.GetByKey(key.namespace + "/" + key.name)
	switch {
	case err != nil:
		return zero, err
	case !ok:
		return zero, apierrors.NewNotFound(resource, key.name)
	}
	t := obj.(T)
	rv := any(t).(metav1.Object).GetResourceVersion()
	o.mu.Lock()
	if immutable(t) && !w.immutable {
		w.immutable = true
		stopWatchLocked(w)
		klog.FromContext(ctx).V(4).Info("Stopped watching for changes - object is immutable", "obj", klog.KRef(key.namespace, key.name))
	}
	observe := o.observe != nil && w.observed != rv
	w.observed = rv
	o.mu.Unlock()
	if observe {
		o.observe(t, now)
	}
	return t, nil
}

// pruneWatchesLocked stops and forgets the watches of objects no pod refers to any more,
// and stops those not read for maxIdle (read again, they start again). Called with o.mu
// held.
func (o *apiObjects) pruneWatchesLocked(configMaps, secrets map[string]bool, now time.Time) {
	for key, w := range o.watches {
		refs := secrets
		if key.resource == "configmaps" {
			refs = configMaps
		}
		if !refs[key.namespace+"/"+key.name] {
			stopWatchLocked(w)
			delete(o.watches, key)
			continue
		}
		if w.cancel == nil {
			continue
		}
		select {
		case <-w.synced: // as upstream, a watch still listing is not stopped
			if now.Sub(w.lastRead) > o.maxIdle {
				stopWatchLocked(w)
			}
		default:
		}
	}
}

func configMapImmutable(c *v1.ConfigMap) bool { return c.Immutable != nil && *c.Immutable }
func secretImmutable(s *v1.Secret) bool       { return s.Immutable != nil && *s.Immutable }

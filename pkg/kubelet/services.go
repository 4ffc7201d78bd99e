package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The kinds the kubelet watches whole, from the node's start, each list and watch made
// again every 5 to 10 minutes as client-go's reflector does:
//   - every Service with a cluster IP (the Service informer; field selector
//     spec.clusterIP!=None, as headless ones give no links, kubernetes#122394), for the
//     pods' service links (FOO_SERVICE_HOST, ...) and the cluster DNS. Until its first
//     list is in, a container of a pod that is not static cannot be given its
//     environment: it waits with CreateContainerConfigError and upstream's message;
//   - every RuntimeClass (the RuntimeClass manager's informer), for the handler a pod's
//     sandbox runs with.
//
// The watches run in the daemon only. Simulate's in-process API and the tests' fake
// clients list a namespace's Services when a container starts (serviceListTTL) and read a
// RuntimeClass as a ConfigMap is read instead.

// errServicesNotSynced is upstream's error for a container's environment asked before the
// Service informer's first list.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// serviceListTTL is how long a namespace's Service list is used where the Services are
// listed, not watched: a container started right after its Service was created gets its
// links, as the informer's would.
const serviceListTTL = time.Second

// clusterWatch is an informer's store of a kind the kubelet watches whole (the Services,
// the RuntimeClasses), and when it first listed.
type clusterWatch struct {
	store  cache.Indexer
	synced chan struct{} // closed at the first list
}

func newClusterWatch() *clusterWatch {
	return &clusterWatch{
		store:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		synced: make(chan struct{}),
	}
}

// run runs the informer's reflector of lw until ctx ends. Its watch lives 5 to 10 minutes
// before it is made again, client-go's default.
func (w *clusterWatch) run(ctx context.Context, name string, client kubernetes.Interface, lw *cache.ListWatch, example runtime.Object) {
	store := &syncStore{Store: w.store, synced: w.synced}
	cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), example, store,
		cache.ReflectorOptions{Name: name}).RunWithContext(ctx) // not Run(ctx.Done()): see cluster.WatchPods
}

// hasSynced reports whether the watch's first list is in.
func (w *clusterWatch) hasSynced() bool {
	select {
	case <-w.synced:
		return true
	default:
		return false
	}
}

// byNamespace returns the watched Services of a namespace.
func (w *clusterWatch) byNamespace(namespace string) []*v1.Service {
	objs, _ := w.store.ByIndex(cache.NamespaceIndex, namespace) // the index exists
	return asServices(objs)
}

// all returns every watched Service, and false before the first list.
func (w *clusterWatch) all() ([]*v1.Service, bool) {
	if !w.hasSynced() {
		return nil, false
	}
	return asServices(w.store.List()), true
}

// asServices are a Service store's objects.
func asServices(objs []any) []*v1.Service {
	out := make([]*v1.Service, len(objs))
	for i, o := range objs {
		out[i] = o.(*v1.Service)
	}
	return out
}

// watchClusterLocked makes the Services and the RuntimeClasses come from watches, which
// runServiceWatch and runRuntimeClassWatch then run. Called with o.mu held.
func (o *apiObjects) watchClusterLocked() {
	if o.client == nil || o.serviceWatch != nil {
		return
	}
	o.serviceWatch, o.runtimeClassWatch = newClusterWatch(), newClusterWatch()
}

// runServiceWatch runs the Service informer's reflector until ctx ends; without it
// (standalone, simulate) it returns at once.
func (o *apiObjects) runServiceWatch(ctx context.Context) {
	o.mu.Lock()
	w := o.serviceWatch
	o.mu.Unlock()
	if w == nil {
		return
	}
	client := o.client
	selector := fields.OneTermNotEqualSelector("spec.clusterIP", v1.ClusterIPNone).String()
	w.run(ctx, "services", client, &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return client.CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return client.CoreV1().Services(metav1.NamespaceAll).Watch(ctx, opts)
		},
	}, &v1.Service{})
}

// runRuntimeClassWatch runs the RuntimeClass manager's informer until ctx ends, as
// runServiceWatch.
func (o *apiObjects) runRuntimeClassWatch(ctx context.Context) {
	o.mu.Lock()
	w := o.runtimeClassWatch
	o.mu.Unlock()
	if w == nil {
		return
	}
	client := o.client
	w.run(ctx, "runtimeclasses", client, &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			return client.NodeV1().RuntimeClasses().List(ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			return client.NodeV1().RuntimeClasses().Watch(ctx, opts)
		},
	}, &nodev1.RuntimeClass{})
}

// Services returns the Services of a namespace (for the pods' service links): the
// watch's, or, where the Services are not watched, as listed at most serviceListTTL ago.
// static says the pod is a static pod, which upstream gives the links the informer has,
// synced or not.
func (o *apiObjects) Services(ctx context.Context, namespace string, static bool) ([]*v1.Service, error) {
	if o.client == nil {
		return nil, errStandalone
	}
	o.mu.Lock()
	w := o.serviceWatch
	o.mu.Unlock()
	if w != nil {
		if !static && !w.hasSynced() {
			return nil, errServicesNotSynced
		}
		return w.byNamespace(namespace), nil
	}
	list, err := getObjectTTL(ctx, o, o.serviceLists, schema.GroupResource{Resource: "services"}, namespace, "", serviceListTTL, func(ctx context.Context, _ metav1.GetOptions) (*v1.ServiceList, error) {
		// From the API server's cache, as the kubelet's Service informer reads.
		return o.client.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	})
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Service, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// watchedServices returns every watched Service, and false when the Services are not
// watched or the watch has not listed yet (the cluster DNS lists them itself then).
func (o *apiObjects) watchedServices() ([]*v1.Service, bool) {
	if o == nil {
		return nil, false
	}
	o.mu.Lock()
	w := o.serviceWatch
	o.mu.Unlock()
	if w == nil {
		return nil, false
	}
	return w.all()
}

// runtimeClassResource is how the RuntimeClass lister names the kind in a NotFound error:
// runtimeclass.node.k8s.io "x" not found.
var runtimeClassResource = schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclass"}

// RuntimeHandler is upstream's LookupRuntimeHandler: the handler of the pod's RuntimeClass
// ("" for none, and standalone, where the kubelet has no RuntimeClass manager), or a
// NotFound error for a RuntimeClass the API server does not have. The daemon reads the
// RuntimeClass informer's store (empty until its first list, as upstream's lister); where
// the RuntimeClasses are not watched (simulate), each is read as a ConfigMap is.
func (o *apiObjects) RuntimeHandler(ctx context.Context, runtimeClassName *string) (string, error) {
	if runtimeClassName == nil || *runtimeClassName == "" || o.client == nil {
		return "", nil
	}
	name := *runtimeClassName
	o.mu.Lock()
	w := o.runtimeClassWatch
	o.mu.Unlock()
	if w != nil {
		obj, ok, err := w.store.GetByKey(name)
		switch {
		case err != nil:
			return "", fmt.Errorf("failed to lookup RuntimeClass %s: %v", name, err)
		case !ok:
			return "", apierrors.NewNotFound(runtimeClassResource, name)
		}
		return obj.(*nodev1.RuntimeClass).Handler, nil
	}
	rc, err := getObjectTTL(ctx, o, o.runtimeClasses, runtimeClassResource, "", name, o.ttl, func(ctx context.Context, opts metav1.GetOptions) (*nodev1.RuntimeClass, error) {
		return o.client.NodeV1().RuntimeClasses().Get(ctx, name, opts)
	})
	if err != nil {
		return "", err
	}
	return rc.Handler, nil
}

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/task"
)

// NodeAPI is the node's API client: registration, status patches and the lease, as the
// kubelet's kubelet_node_status.go and node lease controller make them. Each method runs the
// call through the Caller and waits for it as a task (or blocks, outside one).
type NodeAPI struct {
	client kubernetes.Interface
	// registerClient registers the node (the kubelet's main client, not its heartbeat one),
	// bounded by the API server's own timeout (1 min), not by timeout.
	registerClient kubernetes.Interface
	caller         *Caller
	// timeout bounds each call, as the kubelet's heartbeat client's (the smaller of
	// nodeStatusUpdateFrequency and the lease duration): a call the API server never
	// answers would otherwise hold the node's status updates or lease renewals for good.
	timeout time.Duration
	// latestLease is the lease as the last write returned (UpdateLease renews it).
	latestLease atomic.Pointer[coordinationv1.Lease]
	// watched is the node watch's store (WatchNode), nil when none runs.
	watched atomic.Pointer[cache.Store]
}

// NewNodeAPI returns the node's API client; timeout (0: none) bounds each call but the
// registration.
func NewNodeAPI(client kubernetes.Interface, caller *Caller, timeout time.Duration) *NodeAPI {
	return &NodeAPI{client: client, registerClient: client, caller: caller, timeout: timeout}
}

// RegisterWith makes the registration go through client, as the kubelet registers with its
// main client and heartbeats with another. Returns a.
func (a *NodeAPI) RegisterWith(client kubernetes.Interface) *NodeAPI {
	a.registerClient = client
	return a
}

// call runs fn through the caller, bounded by the timeout, and waits for it.
func (a *NodeAPI) call(ctx context.Context, fn func(ctx context.Context) error) error {
	return a.callWithin(ctx, a.timeout, fn)
}

// callWithin runs fn through the caller, bounded by timeout (0: the API server's own), and
// waits for it.
func (a *NodeAPI) callWithin(ctx context.Context, timeout time.Duration, fn func(ctx context.Context) error) error {
	return task.Await(ctx, a.caller.Go(func(cctx context.Context) error {
		if timeout > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(cctx, timeout)
			defer cancel()
		}
		return fn(cctx)
	}))
}

// RegisterNode creates the node, or reconciles the one that exists (upstream
// tryRegisterWithAPIServer: an existing node keeps its identity and gets the kubelet's
// default labels back). It returns the node as the API server has it.
//
// It is not bounded by the heartbeat timeout: the kubelet registers with its main client.
// A thousand nodes registering again after a restart, with their pods' containers started
// again, make etcd take 10 s and more per write; a registration abandoned at 10 s was asked
// again, and again, and the node never got back.
func (a *NodeAPI) RegisterNode(ctx context.Context, node *v1.Node) (*v1.Node, error) {
	var got *v1.Node
	err := a.callWithin(ctx, 0, func(cctx context.Context) error {
		created, err := a.registerClient.CoreV1().Nodes().Create(cctx, node, metav1.CreateOptions{})
		if err == nil {
			got = created
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		existing, err := a.registerClient.CoreV1().Nodes().Get(cctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !reconcileLabels(existing, node) {
			got = existing
			return nil
		}
		got, err = a.registerClient.CoreV1().Nodes().Update(cctx, existing, metav1.UpdateOptions{})
		return err
	})
	return got, err
}

// reconcileLabels puts the kubelet's labels back on an existing node (upstream
// updateDefaultLabels) and reports whether it changed.
func reconcileLabels(existing, initial *v1.Node) bool {
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for k, v := range initial.Labels {
		if existing.Labels[k] != v {
			existing.Labels[k] = v
			changed = true
		}
	}
	return changed
}

// GetNode reads the node as the kubelet reads it before each status update: the first try
// (fromCache) from its node watch (WatchNode; without one, from the API server's watch
// cache, resourceVersion 0), a retry from etcd. A node the watch has not seen is an error
// but not NotFound, as the kubelet's lister miss only sends it to its next try. The node of
// the watch is its own, read only, as a lister's: the caller copies what it changes (the
// node status manager copies it once for its setters, as upstream's updateNode does).
func (a *NodeAPI) GetNode(ctx context.Context, name string, fromCache bool) (*v1.Node, error) {
	if s := a.watched.Load(); fromCache && s != nil {
		obj, ok, err := (*s).GetByKey(name)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, fmt.Errorf("node %q not found", name)
		}
		return obj.(*v1.Node), nil
	}
	var got *v1.Node
	var opts metav1.GetOptions
	if fromCache {
		opts.ResourceVersion = "0"
	}
	err := a.call(ctx, func(cctx context.Context) error {
		var err error
		got, err = a.client.CoreV1().Nodes().Get(cctx, name, opts)
		return err
	})
	return got, err
}

// WatchNode keeps the node as the API server has it, as the kubelet's node informer does: a
// list and watch of the one Node (field selector metadata.name) through client, the
// kubelet's main client. GetNode's first try reads it from then on, so a status update that
// changes nothing asks the API server nothing. Until ctx ends; run it in a goroutine of its
// own.
func (a *NodeAPI) WatchNode(ctx context.Context, client kubernetes.Interface, name string) {
	lw := ObjectListWatch(name,
		func(opts metav1.ListOptions) (runtime.Object, error) { return client.CoreV1().Nodes().List(ctx, opts) },
		func(opts metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Nodes().Watch(ctx, opts)
		})
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	a.watched.Store(&store)
	defer a.watched.Store(nil)
	cache.NewReflector(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Node{}, store, 0).RunWithContext(ctx) // see WatchPods
}

// PatchNodeStatus sends the difference between the node as last reported and now as a
// strategic merge patch of nodes/status (upstream nodeutil.PatchNodeStatus).
func (a *NodeAPI) PatchNodeStatus(ctx context.Context, old, node *v1.Node) (*v1.Node, error) {
	patch, err := statusPatch(old, node)
	if err != nil {
		return nil, err
	}
	var got *v1.Node
	err = a.call(ctx, func(cctx context.Context) error {
		var err error
		got, err = a.client.CoreV1().Nodes().Patch(cctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
	return got, err
}

func statusPatch(old, node *v1.Node) ([]byte, error) {
	oldData, err := json.Marshal(&v1.Node{Status: old.Status})
	if err != nil {
		return nil, fmt.Errorf("marshal node status: %w", err)
	}
	newData, err := json.Marshal(&v1.Node{Status: node.Status})
	if err != nil {
		return nil, fmt.Errorf("marshal node status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("create node status patch: %w", err)
	}
	return patch, nil
}

// UpdateLease writes the lease: created when it does not exist, else renewed. As upstream's
// lease controller, a renewal updates the lease the last write returned, with no GET first
// (it halves what the leases cost the API server); a conflict, or no lease known yet, reads
// it first (or creates it). Each request has the heartbeat timeout to itself, as each of the
// heartbeat client's has: a read and a renewal under one deadline, each slow but in time
// for its own, failed together, and after a restart against a busy API server a node's
// lease went unrenewed for minutes while its status patches went through.
func (a *NodeAPI) UpdateLease(ctx context.Context, lease *coordinationv1.Lease) error {
	leases := a.client.CoordinationV1().Leases(lease.Namespace)
	renew := func(base *coordinationv1.Lease) error {
		next := base.DeepCopy()
		next.Spec = lease.Spec
		if len(next.OwnerReferences) == 0 {
			next.OwnerReferences = lease.OwnerReferences
		}
		return a.call(ctx, func(cctx context.Context) error {
			got, err := leases.Update(cctx, next, metav1.UpdateOptions{})
			if err == nil {
				a.latestLease.Store(got)
			}
			return err
		})
	}
	if latest := a.latestLease.Load(); latest != nil && latest.Name == lease.Name {
		err := renew(latest)
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
		a.latestLease.Store(nil)
	}
	var existing *coordinationv1.Lease
	err := a.call(ctx, func(cctx context.Context) error {
		var err error
		existing, err = leases.Get(cctx, lease.Name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		fresh := lease.DeepCopy()
		fresh.ResourceVersion, fresh.UID, fresh.CreationTimestamp = "", "", metav1.Time{}
		return a.call(ctx, func(cctx context.Context) error {
			created, err := leases.Create(cctx, fresh, metav1.CreateOptions{})
			if err == nil {
				a.latestLease.Store(created)
				klog.FromContext(cctx).V(2).Info("Created node lease in the API server", "lease", klog.KObj(lease))
			}
			return err
		})
	}
	if err != nil {
		return err
	}
	return renew(existing)
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/eventually"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func newAPI(t *testing.T, objects ...runtime.Object) (*NodeAPI, *fake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset(objects...)
	caller := NewCaller(context.Background())
	t.Cleanup(caller.Stop)
	return NewNodeAPI(client, caller, 10*time.Second), client
}

func node(labels map[string]string, ready v1.ConditionStatus) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels},
		Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, Reason: "KubeletReady"}},
			Capacity:   v1.ResourceList{v1.ResourcePods: *resourcePods(110)},
		},
	}
}

func TestRegisterNode(t *testing.T) {
	labels := map[string]string{v1.LabelHostname: "n1", v1.LabelOSStable: "linux"}
	t.Run("creates it", func(t *testing.T) {
		api, client := newAPI(t)
		got, err := api.RegisterNode(context.Background(), node(labels, v1.ConditionTrue))
		if err != nil || got.Name != "n1" {
			t.Fatalf("RegisterNode = %v, %v", got, err)
		}
		stored, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
		if err != nil || stored.Labels[v1.LabelHostname] != "n1" {
			t.Fatalf("stored node %v, %v", stored, err)
		}
	})
	t.Run("reconciles an existing node's labels, keeping its identity", func(t *testing.T) {
		existing := node(map[string]string{v1.LabelHostname: "old", "team": "a"}, v1.ConditionFalse)
		existing.UID = "uid-existing"
		api, client := newAPI(t, existing)
		got, err := api.RegisterNode(context.Background(), node(labels, v1.ConditionTrue))
		if err != nil || got.UID != "uid-existing" {
			t.Fatalf("RegisterNode = %v, %v; want the existing node", got, err)
		}
		stored, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
		if stored.Labels[v1.LabelHostname] != "n1" || stored.Labels[v1.LabelOSStable] != "linux" || stored.Labels["team"] != "a" {
			t.Errorf("labels %v, want the kubelet's back and the others kept", stored.Labels)
		}
	})
	t.Run("an API error is returned", func(t *testing.T) {
		api, client := newAPI(t)
		client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("connection refused")
		})
		if _, err := api.RegisterNode(context.Background(), node(labels, v1.ConditionTrue)); err == nil {
			t.Fatal("RegisterNode succeeded against a failing API server")
		}
	})
}

// TestGetNode: the node is read from the API server's cache (resourceVersion 0); a deleted
// node is a NotFound error and an API server that does not answer another error, so the
// status manager can tell "register again" from "try later".
func TestGetNode(t *testing.T) {
	tests := []struct {
		name         string
		objects      []runtime.Object
		fail         error
		wantNotFound bool
		wantErr      bool
	}{
		{name: "registered", objects: []runtime.Object{node(nil, v1.ConditionTrue)}},
		{name: "deleted", wantNotFound: true, wantErr: true},
		{name: "API server down: an error, not a deleted node", fail: errors.New("connection refused"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, client := newAPI(t, tt.objects...)
			if tt.fail != nil {
				client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tt.fail })
			}
			got, err := api.GetNode(context.Background(), "n1", true)
			if (err != nil) != tt.wantErr || apierrors.IsNotFound(err) != tt.wantNotFound {
				t.Fatalf("GetNode error = %v; want error %v, NotFound %v", err, tt.wantErr, tt.wantNotFound)
			}
			if err == nil && (got == nil || got.Name != "n1") {
				t.Errorf("GetNode = %+v, want node n1", got)
			}
		})
	}
}

func TestPatchNodeStatus(t *testing.T) {
	old := node(nil, v1.ConditionTrue)
	api, client := newAPI(t, old)
	updated := old.DeepCopy()
	updated.Status.Conditions[0] = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "PLEG is not healthy"}
	if _, err := api.PatchNodeStatus(context.Background(), old, updated); err != nil {
		t.Fatal(err)
	}
	var patch k8stesting.PatchAction
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patch = p
		}
	}
	if patch == nil || patch.GetSubresource() != "status" || string(patch.GetPatchType()) != "application/strategic-merge-patch+json" {
		t.Fatalf("patch action %+v, want a strategic merge patch of nodes/status", patch)
	}
	stored, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if c := stored.Status.Conditions[0]; c.Status != v1.ConditionFalse || c.Message != "PLEG is not healthy" {
		t.Errorf("stored Ready = %+v, want the patched condition", c)
	}
}

func TestUpdateLease(t *testing.T) {
	api, client := newAPI(t)
	renew := metav1.NewMicroTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease", ResourceVersion: "7", UID: "local",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "uid-n1"}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &renew},
	}
	if err := api.UpdateLease(context.Background(), lease); err != nil {
		t.Fatalf("first UpdateLease (create): %v", err)
	}
	later := metav1.NewMicroTime(renew.Add(10 * time.Second))
	lease.Spec.RenewTime = &later
	if err := api.UpdateLease(context.Background(), lease); err != nil {
		t.Fatalf("second UpdateLease (renew): %v", err)
	}
	stored, err := client.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !stored.Spec.RenewTime.Equal(&later) || len(stored.OwnerReferences) != 1 || stored.OwnerReferences[0].UID != "uid-n1" {
		t.Errorf("stored lease %+v, want the renewed time and the node as owner", stored)
	}

	// A renewal updates the lease the last write returned, without reading it first; a
	// conflict (someone else wrote it) reads it and updates that.
	conflicts := 1
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), "n1", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	client.ClearActions()
	for i := 0; i < 3; i++ {
		next := metav1.NewMicroTime(later.Add(time.Duration(i+1) * 10 * time.Second))
		lease.Spec.RenewTime = &next
		if err := api.UpdateLease(context.Background(), lease); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if got, want := strings.Join(verbs, " "), "update get update update update"; got != want {
		t.Errorf("renewals made %q, want %q (a conflict, a read, then updates only)", got, want)
	}
}

func TestCallerStopEndsCalls(t *testing.T) {
	caller := NewCaller(context.Background())
	started := make(chan struct{})
	op := caller.Go(func(ctx context.Context) error { close(started); <-ctx.Done(); return ctx.Err() })
	<-started
	caller.Stop()
	if !op.Done() || !errors.Is(op.Err(), context.Canceled) {
		t.Fatalf("a call in flight after Stop: done %t, err %v", op.Done(), op.Err())
	}
	if op := caller.Go(func(context.Context) error { return nil }); !op.Done() || op.Err() == nil {
		t.Error("a call after Stop ran")
	}
}

func resourcePods(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// TestNodeAPICallsTimeOut: a status or lease call the API server never answers ends at the
// heartbeat timeout, as the kubelet's heartbeat client's, instead of holding the node's
// updates for good. The API server is a loopback HTTP server that never answers.
func TestNodeAPICallsTimeOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	api := NewNodeAPI(client, Inline(), 50*time.Millisecond)
	done := make(chan error, 1)
	go func() { _, err := api.GetNode(context.Background(), "n1", true); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("GetNode from an API server that never answers succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("GetNode from an API server that never answers did not end at its timeout")
	}
}

// TestLeaseRequestsTimeOutOnTheirOwn: a renewal with no lease known (the first after a
// start) reads the lease and then updates it, each request with the whole heartbeat timeout
// to itself, as each of the kubelet's heartbeat client's requests has: the update's deadline
// is its own, later than the read's, not the one the read had. The API server is a loopback
// HTTP server.
func TestLeaseRequestsTimeOutOnTheirOwn(t *testing.T) {
	const timeout = 10 * time.Second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"n1","namespace":"kube-node-lease","resourceVersion":"7"}}`)
	}))
	defer srv.Close()
	var mu sync.Mutex
	deadlines := map[string]time.Time{} // by method
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if d, ok := r.Context().Deadline(); ok {
				mu.Lock()
				deadlines[r.Method] = d
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	api := NewNodeAPI(client, Inline(), timeout)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}}
	if err := api.UpdateLease(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	get, put := deadlines[http.MethodGet], deadlines[http.MethodPut]
	if get.IsZero() || put.IsZero() || !put.After(get) {
		t.Errorf("deadlines: GET %v, PUT %v; want each request bounded, the PUT by a deadline of its own, after the GET's", get, put)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRegistrationWithTheMainClient: as the kubelet, the node registers with its main
// client and no deadline of the heartbeat's (the API server's own applies), and its status
// and lease calls go through the heartbeat client, bounded by the heartbeat timeout. After
// a restart of a thousand nodes, etcd took longer than 10 s per write; registrations
// abandoned at 10 s never got through.
func TestRegistrationWithTheMainClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","uid":"u1"}}`))
	}))
	defer srv.Close()
	type seen struct {
		client      string
		hasDeadline bool
	}
	var mu sync.Mutex
	calls := map[string]seen{}
	newClient := func(name string) kubernetes.Interface {
		c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				_, ok := r.Context().Deadline()
				mu.Lock()
				calls[r.Method+" "+r.URL.Path] = seen{name, ok}
				mu.Unlock()
				return rt.RoundTrip(r)
			})
		}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	api := NewNodeAPI(newClient("heartbeat"), Inline(), 10*time.Second).RegisterWith(newClient("main"))
	ctx := context.Background()
	if _, err := api.RegisterNode(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.GetNode(ctx, "n1", true); err != nil {
		t.Fatal(err)
	}
	want := map[string]seen{"POST /api/v1/nodes": {"main", false}, "GET /api/v1/nodes/n1": {"heartbeat", true}}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("calls %+v, want %+v", calls, want)
	}
}

// TestWatchNode: with the node watch running, the status update's first read is the
// watch's copy (no GET reaches the API server) and follows the node's changes; a node it
// has not seen is an error that is not NotFound (the next try asks the API server, which
// decides whether the node is gone); a retry still reads the API server.
func TestWatchNode(t *testing.T) {
	api, client := newAPI(t, node(nil, v1.ConditionTrue))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); api.WatchNode(ctx, client, "n1") }()
	t.Cleanup(func() { cancel(); <-done })

	gets := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "nodes" {
				n++
			}
		}
		return n
	}
	eventually.True(t, "the watch started", func() bool { return api.watched.Load() != nil })
	eventually.Within(t, 10*time.Second, "the watch has the node", func() (bool, string) {
		got, err := api.GetNode(ctx, "n1", true)
		return err == nil && got.Name == "n1", fmt.Sprint(err)
	})
	labelled := node(map[string]string{"team": "b"}, v1.ConditionTrue)
	if _, err := client.CoreV1().Nodes().Update(ctx, labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 10*time.Second, "the watch sees the change", func() (bool, string) {
		got, err := api.GetNode(ctx, "n1", true)
		if err != nil {
			return false, err.Error()
		}
		return got.Labels["team"] == "b", fmt.Sprint(got.Labels)
	})
	if n := gets(); n != 0 {
		t.Errorf("%d GETs of nodes reached the API server, want 0", n)
	}
	got, _ := api.GetNode(ctx, "n1", true)
	if again, _ := api.GetNode(ctx, "n1", true); again != got {
		t.Errorf("a read of the watch copied its node: read only, as a lister's, it is shared")
	}

	_, err := api.GetNode(ctx, "other", true)
	if err == nil || apierrors.IsNotFound(err) || err.Error() != `node "other" not found` {
		t.Errorf("a node the watch has not seen: %v, want an error that is not NotFound", err)
	}
	if _, err := api.GetNode(ctx, "n1", false); err != nil || gets() != 1 {
		t.Errorf("a retry: %v, %d GETs, want one to the API server", err, gets())
	}
}

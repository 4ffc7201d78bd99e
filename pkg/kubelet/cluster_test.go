package kubelet

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/runner"
)

// newClusterHarness is a harness whose kubelet joined a (fake, in-memory) cluster.
func newClusterHarness(t *testing.T, client *fake.Clientset) *harness {
	t.Helper()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir)
	clk := clocktesting.NewFakeClock(epoch)
	k, err := New(Config{Config: cfg, Gate: gate, Clock: clk, KubeClient: client, InlineAPICalls: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(k.Stop)
	ctx := klog.NewContext(context.Background(), klog.Background())
	k.Start(ctx)
	return &harness{t: t, ctx: ctx, clk: clk, k: k, dir: dir, sim: runner.NewSim(clk, k.Loops())}
}

// TestClusterNodeRegistrationStatusAndLease: in cluster mode the node is registered with the
// kubelet's labels, its status reaches nodes/status (Ready with the conditions), and the
// lease in kube-node-lease is renewed with the node as its owner.
func TestClusterNodeRegistrationStatusAndLease(t *testing.T) {
	client := fake.NewSimpleClientset()
	h := newClusterHarness(t, client)
	h.round(time.Second)
	// kube-state-metrics reads a cluster's nodes itself; the kubelet does not double them.
	if code, body := get(t, h.k.Server().Handler(), "/metrics/state"); code != http.StatusNotFound || !strings.Contains(body, "standalone mode only") {
		t.Errorf("GET /metrics/state in cluster mode = %d %s, want 404 saying it is standalone only", code, body)
	}
	ctx := context.Background()
	node, err := client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node not registered: %v", err)
	}
	for _, l := range []string{v1.LabelHostname, v1.LabelOSStable, v1.LabelArchStable, "beta.kubernetes.io/os"} {
		if node.Labels[l] == "" {
			t.Errorf("registered node lacks label %s: %v", l, node.Labels)
		}
	}
	ready := func(n *v1.Node) v1.ConditionStatus {
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status
			}
		}
		return ""
	}
	if ready(node) != v1.ConditionTrue || node.Status.Capacity.Pods().Value() == 0 {
		t.Fatalf("node status in the API: Ready %q capacity %v", ready(node), node.Status.Capacity)
	}
	lease, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease not created: %v", err)
	}
	first := lease.Spec.RenewTime.Time
	h.round(30 * time.Second)
	lease, _ = client.CoordinationV1().Leases("kube-node-lease").Get(ctx, testNode, metav1.GetOptions{})
	if !lease.Spec.RenewTime.After(first) {
		t.Errorf("lease renew time %v, not renewed after %v", lease.Spec.RenewTime, first)
	}
	if len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].Kind != "Node" || lease.OwnerReferences[0].UID != node.UID {
		t.Errorf("lease owners %+v, want the node (uid %s)", lease.OwnerReferences, node.UID)
	}
}

// TestClusterAPIServerDown: while the API server fails, the node is not registered and the
// static pods run anyway; once it answers, the node registers at the next status update.
func TestClusterAPIServerDown(t *testing.T) {
	client := fake.NewSimpleClientset()
	down := true
	client.PrependReactor("*", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	h := newClusterHarness(t, client)
	h.write("web.yaml", podManifest("web", "nginx", ""))
	h.until(10, "web Running without an API server", func() bool { return h.phase("web-"+testNode) == v1.PodRunning }, h.describe)
	if _, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", testNode); err == nil {
		t.Fatal("node registered while the API server failed")
	}
	down = false
	h.round(15 * time.Second) // the next node status update
	if _, err := client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{}); err != nil {
		t.Fatalf("node not registered once the API server answers: %v", err)
	}
}

// TestClusterNodeDeletedRegistersAgain: when the Node is deleted from the API server, the
// next status update finds it gone and the node registers again, Ready, with its lease
// owned by the new Node; the pods keep running throughout.
func TestClusterNodeDeletedRegistersAgain(t *testing.T) {
	client := fake.NewSimpleClientset()
	h := newClusterHarness(t, client)
	h.write("web.yaml", podManifest("web", "nginx", ""))
	h.until(10, "web Running", func() bool { return h.phase("web-"+testNode) == v1.PodRunning }, h.describe)
	ctx := context.Background()
	if _, err := client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{}); err != nil {
		t.Fatalf("node not registered: %v", err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, testNode, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.round(11 * time.Second) // the next status update (every 10s) finds it gone
	again, err := client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node not registered again after it was deleted: %v", err)
	}
	if again.Status.Capacity.Pods().Value() == 0 {
		t.Errorf("re-registered node has no status: %+v", again.Status)
	}
	if h.phase("web-"+testNode) != v1.PodRunning || h.runningContainers() != 1 {
		t.Errorf("web is %s with %d running containers, want it running throughout", h.phase("web-"+testNode), h.runningContainers())
	}
	h.round(15 * time.Second)
	lease, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, testNode, metav1.GetOptions{})
	if err != nil || len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].Name != testNode {
		t.Errorf("lease %+v, %v; want it owned by the node", lease, err)
	}
}

// TestClusterNodeStatusPutRightAfterNodeController: the node lifecycle controller marks a
// node whose heartbeats it missed Ready=Unknown (an API server outage does that). The
// kubelet starts each update from the node the API server has, so its next status update
// (10s) sees the change and reports Ready again, though its own view never changed and
// the next unconditional report is 5 minutes away.
func TestClusterNodeStatusPutRightAfterNodeController(t *testing.T) {
	client := fake.NewSimpleClientset()
	h := newClusterHarness(t, client)
	h.round(time.Second)
	ctx := context.Background()
	node, err := client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node not registered: %v", err)
	}
	for i, c := range node.Status.Conditions {
		// What the node lifecycle controller writes (upstream's tryUpdateNodeHealth).
		if c.Type == v1.NodeReady {
			node.Status.Conditions[i].Status = v1.ConditionUnknown
			node.Status.Conditions[i].Reason = "NodeStatusUnknown"
			node.Status.Conditions[i].Message = "Kubelet stopped posting node status."
		}
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.round(11 * time.Second)
	node, err = client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady && (c.Status != v1.ConditionTrue || c.Reason != "KubeletReady") {
			t.Errorf("Ready in the API one update after the node controller's Unknown: %s %s %q, want True KubeletReady", c.Status, c.Reason, c.Message)
		}
	}
}

// TestClusterNodeLabelsAndTaints: --node-labels and --register-with-taints are on the node
// the kubelet registers.
func TestClusterNodeLabelsAndTaints(t *testing.T) {
	client := fake.NewSimpleClientset()
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, "--node-labels=team=a,node.kubernetes.io/pool=edge", "--register-with-taints=dedicated=sim:NoSchedule")
	clk := clocktesting.NewFakeClock(epoch)
	k, err := New(Config{Config: cfg, Gate: gate, Clock: clk, KubeClient: client, InlineAPICalls: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	ctx := klog.NewContext(context.Background(), klog.Background())
	k.Start(ctx)
	h := &harness{t: t, ctx: ctx, clk: clk, k: k, dir: dir, sim: runner.NewSim(clk, k.Loops())}
	h.round(time.Second)
	node, err := client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["team"] != "a" || node.Labels["node.kubernetes.io/pool"] != "edge" || node.Labels[v1.LabelHostname] != testNode {
		t.Errorf("labels %v", node.Labels)
	}
	if want := []v1.Taint{{Key: "dedicated", Value: "sim", Effect: v1.TaintEffectNoSchedule}}; !reflect.DeepEqual(node.Spec.Taints, want) {
		t.Errorf("taints %v, want %v", node.Spec.Taints, want)
	}
}

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/childproc"
	"github.com/minikubelet/minikubelet/internal/eventually"
)

// buildDaemon builds the minikubelet binary once per test run, unless MINIKUBELET_BIN
// names one already built (make conformance builds it before entering a network namespace
// that cannot reach the module proxy).
func buildDaemon(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("MINIKUBELET_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "minikubelet")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/minikubelet")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func nodeReady(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// TestNodesJoinTheCluster: two daemons with the least privilege of a kubelet (a
// system:node:<name> user under the Node authorizer and NodeRestriction) register as two
// Ready nodes with the kubelet's labels, and renew their leases; a daemon that stops goes
// Unknown once the node controller's grace period passes.
func TestNodesJoinTheCluster(t *testing.T) {
	nodes := []string{"mk-node-1", "mk-node-2"}
	cp := startControlPlane(t, nodes...)
	bin := buildDaemon(t)
	ctx := context.Background()

	stops := map[string]func(){}
	ports := map[string]int{}
	manifests := map[string]string{}
	for i, name := range nodes {
		dir := t.TempDir()
		manifests[name] = dir
		kubeconfig := cp.kubeconfig(t, name, fmt.Sprintf("%s-%d", nodeToken, i))
		ports[name] = freePort(t)
		cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--hostname-override", name,
			"--read-only-port", strconv.Itoa(ports[name]), "--port", strconv.Itoa(freePort(t)), "--pod-manifest-path", dir,
			"--enable-debugging-handlers", "--relist-threshold", "10s")
		logFile, err := os.Create(filepath.Join(cp.dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		childproc.DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		stop := func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		stops[name] = stop
		t.Cleanup(func() {
			stop()
			logFile.Close()
			if t.Failed() {
				data, _ := os.ReadFile(logFile.Name())
				if len(data) > 4000 {
					data = data[len(data)-4000:]
				}
				t.Logf("--- %s log (tail) ---\n%s", name, data)
			}
		})
	}

	for _, name := range nodes {
		eventually.Within(t, 60*time.Second, name+" Ready in the API", func() (bool, string) {
			n, err := cp.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return nodeReady(n) == v1.ConditionTrue, fmt.Sprintf("Ready=%q", nodeReady(n))
		})
		n, _ := cp.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if n.Labels[v1.LabelHostname] != name || n.Labels[v1.LabelOSStable] == "" || n.Status.Capacity.Pods().Value() == 0 {
			t.Errorf("%s: labels %v capacity %v", name, n.Labels, n.Status.Capacity)
		}
		var first time.Time
		eventually.Within(t, 30*time.Second, name+" lease created", func() (bool, string) {
			l, err := cp.admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			first = l.Spec.RenewTime.Time
			return true, ""
		})
		eventually.Within(t, 30*time.Second, name+" lease renewed", func() (bool, string) {
			l, err := cp.admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return l.Spec.RenewTime.After(first) && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == n.UID,
				fmt.Sprintf("renewTime %v owners %v", l.Spec.RenewTime, l.OwnerReferences)
		})
	}

	// A pod bound to the first node runs there: Running and Ready in the API with its pod IP;
	// deleting it completes (the kubelet stops it, then deletes it with grace 0).
	podLifecycle(t, cp, nodes[0])
	// A static pod gets its mirror pod, recreated when deleted, gone with the manifest.
	mirrorPod(t, cp, nodes[0], manifests[nodes[0]])
	// A Deployment's pods are scheduled to the nodes and run; deleting it removes them.
	deployment(t, cp, nodes)
	// A hung runtime turns the node NotReady with the PLEG message; the node lifecycle
	// controller taints it; clearing the fault brings it back and lifts the taint.
	notReadyTaint(t, cp, nodes[0], ports[nodes[0]])

	// A node whose kubelet stops goes Unknown after the node monitor grace period.
	stops[nodes[1]]()
	eventually.Within(t, 90*time.Second, nodes[1]+" Unknown", func() (bool, string) {
		n, err := cp.admin.CoreV1().Nodes().Get(ctx, nodes[1], metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(n) == v1.ConditionUnknown, fmt.Sprintf("Ready=%q", nodeReady(n))
	})
	if n, _ := cp.admin.CoreV1().Nodes().Get(ctx, nodes[0], metav1.GetOptions{}); nodeReady(n) != v1.ConditionTrue {
		t.Errorf("%s Ready=%q while the other node went away, want True", nodes[0], nodeReady(n))
	}
}

func podLifecycle(t *testing.T, cp *controlPlane, node string) {
	t.Helper()
	ctx := context.Background()
	eventually.Within(t, 60*time.Second, "the default service account", func() (bool, string) {
		_, err := cp.admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{
			Name: "nginx", Image: "nginx:1.25",
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}, PeriodSeconds: 1},
		}}},
	}
	if _, err := cp.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	eventually.Within(t, 60*time.Second, "the pod Running and Ready in the API", func() (bool, string) {
		p, err := cp.admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				ready = true
			}
		}
		return p.Status.Phase == v1.PodRunning && ready && p.Status.PodIP != "" && len(p.Status.ContainerStatuses) == 1 &&
				p.Status.ContainerStatuses[0].ContainerID != "",
			fmt.Sprintf("phase %s ready %t podIP %q containers %+v", p.Status.Phase, ready, p.Status.PodIP, p.Status.ContainerStatuses)
	})
	// The kubelet's events reached the API, from the kubelet on that node.
	eventually.Within(t, 30*time.Second, "the pod's Started event in the API", func() (bool, string) {
		evs, err := cp.admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "Started" && e.Source.Component == "kubelet" && e.Source.Host == node && e.Message == "Started container nginx" {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Sprint(seen)
	})
	if err := cp.admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	eventually.Within(t, 60*time.Second, "the pod gone from the API", func() (bool, string) {
		p, err := cp.admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s deletionTimestamp %v", p.Status.Phase, p.DeletionTimestamp)
	})
}

func deployment(t *testing.T, cp *controlPlane, nodes []string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.25"}}},
			},
		},
	}
	if _, err := cp.admin.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	eventually.Within(t, 90*time.Second, "3 replicas Running and Ready on the minikubelet nodes", func() (bool, string) {
		pods, err := cp.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		var state []string
		for _, p := range pods.Items {
			onOurs := false
			for _, n := range nodes {
				onOurs = onOurs || p.Spec.NodeName == n
			}
			r := false
			for _, c := range p.Status.Conditions {
				r = r || (c.Type == v1.PodReady && c.Status == v1.ConditionTrue)
			}
			if onOurs && p.Status.Phase == v1.PodRunning && r && p.Status.PodIP != "" {
				ready++
			}
			state = append(state, fmt.Sprintf("%s@%s:%s/%t/%s", p.Name, p.Spec.NodeName, p.Status.Phase, r, p.Status.PodIP))
		}
		return ready == 3, fmt.Sprint(state)
	})
	fg := metav1.DeletePropagationForeground
	if err := cp.admin.AppsV1().Deployments("default").Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatalf("delete deployment: %v", err)
	}
	eventually.Within(t, 90*time.Second, "the deployment's pods gone", func() (bool, string) {
		pods, err := cp.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items))
	})
}

func hasNotReadyTaint(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1.TaintNodeNotReady {
			return true
		}
	}
	return false
}

func notReadyTaint(t *testing.T, cp *controlPlane, node string, port int) {
	t.Helper()
	ctx := context.Background()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	resp, err := http.Post(base+"/debug/faults", "application/json", strings.NewReader(`{"method":"ListPodSandbox","type":"hang"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("inject fault: %s", resp.Status)
	}
	eventually.Within(t, 90*time.Second, node+" NotReady with the PLEG message, tainted", func() (bool, string) {
		n, err := cp.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var msg string
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				msg = c.Message
			}
		}
		return nodeReady(n) == v1.ConditionFalse && strings.Contains(msg, "PLEG is not healthy") && hasNotReadyTaint(n),
			fmt.Sprintf("Ready=%q %q taints %v", nodeReady(n), msg, n.Spec.Taints)
	})
	req, _ := http.NewRequest(http.MethodDelete, base+"/debug/faults", nil)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	eventually.Within(t, 90*time.Second, node+" Ready again, untainted", func() (bool, string) {
		n, err := cp.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(n) == v1.ConditionTrue && !hasNotReadyTaint(n), fmt.Sprintf("Ready=%q taints %v", nodeReady(n), n.Spec.Taints)
	})
}

func mirrorPod(t *testing.T, cp *controlPlane, node, dir string) {
	t.Helper()
	ctx := context.Background()
	manifest := filepath.Join(dir, "static-web.yaml")
	writeFile(t, manifest, "apiVersion: v1\nkind: Pod\nmetadata: {name: static-web, namespace: default}\nspec:\n  containers: [{name: nginx, image: nginx:1.25}]\n")
	name := "static-web-" + node
	var uid string
	eventually.Within(t, 60*time.Second, "the mirror pod Running in the API, owned by the node", func() (bool, string) {
		p, err := cp.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		uid = string(p.UID)
		owned := len(p.OwnerReferences) == 1 && p.OwnerReferences[0].Kind == "Node" && p.OwnerReferences[0].Name == node
		_, mirror := p.Annotations["kubernetes.io/config.mirror"]
		return p.Status.Phase == v1.PodRunning && owned && mirror && p.Spec.NodeName == node,
			fmt.Sprintf("phase %s owners %v annotations %v", p.Status.Phase, p.OwnerReferences, p.Annotations)
	})
	if err := cp.admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete mirror pod: %v", err)
	}
	eventually.Within(t, 60*time.Second, "the mirror pod recreated", func() (bool, string) {
		p, err := cp.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return string(p.UID) != uid && p.DeletionTimestamp == nil, fmt.Sprintf("uid %s deleting %v", p.UID, p.DeletionTimestamp)
	})
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 60*time.Second, "the mirror pod gone with the manifest", func() (bool, string) {
		_, err := cp.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

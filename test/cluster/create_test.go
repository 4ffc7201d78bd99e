package cluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// clusterCmd runs `minikubelet cluster ARGS --root root`, with the control plane's binaries
// found through --bin-dir for create.
func clusterCmd(t testing.TB, bin, root string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"cluster"}, args...), "--root", root)...)
	cmd.Dir = t.TempDir()
	if env != nil {
		cmd.Env = env
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestClusterCreate: `minikubelet cluster create --nodes 3` starts a control plane and three
// nodes with distinct system:node identities that run a Deployment; `cluster list` shows it;
// `cluster delete` leaves no process and no port behind. A missing program, a busy port and
// a name in use are refused with what to do.
func TestClusterCreate(t *testing.T) {
	bin := buildDaemon(t)
	binDir := binDir(t)
	root := t.TempDir()
	ctx := context.Background()
	t.Cleanup(func() { _, _ = clusterCmd(t, bin, root, nil, "delete", "--name", "ci") })

	start := time.Now()
	out, err := clusterCmd(t, bin, root, nil, "create", "--nodes", "3", "--name", "ci", "--bin-dir", binDir)
	if err != nil {
		t.Fatalf("cluster create: %v\n%s", err, out)
	}
	t.Logf("cluster create --nodes 3 took %v:\n%s", time.Since(start).Round(100*time.Millisecond), out)
	kubeconfig := filepath.Join(root, "ci", "kubeconfig")
	if !strings.Contains(out, "export KUBECONFIG="+kubeconfig) || !strings.Contains(out, "3 node(s) Ready") {
		t.Errorf("create's output lacks the kubeconfig or the nodes' readiness:\n%s", out)
	}
	rest, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(rest)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The nodes are kubelets of the control plane's release (a build without the release's
	// stamp says v0.0.0-master; the nodes are then the newest).
	cpVersion, err := exec.Command(filepath.Join(binDir, "kube-apiserver"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	wantKubelet := strings.TrimPrefix(strings.TrimSpace(string(cpVersion)), "Kubernetes ")
	stamped := !strings.HasPrefix(wantKubelet, "v0.")
	if !stamped {
		wantKubelet = "v1.37.2"
	}
	if !strings.Contains(out, "nodes: kubelet "+wantKubelet) {
		t.Errorf("create's output does not say the nodes are kubelet %s:\n%s", wantKubelet, out)
	}
	subjects := map[string]bool{}
	for _, n := range nodes.Items {
		if n.Status.NodeInfo.KubeletVersion != wantKubelet {
			t.Errorf("node %s is kubelet %s, want %s", n.Name, n.Status.NodeInfo.KubeletVersion, wantKubelet)
		}
		if nodeReady(&n) != v1.ConditionTrue {
			t.Errorf("node %s is not Ready", n.Name)
		}
		data, err := os.ReadFile(filepath.Join(root, "ci", "nodes", n.Name, "kubelet-client-current.pem"))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if cert.Subject.CommonName != "system:node:"+n.Name {
			t.Errorf("node %s's client certificate is for %s", n.Name, cert.Subject.CommonName)
		}
		subjects[cert.Subject.CommonName] = true
	}
	if len(nodes.Items) != 3 || len(subjects) != 3 {
		t.Fatalf("%d nodes with %d distinct identities, want 3 and 3", len(nodes.Items), len(subjects))
	}

	// A Deployment of six runs on them.
	eventually.Within(t, 60*time.Second, "the default service account", func() (bool, string) {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	labels := map[string]string{"app": "web"}
	if _, err := admin.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](6), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 90*time.Second, "6 web pods Running", func() (bool, string) {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == v1.PodRunning {
				running++
			}
		}
		return running == 6, fmt.Sprintf("%d of %d Running", running, len(pods.Items))
	})

	if out, err := clusterCmd(t, bin, root, nil, "list"); err != nil || !strings.Contains(out, "5/5 running") {
		t.Errorf("cluster list: %v\n%s", err, out)
	}
	if out, err := clusterCmd(t, bin, root, nil, "create", "--name", "ci", "--bin-dir", binDir); err == nil || !strings.Contains(out, `cluster "ci" exists`) {
		t.Errorf("a second create of the same name: %v\n%s", err, out)
	}

	// Delete: no process of the cluster, no port.
	if out, err := clusterCmd(t, bin, root, nil, "delete", "--name", "ci"); err != nil {
		t.Fatalf("cluster delete: %v\n%s", err, out)
	}
	if out, _ := exec.Command("pgrep", "-f", filepath.Join(root, "ci")).Output(); len(out) > 0 {
		t.Errorf("processes of the cluster still run after delete: %s", out)
	}
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(rest.Host, "https://"), time.Second); err == nil {
		conn.Close()
		t.Errorf("the API server's port %s still answers after delete", rest.Host)
	}
	if _, err := os.Stat(filepath.Join(root, "ci")); !os.IsNotExist(err) {
		t.Errorf("the cluster's state directory is still there: %v", err)
	}

	// What to install, what to free.
	if out, err := clusterCmd(t, bin, root, []string{"PATH=/nonexistent"}, "create", "--name", "nobins"); err == nil ||
		!strings.Contains(out, "etcd-server") || !strings.Contains(out, "make controlplane") {
		t.Errorf("create without the programs: %v\n%s", err, out)
	}
	if stamped {
		out, err := clusterCmd(t, bin, root, nil, "create", "--name", "older", "--bin-dir", binDir, "--kubernetes-version", "v1.36")
		if err == nil || !strings.Contains(out, "kube-apiserver of Kubernetes 1.36: not in") || !strings.Contains(out, "make controlplane KUBE_VERSION=v1.36") {
			t.Errorf("create of a release not built: %v\n%s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if out, err := clusterCmd(t, bin, root, nil, "create", "--name", "busy", "--bin-dir", binDir, "--api-port", port); err == nil ||
		!strings.Contains(out, "127.0.0.1:"+port+" is in use") {
		t.Errorf("create on a busy port: %v\n%s", err, out)
	}
}

// BenchmarkClusterCreate measures `cluster create --nodes 3` to all nodes Ready, and the
// delete after it (issue target: under 60 s once the binaries exist).
func BenchmarkClusterCreate(b *testing.B) {
	bin := buildDaemon(b)
	binDir := binDir(b)
	root := b.TempDir()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := clusterCmd(b, bin, root, nil, "create", "--nodes", "3", "--name", "bench", "--bin-dir", binDir)
		created := time.Since(start)
		if err != nil {
			b.Fatalf("cluster create: %v\n%s", err, out)
		}
		start = time.Now()
		if out, err := clusterCmd(b, bin, root, nil, "delete", "--name", "bench"); err != nil {
			b.Fatalf("cluster delete: %v\n%s", err, out)
		}
		b.ReportMetric(created.Seconds(), "create-s")
		b.ReportMetric(time.Since(start).Seconds(), "delete-s")
	}
}

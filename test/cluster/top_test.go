package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// metricsServerBuild is how the cluster tests' metrics-server is built (tools/metricsserver).
const metricsServerBuild = "cd tools/metricsserver && go build -o ../../_output/bin/ sigs.k8s.io/metrics-server/cmd/metrics-server"

// TestKubectlTop: a real metrics-server, run as a process on loopback and registered with
// the aggregation layer as v1beta1.metrics.k8s.io, scrapes a minikubelet node's
// /metrics/resource on its secure port (authenticated by token, authorized by
// SubjectAccessReview like any kubelet client), and kubectl top node and kubectl top pod
// show what the node reports: a pod whose behaviour uses 250m CPU and 128Mi memory.
func TestKubectlTop(t *testing.T) {
	const node = "mk-top"
	bin := binDir(t)
	metricsServer := filepath.Join(bin, "metrics-server")
	if _, err := os.Stat(metricsServer); err != nil {
		t.Skipf("metrics-server not built (%s): %v", metricsServerBuild, err)
	}
	if _, err := os.Stat(filepath.Join(bin, "kubectl")); err != nil {
		t.Skipf("kubectl not built (make controlplane): %v", err)
	}
	cp := startControlPlane(t, node)
	daemon := buildDaemon(t)
	ctx := context.Background()

	// RBAC as metrics-server's manifests set it: read the nodes' metrics, list and watch
	// nodes and pods, and delegate authentication and authorization to the API server.
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "metrics-server"}}
	mustCreate(t, func() error {
		_, err := cp.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "system:metrics-server"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
				{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
			},
		}, metav1.CreateOptions{})
		return err
	})
	for binding, role := range map[string]string{"system:metrics-server": "system:metrics-server", "metrics-server:system:auth-delegator": "system:auth-delegator"} {
		mustCreate(t, func() error {
			_, err := cp.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: binding},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   subjects,
			}, metav1.CreateOptions{})
			return err
		})
	}
	mustCreate(t, func() error {
		_, err := cp.admin.RbacV1().RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "metrics-server-auth-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
			Subjects:   subjects,
		}, metav1.CreateOptions{})
		return err
	})

	// The node, with the kubelet's secure settings.
	startSecureNode(t, cp, daemon, node)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "usage", Namespace: "default", Annotations: map[string]string{
			"minikubelet.io/behavior.app": "cpuUsage=250m,memoryUsage=128Mi",
		}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", Image: "nginx:1.25"}}},
	}
	if _, err := cp.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	eventually.Within(t, 60*time.Second, "the pod Running", func() (bool, string) {
		p, err := cp.admin.CoreV1().Pods("default").Get(ctx, "usage", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodRunning, string(p.Status.Phase)
	})

	// metrics-server outside the cluster: its kubeconfig for the API server and the kubelets
	// (the token of user metrics-server), the node's InternalIP and status port, the
	// kubelet's self-signed serving certificate. The shortest resolution it accepts is 10s,
	// with a kubelet request timeout under 9/10 of it.
	msPort := freePort(t)
	kubeconfig := cp.kubeconfig(t, "metrics-server", metricsServerToken)
	start(t, cp.dir, "metrics-server", metricsServer,
		"--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(msPort), "--cert-dir", t.TempDir(),
		"--kubelet-insecure-tls", "--kubelet-preferred-address-types", "InternalIP", "--kubelet-use-node-status-port",
		"--metric-resolution", "10s", "--kubelet-request-timeout", "5s", "-v", "2")

	// The aggregation layer reaches metrics-server through a Service. Endpoints may not hold
	// loopback addresses (and the aggregator's endpoint routing takes nothing else), so it
	// is an ExternalName Service naming 127.0.0.1: without --enable-aggregator-routing the
	// aggregator dials https://<externalName>:<the APIService's port>.
	mustCreate(t, func() error {
		_, err := cp.admin.CoreV1().Services("kube-system").Create(ctx, &v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "metrics-server"},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "127.0.0.1",
				Ports: []v1.ServicePort{{Name: "https", Port: int32(msPort)}}},
		}, metav1.CreateOptions{})
		return err
	})
	dyn, err := dynamic.NewForConfig(cp.restConfig(adminToken))
	if err != nil {
		t.Fatal(err)
	}
	apiServices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	mustCreate(t, func() error {
		_, err := apiServices.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "apiregistration.k8s.io/v1",
			"kind":       "APIService",
			"metadata":   map[string]interface{}{"name": "v1beta1.metrics.k8s.io"},
			"spec": map[string]interface{}{
				"group": "metrics.k8s.io", "version": "v1beta1",
				"service":               map[string]interface{}{"namespace": "kube-system", "name": "metrics-server", "port": int64(msPort)},
				"insecureSkipTLSVerify": true,
				"groupPriorityMinimum":  int64(100), "versionPriority": int64(100),
			},
		}}, metav1.CreateOptions{})
		return err
	})
	eventually.Within(t, 60*time.Second, "v1beta1.metrics.k8s.io Available", func() (bool, string) {
		s, err := apiServices.Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conditions, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
		for _, c := range conditions {
			if c, ok := c.(map[string]interface{}); ok && c["type"] == "Available" {
				return c["status"] == "True", fmt.Sprintf("%v", c)
			}
		}
		return false, fmt.Sprintf("conditions %v", conditions)
	})

	// kubectl top node: the node with its CPU and memory.
	var out string
	eventually.Within(t, 90*time.Second, "kubectl top node lists "+node, func() (bool, string) {
		out, err = kubectl(t, cp, "", "top", "node", "--no-headers")
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		f := strings.Fields(out)
		return len(f) == 5 && f[0] == node && strings.HasSuffix(f[1], "m") && strings.HasSuffix(f[2], "%") &&
			strings.HasSuffix(f[3], "Mi") && strings.HasSuffix(f[4], "%"), out
	})
	top, _ := kubectl(t, cp, "", "top", "node")
	t.Logf("kubectl top node:\n%s", top)

	// kubectl top pod: the pod's behaviour, 250m and 128Mi.
	eventually.Within(t, 90*time.Second, "kubectl top pod shows usage", func() (bool, string) {
		out, err = kubectl(t, cp, "", "top", "pod", "usage", "--no-headers")
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		f := strings.Fields(out)
		return len(f) == 3 && f[0] == "usage", out
	})
	top, _ = kubectl(t, cp, "", "top", "pod", "--containers")
	t.Logf("kubectl top pod --containers:\n%s", top)
	f := strings.Fields(out)
	cpu, err := resource.ParseQuantity(f[1])
	if err != nil || cpu.MilliValue() < 200 || cpu.MilliValue() > 300 {
		t.Errorf("kubectl top pod CPU %q, want about 250m (200m-300m): %v\n%s", f[1], err, out)
	}
	if f[2] != "128Mi" {
		t.Errorf("kubectl top pod memory %q, want 128Mi\n%s", f[2], out)
	}
}

package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/localcluster"
)

// bootstrapTLS creates the bootstrap token id.secret and the RBAC kubeadm binds for TLS
// bootstrap, as `minikubelet cluster create` does.
func bootstrapTLS(t *testing.T, cp *controlPlane, id, secret string) {
	t.Helper()
	if err := localcluster.BootstrapToken(context.Background(), cp.admin, id, secret); err != nil {
		t.Fatal(err)
	}
}

// servingCertificates: with serverTLSBootstrap, each node's secure port has no certificate
// until an administrator approves the node's kubernetes.io/kubelet-serving CSR (nothing
// approves those by itself); then it serves the cluster-signed one, for the node's name and
// address, which a client verifies with the cluster CA, and its TTL on /metrics.
func servingCertificates(t *testing.T, cp *controlPlane, nodes []string, readOnly int) {
	t.Helper()
	ctx := context.Background()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(cp.signerCA)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	dial := func(node string) (*x509.Certificate, error) {
		n, err := cp.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	if _, err := dial(nodes[0]); err == nil {
		t.Fatal("a TLS handshake succeeded before any serving CSR was approved")
	}
	approved := map[string]bool{}
	eventually.Within(t, 60*time.Second, "a kubelet-serving CSR of each node, approved", func() (bool, string) {
		csrs, err := cp.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i := range csrs.Items {
			c := &csrs.Items[i]
			if c.Spec.SignerName != certificatesv1.KubeletServingSignerName || approved[c.Spec.Username] {
				continue
			}
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "TestApproval", Message: "approved by TestTLSBootstrap"})
			if _, err := cp.admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{}); err != nil {
				return false, err.Error()
			}
			approved[c.Spec.Username] = true
		}
		return len(approved) == len(nodes), fmt.Sprint(approved)
	})
	for i, n := range nodes {
		if !approved["system:node:"+n] {
			t.Errorf("no serving CSR of system:node:%s", n)
		}
		var cert *x509.Certificate
		eventually.Within(t, 60*time.Second, n+" serving its cluster-signed certificate", func() (bool, string) {
			c, err := dial(n)
			cert = c
			return err == nil, fmt.Sprint(err)
		})
		if cert.Subject.CommonName != "system:node:"+n || !slices.Contains(cert.DNSNames, n) {
			t.Errorf("%s serves a certificate for %v %v, want CN system:node:%s and its name", n, cert.Subject, cert.DNSNames, n)
		}
		// The API server, with --kubelet-certificate-authority, verifies it when it calls the
		// node: a pod's log comes through.
		podName := "hello-" + n
		mustCreate(t, func() error {
			_, err := cp.admin.CoreV1().Pods("default").Create(ctx, &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName},
				Spec: v1.PodSpec{NodeName: n, AutomountServiceAccountToken: ptr.To(false),
					Containers: []v1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo hello from " + n + "; sleep 3600"}}}},
			}, metav1.CreateOptions{})
			return err
		})
		eventually.Within(t, 60*time.Second, podName+"'s log through the API server", func() (bool, string) {
			logs, err := cp.admin.CoreV1().Pods("default").GetLogs(podName, &v1.PodLogOptions{}).DoRaw(ctx)
			return err == nil && strings.Contains(string(logs), "hello from "+n), fmt.Sprintf("%v %s", err, logs)
		})
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", readOnly+i))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "kubelet_certificate_manager_server_ttl_seconds 3.") {
			t.Errorf("%s: kubelet_certificate_manager_server_ttl_seconds is not about a year", n)
		}
	}
}

// TestTLSBootstrap: nodes started as kubeadm starts kubelets (a bootstrap kubeconfig with a
// token, rotateCertificates) each request their own client certificate, which the
// controller manager approves and signs; each then joins as its own system:node user,
// judged by the Node authorizer and NodeRestriction, and writes a kubeconfig that uses it.
// A wrong token is logged with its ID and retried, the daemon running on.
func TestTLSBootstrap(t *testing.T) {
	cp := startControlPlaneWith(t, cpOptions{bootstrap: true})
	bin := buildDaemon(t)
	ctx := context.Background()
	dir := t.TempDir()
	bootstrapConf := func(token string) string {
		path := filepath.Join(dir, token[:6]+"-bootstrap.conf")
		writeFile(t, path, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: tls-bootstrap-token-user, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: tls-bootstrap-token-user}}]
current-context: c
`, cp.url, token))
		return path
	}
	readOnly := freePort(t)
	certDir := filepath.Join(dir, "pki")
	start(t, cp.dir, "boot", bin, "--bootstrap-kubeconfig", bootstrapConf("abcdef.0123456789abcdef"),
		"--kubeconfig", filepath.Join(dir, "kubelet.conf"), "--cert-dir", certDir, "--rotate-certificates", "--rotate-server-certificates",
		"--node-count", "2", "--hostname-override", "boot", "--read-only-port", strconv.Itoa(readOnly), "--port", "0",
		"--pod-manifest-path", t.TempDir(), "--fail-swap-on=false", "--container-runtime-endpoint=unix:///run/containerd/containerd.sock")
	// The token does not exist yet: the nodes' first requests go without a certificate and
	// are refused. Once it exists they get their certificates and register. (This passes
	// with the connection rotation disabled too, checked: the API server's connections made
	// before the certificate are not the ones registration reuses here. The rotation is
	// upstream's UpdateTransport, kept for the HTTP/2 reuse a standalone reproduction showed.)
	eventually.Within(t, 30*time.Second, "each node's token refused before it exists", func() (bool, string) {
		data, _ := os.ReadFile(filepath.Join(cp.dir, "boot.log"))
		refused := map[string]bool{}
		for _, line := range strings.Split(string(data), "\n") {
			for _, n := range []string{"boot-0", "boot-1"} {
				if strings.Contains(line, `tokenID="abcdef"`) && strings.Contains(line, `node="`+n+`"`) {
					refused[n] = true
				}
			}
		}
		return len(refused) == 2, string(data)
	})
	bootstrapTLS(t, cp, "abcdef", "0123456789abcdef")
	nodes := []string{"boot-0", "boot-1"}
	for _, n := range nodes {
		eventually.Within(t, 90*time.Second, n+" Ready", func() (bool, string) {
			node, err := cp.admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return nodeReady(node) == v1.ConditionTrue, string(nodeReady(node))
		})
	}
	for i, n := range nodes {
		// Its certificate, and the kubeconfig that uses it.
		data, err := os.ReadFile(filepath.Join(certDir, n, "kubelet-client-current.pem"))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if cert.Subject.CommonName != "system:node:"+n || strings.Join(cert.Subject.Organization, ",") != "system:nodes" {
			t.Errorf("%s's client certificate is for %v, want CN system:node:%s O system:nodes", n, cert.Subject, n)
		}
		if kc, err := os.ReadFile(filepath.Join(certDir, n, "kubeconfig")); err != nil || !strings.Contains(string(kc), "kubelet-client-current.pem") {
			t.Errorf("%s's kubeconfig does not use its certificate: %v\n%s", n, err, kc)
		}
		// The certificate manager's series: a year (the signer's default) to live.
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", readOnly+i))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		series := map[string]float64{}
		for _, line := range strings.Split(string(body), "\n") {
			if name, value, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, "kubelet_certificate_manager_client_") {
				series[name], _ = strconv.ParseFloat(value, 64)
			}
		}
		if ttl := series["kubelet_certificate_manager_client_ttl_seconds"]; ttl < 360*24*3600 || ttl > 366*24*3600 {
			t.Errorf("%s kubelet_certificate_manager_client_ttl_seconds = %v, want about a year (the signer's default)", n, ttl)
		}
		// The requests refused before the token existed were renewal errors.
		if errs, ok := series["kubelet_certificate_manager_client_expiration_renew_errors"]; !ok || errs < 1 {
			t.Errorf("%s kubelet_certificate_manager_client_expiration_renew_errors = %v (served %v), want at least 1: the refused requests", n, errs, ok)
		}
	}
	csrs, err := cp.admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	issued := 0
	for _, c := range csrs.Items {
		if c.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && c.Spec.Username == "system:bootstrap:abcdef" && len(c.Status.Certificate) > 0 {
			issued++
		}
	}
	if issued != len(nodes) {
		t.Errorf("%d kubelet client CSRs of the bootstrap token issued, want %d", issued, len(nodes))
	}

	servingCertificates(t, cp, nodes, readOnly)

	// A wrong token: refused, named by its ID, retried; the daemon keeps running.
	wrong := startProc(t, cp.dir, "wrong-token", bin, "--bootstrap-kubeconfig", bootstrapConf("zzzzzz.0123456789abcdef"),
		"--kubeconfig", filepath.Join(dir, "wrong.conf"), "--cert-dir", filepath.Join(dir, "wrong-pki"), "--rotate-certificates",
		"--hostname-override", "wrong", "--read-only-port", "0", "--port", "0")
	logPath := filepath.Join(cp.dir, "wrong-token.log")
	eventually.Within(t, 30*time.Second, "the refused token's ID in the log, twice (retried)", func() (bool, string) {
		data, _ := os.ReadFile(logPath)
		return strings.Count(string(data), `tokenID="zzzzzz"`) >= 2, string(data)
	})
	select {
	case <-wrong.done:
		t.Fatal("the daemon with a wrong token exited")
	default:
	}
	if _, err := cp.admin.CoreV1().Nodes().Get(ctx, "wrong", metav1.GetOptions{}); err == nil {
		t.Error("a node registered with a wrong bootstrap token")
	}
}

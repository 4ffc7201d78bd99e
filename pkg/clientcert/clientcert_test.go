package clientcert

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
)

// now is the fake clock's instant: the real one at the start, because client-go's
// certificate manager reads the real clock (Current() hides a certificate it sees expired).
var now = time.Now().Truncate(time.Second)

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bootstrapKubeconfig is a kubeadm-style bootstrap kubeconfig: a server and a token.
func bootstrapKubeconfig(t *testing.T, dir, server, token string) string {
	return write(t, filepath.Join(dir, "bootstrap.conf"), fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: tls-bootstrap-token-user, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: tls-bootstrap-token-user}}]
current-context: c
`, server, token))
}

// certKubeconfig is a kubeconfig with an embedded client certificate valid over
// [notBefore, notAfter].
func certKubeconfig(t *testing.T, dir, server string, notBefore, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
		NotBefore: notBefore, NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	path := filepath.Join(dir, "kubelet.conf")
	write(t, path, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {client-certificate-data: %q, client-key-data: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server, b64(certPEM), b64(keyPEM)))
	return path
}

// TestLoad: which credentials a node starts with, as the kubelet's LoadClientConfig decides.
func TestLoad(t *testing.T) {
	const server = "https://127.0.0.1:6443"
	tests := []struct {
		name          string
		kubeconfig    func(dir string) string // "" : none exists
		wantBootstrap bool
	}{
		{"no kubeconfig yet: bootstrap", func(string) string { return "" }, true},
		{"a valid certificate: no bootstrap", func(dir string) string {
			return certKubeconfig(t, dir, server, now.Add(-time.Hour), now.Add(time.Hour))
		}, false},
		{"an expired certificate: bootstrap again", func(dir string) string {
			return certKubeconfig(t, dir, server, now.Add(-2*time.Hour), now.Add(-time.Hour))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			kubeconfig := tt.kubeconfig(dir)
			if kubeconfig == "" {
				kubeconfig = filepath.Join(dir, "kubelet.conf")
			}
			reg := prometheus.NewRegistry()
			c, err := Load(Config{Kubeconfig: kubeconfig, BootstrapKubeconfig: bootstrapKubeconfig(t, dir, server, "abcdef.0123456789abcdef"),
				CertDir: filepath.Join(dir, "pki"), NodeName: "n1", Rotate: true, Registry: reg, Prefix: "kubelet_",
				Clock: clocktesting.NewFakeClock(now), Logger: funcr.New(func(string, string) {}, funcr.Options{})})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Stop()
			written, err := clientcmd.LoadFromFile(kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			auth := written.AuthInfos[written.Contexts[written.CurrentContext].AuthInfo]
			pemPath := filepath.Join(dir, "pki", "kubelet-client-current.pem")
			if bootstrapped := auth.ClientCertificate == pemPath && auth.ClientKey == pemPath; bootstrapped != tt.wantBootstrap {
				t.Errorf("kubeconfig points at the bootstrapped certificate: %v, want %v (%+v)", bootstrapped, tt.wantBootstrap, auth)
			}
			if c.Rest.Host != server || c.Rest.BearerToken != "" {
				t.Errorf("client host %q token %q: want the cluster without the bootstrap token", c.Rest.Host, c.Rest.BearerToken)
			}
			ttl := testutil.ToFloat64(collector(t, reg, "kubelet_certificate_manager_client_ttl_seconds"))
			if tt.wantBootstrap && !math.IsInf(ttl, 1) {
				t.Errorf("TTL %v before the bootstrap, want +Inf", ttl)
			}
			if !tt.wantBootstrap && (ttl < 3599 || ttl > 3600) {
				t.Errorf("TTL %v, want 3600 (the kubeconfig's certificate ends in an hour)", ttl)
			}
		})
	}
}

// TestRefusedTokenIsNamed: a request the API server refuses for the bootstrap token is
// logged with the token's ID (never its secret), and the client goes on.
func TestRefusedTokenIsNamed(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	var logged bytes.Buffer
	logger := funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{})
	cfg := Config{Kubeconfig: filepath.Join(dir, "kubelet.conf"), BootstrapKubeconfig: bootstrapKubeconfig(t, dir, srv.URL, "abcdef.0123456789abcdef"),
		CertDir: filepath.Join(dir, "pki"), NodeName: "n1", Clock: clocktesting.NewFakeClock(now), Logger: logger}
	certConfig, _, err := clientConfigs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(certConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Fatal("the refused request succeeded")
	}
	out := logged.String()
	if !strings.Contains(out, `"tokenID"="abcdef"`) || !strings.Contains(out, "refused the bootstrap token") || strings.Contains(out, "0123456789abcdef") {
		t.Errorf("log %q: want the refusal with the token's ID and not its secret", out)
	}
}

func collector(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			v := mf.GetMetric()[0].GetGauge().GetValue()
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: "copy"}, func() float64 { return v })
		}
	}
	t.Fatalf("%s is not registered", name)
	return nil
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func ptr[T any](v T) *T { return &v }

// secure is the v1beta1 file defaults: no anonymous, both webhooks.
func secure() Config {
	return Config{
		NodeName: "node-1", FineGrainedAuthz: true,
		Authentication: kubeletv1beta1.KubeletAuthentication{
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: ptr(true), CacheTTL: metav1.Duration{Duration: 2 * time.Minute}},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: ptr(false)},
		},
		Authorization: kubeletv1beta1.KubeletAuthorization{
			Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook,
			Webhook: kubeletv1beta1.KubeletWebhookAuthorization{
				CacheAuthorizedTTL:   metav1.Duration{Duration: 5 * time.Minute},
				CacheUnauthorizedTTL: metav1.Duration{Duration: 30 * time.Second},
			},
		},
	}
}

// apiServer is an API server on loopback that knows one token ("alice-token" for user
// alice) and allows alice only nodes/stats; it counts the reviews it answers. (The
// webhooks post with the REST client directly, so a fake clientset cannot stand in.)
type apiServer struct {
	kubernetes.Interface
	tokenReviews, accessReviews atomic.Int32
	lastAccess                  atomic.Pointer[authorizationv1.SubjectAccessReview]
}

func newAPIServer(t *testing.T) *apiServer {
	t.Helper()
	a := &apiServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		a.tokenReviews.Add(1)
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if tr.Spec.Token == "alice-token" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&tr)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		a.accessReviews.Add(1)
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		a.lastAccess.Store(sar.DeepCopy())
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "alice" && ra != nil && ra.Resource == "nodes" && (ra.Subresource == "stats" || ra.Subresource == "healthz") && ra.Name == "node-1" && ra.Verb == "get"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	a.Interface = c
	return a
}

// newAuth builds the secure port's Auth with cfg against api.
func newAuth(t *testing.T, cfg Config, api *apiServer) *Auth {
	t.Helper()
	cfg.Client = api
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func serve(t *testing.T, a *Auth, r *http.Request) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })).ServeHTTP(rec, r)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

func bearer(method, path, token string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// TestWebhooks: tokens through TokenReview, decisions through SubjectAccessReview, with
// the kubelet's 401 and 403 answers.
func TestWebhooks(t *testing.T) {
	api := newAPIServer(t)
	a := newAuth(t, secure(), api)
	tests := []struct {
		name     string
		req      *http.Request
		wantCode int
		wantBody string
	}{
		{"anonymous", bearer("GET", "/stats/summary", ""), 401, "Unauthorized"},
		{"unknown token", bearer("GET", "/stats/summary", "bogus"), 401, "Unauthorized"},
		{"allowed subresource", bearer("GET", "/stats/summary", "alice-token"), 200, "ok"},
		{"denied subresources", bearer("GET", "/pods", "alice-token"), 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
		{"fine-grained allows", bearer("GET", "/healthz", "alice-token"), 200, "ok"},
		{"denied verb names create", bearer("POST", "/exec/default/web/app", "alice-token"), 403, "Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])"},
		{"metrics", bearer("GET", "/metrics/resource", "alice-token"), 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[metrics])"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := serve(t, a, tt.req)
			if code != tt.wantCode || body != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	sar := api.lastAccess.Load()
	if sar == nil || sar.Spec.User != "alice" || len(sar.Spec.Groups) == 0 || sar.Spec.Groups[0] != "dev" {
		t.Errorf("SubjectAccessReview lacks the user and groups from the TokenReview: %+v", sar)
	}
}

// TestWebhookCaches: answers are reused within their TTLs, as the kubelet's caches do.
func TestWebhookCaches(t *testing.T) {
	api := newAPIServer(t)
	cfg := secure()
	a := newAuth(t, cfg, api)
	for i := 0; i < 3; i++ {
		if code, body := serve(t, a, bearer("GET", "/stats/summary", "alice-token")); code != 200 {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
		if code, _ := serve(t, a, bearer("GET", "/pods", "alice-token")); code != 403 {
			t.Fatalf("request %d to /pods: %d, want 403", i, code)
		}
	}
	if n := api.tokenReviews.Load(); n != 1 {
		t.Errorf("%d TokenReviews for one token, want 1 (cached for cacheTTL)", n)
	}
	// /pods asks for nodes/pods, then nodes/proxy: three distinct attributes in all.
	if n := api.accessReviews.Load(); n != 3 {
		t.Errorf("%d SubjectAccessReviews for three distinct attributes, want 3 (allowed and denied answers cached)", n)
	}

	cfg.Authentication.Webhook.CacheTTL = metav1.Duration{}
	api2 := newAPIServer(t)
	a = newAuth(t, cfg, api2)
	serve(t, a, bearer("GET", "/stats/summary", "alice-token"))
	serve(t, a, bearer("GET", "/stats/summary", "alice-token"))
	if n := api2.tokenReviews.Load(); n != 2 {
		t.Errorf("%d TokenReviews with cacheTTL 0, want 2 (no cache)", n)
	}
}

// TestAnonymousAndAlwaysAllow: the flag defaults (a kubelet without a config file).
func TestAnonymousAndAlwaysAllow(t *testing.T) {
	cfg := Config{NodeName: "node-1"}
	cfg.Authentication.Anonymous.Enabled = ptr(true)
	cfg.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := serve(t, a, bearer("GET", "/pods", "")); code != 200 {
		t.Errorf("anonymous with AlwaysAllow: %d %s, want 200", code, body)
	}
	// No method at all is the kubelet's start-up error.
	cfg.Authentication.Anonymous.Enabled = ptr(false)
	if _, err = New(cfg); err == nil || !strings.Contains(err.Error(), "no authentication method configured") {
		t.Errorf("no authentication method: %v", err)
	}
}

// TestStandaloneWebhooksFail: the webhooks need an API server, as the kubelet says.
func TestStandaloneWebhooksFail(t *testing.T) {
	cfg := secure()
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "no client provided, cannot use webhook authentication") {
		t.Errorf("webhook authentication without a client: %v", err)
	}
	cfg.Authentication.Webhook.Enabled = ptr(false)
	cfg.Authentication.Anonymous.Enabled = ptr(true)
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "no client provided, cannot use webhook authorization") {
		t.Errorf("webhook authorization without a client: %v", err)
	}
	cfg.Authentication.X509.ClientCAFile = filepath.Join(t.TempDir(), "missing.crt")
	cfg.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "authentication.x509.clientCAFile "+cfg.Authentication.X509.ClientCAFile) {
		t.Errorf("a missing client CA file: %v", err)
	}
}

// TestClientCertificates: a certificate from the client CA authenticates as its CN and
// organizations (the apiserver's --kubelet-client-certificate); one from another CA does not.
func TestClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCA(t, "kubelet-client-ca")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := secure()
	cfg.Authentication.X509.ClientCAFile = caFile
	a := newAuth(t, cfg, newAPIServer(t))
	good := newClientCert(t, ca, caKey, "kube-apiserver-kubelet-client", "system:masters")
	other, otherKey := newCA(t, "other")
	bad := newClientCert(t, other, otherKey, "mallory", "system:masters")

	for _, tt := range []struct {
		name     string
		cert     *x509.Certificate
		wantCode int
		wantBody string
	}{
		{"trusted", good, 403, "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
		{"untrusted", bad, 401, "Unauthorized"},
	} {
		r := bearer("GET", "/pods", "")
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tt.cert}}
		if code, body := serve(t, a, r); code != tt.wantCode || body != tt.wantBody {
			t.Errorf("%s: got %d %q, want %d %q", tt.name, code, body, tt.wantCode, tt.wantBody)
		}
	}
}

func TestAttributes(t *testing.T) {
	u := &user.DefaultInfo{Name: "bob"}
	tests := []struct {
		method, path, verb string
		fineGrained        bool
		subresources       string
	}{
		{"GET", "/stats/summary", "get", true, "[stats]"},
		{"GET", "/stats", "get", true, "[stats]"},
		{"GET", "/metrics", "get", true, "[metrics]"},
		{"GET", "/metrics/resource", "get", true, "[metrics]"},
		{"GET", "/metricsfoo", "get", true, "[proxy]"},
		{"GET", "/logs/", "get", true, "[log]"},
		{"GET", "/spec/", "get", true, "[proxy]"},
		{"GET", "/statusz", "get", true, "[statusz]"},
		{"GET", "/flagz", "get", true, "[configz]"},
		{"POST", "/checkpoint/ns/pod/c", "create", true, "[checkpoint]"},
		{"GET", "/containerLogs/ns/pod/c", "get", true, "[proxy]"},
		{"POST", "/exec/ns/pod/c", "create", true, "[proxy]"},
		{"GET", "/pods", "get", true, "[pods proxy]"},
		{"GET", "/pods/", "get", true, "[pods proxy]"},
		{"GET", "/podsfoo", "get", true, "[proxy]"},
		{"GET", "/runningpods/", "get", true, "[pods proxy]"},
		{"GET", "/allocatedPods", "get", true, "[pods proxy]"},
		{"GET", "/healthz", "get", true, "[healthz proxy]"},
		{"GET", "/healthz/ping", "get", true, "[healthz proxy]"},
		{"GET", "/configz", "get", true, "[configz proxy]"},
		{"GET", "/pods", "get", false, "[proxy]"},
		{"GET", "/healthz", "get", false, "[proxy]"},
		{"PUT", "/pods", "update", false, "[proxy]"},
		{"PATCH", "/pods", "patch", false, "[proxy]"},
		{"DELETE", "/debug/faults", "delete", true, "[proxy]"},
		{"OPTIONS", "/pods", "", false, "[proxy]"},
		{"HEAD", "/stats/summary", "", true, "[stats]"},
	}
	for _, tt := range tests {
		a := &Auth{nodeName: "node-1", fineGrained: tt.fineGrained}
		attrs := a.Attributes(u, httptest.NewRequest(tt.method, tt.path, nil))
		var subs []string
		for _, at := range attrs {
			subs = append(subs, at.Subresource)
			if at.Verb != tt.verb || at.Resource != "nodes" || at.Name != "node-1" || at.APIVersion != "v1" || !at.ResourceRequest || at.Path != tt.path {
				t.Errorf("%s %s: %+v, want verb %q on nodes/node-1", tt.method, tt.path, at, tt.verb)
			}
		}
		if got := fmt.Sprint(subs); got != tt.subresources {
			t.Errorf("%s %s (fine-grained %v): subresources %s, want %s", tt.method, tt.path, tt.fineGrained, got, tt.subresources)
		}
	}
}

func newCA(t *testing.T, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2199, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func newClientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn, org string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: []string{org}},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2199, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

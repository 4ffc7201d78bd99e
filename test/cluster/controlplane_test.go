package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minikubelet/minikubelet/internal/childproc"
	"github.com/minikubelet/minikubelet/internal/eventually"
)

// binDir holds kube-apiserver and kube-controller-manager (make controlplane builds them).
func binDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("KUBE_BIN_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "_output", "bin")
	}
	for _, b := range []string{"kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Skipf("%s not built (make controlplane): %v", b, err)
		}
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skip("etcd not installed (Debian package etcd-server)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// controlPlane is etcd, kube-apiserver and kube-controller-manager on loopback, stopped
// when the test ends.
type controlPlane struct {
	url       string
	dir       string
	admin     kubernetes.Interface
	nodeToken string
	// kubeletClientCA is the CA of the API server's --kubelet-client-certificate: the
	// kubelets' authentication.x509.clientCAFile.
	kubeletClientCA string
	// apiserver runs kube-apiserver with apiserverArgs; a test may kill and restart it.
	apiserver     *proc
	apiserverArgs []string
	// signerCA is the cluster signing CA of a control plane with the bootstrap option.
	signerCA string
	restarts int
	// pids are the control plane's processes by name (etcd, kube-apiserver as first
	// started, kube-controller-manager, kube-scheduler): the density test measures them.
	pids map[string]int
}

const (
	adminToken = "admin-token"
	nodeToken  = "node-token"
	// viewerToken is user viewer, with no rights on nodes; statsToken is user
	// stats-reader, whom the secure port test grants nodes/stats and nodes/metrics.
	viewerToken = "viewer-token"
	statsToken  = "stats-token"
	// kubeletClientUser is the CN of the API server's kubelet client certificate (kubeadm's).
	kubeletClientUser = "kube-apiserver-kubelet-client"
	// metricsServerToken is user metrics-server, whom the kubectl top test grants what
	// metrics-server needs.
	metricsServerToken = "metrics-server-token"
	// frontProxyUser is the CN of the aggregation layer's proxy client certificate
	// (kubeadm's), the one name allowed to assert users in request headers.
	frontProxyUser = "front-proxy-client"
)

// cpOptions change the control plane a test starts; the zero value is the one the cluster
// tests share: the few controllers they need, and a short node monitor grace period so a
// stopped node goes Unknown quickly.
type cpOptions struct {
	// allControllers runs kube-controller-manager as kubeadm does: every default controller
	// (namespace deletion, jobs, endpoints, ...), the API server's CA published as
	// kube-root-ca.crt, the service account token signer, and the default grace periods.
	allControllers bool
	// bootstrap sets the control plane up for TLS bootstrap as kubeadm does: bootstrap
	// token authentication, a cluster signing CA the API server trusts for client
	// certificates, and the CSR approving and signing controllers (bootstrapTLS adds the
	// token and the RBAC).
	bootstrap bool
	// density runs the control plane as Kubernetes' own scale tests do: the default node
	// monitor grace period (40 s, the one the 10 s lease renewal is designed against) and
	// the controller manager's API client at 100 QPS (kube-up's setting for large clusters;
	// at the default 20, creating 10,000 pods takes the ReplicaSet controller 8 minutes).
	density bool
}

func startControlPlane(t *testing.T, nodes ...string) *controlPlane {
	t.Helper()
	return startControlPlaneWith(t, cpOptions{}, nodes...)
}

func startControlPlaneWith(t *testing.T, opts cpOptions, nodes ...string) *controlPlane {
	t.Helper()
	bin := binDir(t)
	dir := t.TempDir()
	cp := &controlPlane{dir: dir, nodeToken: nodeToken, pids: map[string]int{}}

	etcdPort, peerPort := freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	cp.pids["etcd"] = start(t, dir, "etcd", "etcd", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:"+strconv.Itoa(peerPort),
		"--initial-advertise-peer-urls", "http://127.0.0.1:"+strconv.Itoa(peerPort),
		"--initial-cluster", "default=http://127.0.0.1:"+strconv.Itoa(peerPort)).Process.Pid

	// Tokens: an admin, and one system:node:<name> user in system:nodes per node.
	tokens := adminToken + ",admin,admin,system:masters\n" + viewerToken + ",viewer,uid-viewer\n" + statsToken + ",stats-reader,uid-stats-reader\n" +
		metricsServerToken + ",metrics-server,uid-metrics-server\n"
	for i, n := range nodes {
		tokens += fmt.Sprintf("%s-%d,system:node:%s,uid-%s,system:nodes\n", nodeToken, i, n, n)
	}
	writeFile(t, filepath.Join(dir, "tokens.csv"), tokens)
	key, pub := serviceAccountKeys(t, dir)
	// The API server's client certificate for kubelets, from a CA the kubelets trust.
	caPath, clientCert, clientKey := clientCertificate(t, dir, "kubelet-client", kubeletClientUser)
	cp.kubeletClientCA = caPath
	// The aggregation layer's front proxy client certificate, from a CA of its own.
	frontProxyCA, proxyCert, proxyKey := clientCertificate(t, dir, "front-proxy", frontProxyUser)

	port := freePort(t)
	cp.url = "https://127.0.0.1:" + strconv.Itoa(port)
	cp.apiserverArgs = []string{filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		// A loopback advertise address needs no endpoint reconciler (the API server refuses one).
		"--endpoint-reconciler-type", "none",
		"--secure-port", strconv.Itoa(port), "--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--service-account-key-file", pub, "--service-account-signing-key-file", key,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-cluster-ip-range", "10.0.0.0/24", "--allow-privileged=true",
		"--kubelet-client-certificate", clientCert, "--kubelet-client-key", clientKey,
		// Node hostnames do not resolve here: reach kubelets at their InternalIP.
		"--kubelet-preferred-address-types", "InternalIP",
		// The aggregation layer (kubeadm's settings): the API server proxies
		// /apis/metrics.k8s.io to metrics-server with the front proxy client certificate and
		// the user in X-Remote-* headers. --enable-aggregator-routing stays off (the
		// default): with it the aggregator dials the Service's Endpoints, and Endpoints may
		// not hold loopback addresses; without it, it dials an ExternalName Service's
		// externalName, which may be 127.0.0.1 (see TestKubectlTop).
		"--requestheader-client-ca-file", frontProxyCA, "--requestheader-allowed-names", frontProxyUser,
		"--requestheader-extra-headers-prefix=X-Remote-Extra-", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file", proxyCert, "--proxy-client-key-file", proxyKey}
	var signerCert, signerKey string
	if opts.bootstrap {
		signerCert, signerKey = signingCA(t, dir)
		cp.signerCA = signerCert
		// The nodes' serving certificates are the cluster CA's (serverTLSBootstrap): the API
		// server verifies them when it calls a node (logs, exec, the node proxy).
		cp.apiserverArgs = append(cp.apiserverArgs, "--enable-bootstrap-token-auth", "--client-ca-file", signerCert,
			"--kubelet-certificate-authority", signerCert)
	}
	cp.apiserver = startProc(t, dir, "kube-apiserver", cp.apiserverArgs[0], cp.apiserverArgs[1:]...)
	cp.pids["kube-apiserver"] = cp.apiserver.cmd.Process.Pid

	admin, err := kubernetes.NewForConfig(cp.restConfig(adminToken))
	if err != nil {
		t.Fatal(err)
	}
	cp.admin = admin
	cp.waitReady(t)

	kubeconfig := cp.kubeconfig(t, "admin", adminToken)
	kcm := []string{"--kubeconfig", kubeconfig, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freePort(t)),
		"--leader-elect=false", "--use-service-account-credentials=false"}
	if opts.allControllers {
		// The API server wrote its self-signed serving certificate to --cert-dir by the
		// time it is ready: that is the cluster's root CA, which pods read from
		// kube-root-ca.crt in their service account volume.
		kcm = append(kcm, "--controllers", "*", "--root-ca-file", filepath.Join(dir, "certs", "apiserver.crt"),
			"--service-account-private-key-file", key)
	} else {
		// root-ca-cert-publisher: pods' service account volumes need kube-root-ca.crt,
		// without which a kubelet leaves them ContainerCreating (FailedMount).
		kcm = append(kcm, "--controllers", "nodelifecycle,nodeipam,garbagecollector,serviceaccount,deployment,replicaset,root-ca-cert-publisher",
			"--root-ca-file", filepath.Join(dir, "certs", "apiserver.crt"))
		if opts.density {
			kcm = append(kcm, "--kube-api-qps", "100", "--kube-api-burst", "200")
		} else {
			kcm = append(kcm, "--node-monitor-grace-period", "20s", "--node-monitor-period", "2s")
		}
	}
	if opts.bootstrap {
		for i, a := range kcm {
			if a == "--controllers" {
				kcm[i+1] += ",csrapproving,csrsigning,csrcleaner"
			}
		}
		kcm = append(kcm, "--cluster-signing-cert-file", signerCert, "--cluster-signing-key-file", signerKey)
	}
	cp.pids["kube-controller-manager"] = start(t, dir, "kube-controller-manager", filepath.Join(bin, "kube-controller-manager"), kcm...).Process.Pid
	cp.pids["kube-scheduler"] = start(t, dir, "kube-scheduler", filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig", kubeconfig, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freePort(t)),
		"--leader-elect=false").Process.Pid
	return cp
}

// waitReady waits until the API server's /readyz answers ok.
func (cp *controlPlane) waitReady(t *testing.T) {
	t.Helper()
	eventually.Within(t, 60*time.Second, "kube-apiserver /readyz", func() (bool, string) {
		body, err := cp.admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil && string(body) == "ok", fmt.Sprintf("%s %v", body, err)
	})
}

// killAPIServer kills kube-apiserver at once (a crash: no graceful close of watches).
func (cp *controlPlane) killAPIServer(t *testing.T) {
	t.Helper()
	_ = cp.apiserver.cmd.Process.Kill()
	<-cp.apiserver.done
}

// restartAPIServer starts kube-apiserver again on the same port and waits until it is ready.
func (cp *controlPlane) restartAPIServer(t *testing.T) {
	t.Helper()
	cp.restarts++
	cp.apiserver = startProc(t, cp.dir, fmt.Sprintf("kube-apiserver-%d", cp.restarts), cp.apiserverArgs[0], cp.apiserverArgs[1:]...)
	cp.waitReady(t)
}

func (cp *controlPlane) restConfig(token string) *rest.Config {
	return &rest.Config{Host: cp.url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// kubeconfig writes a kubeconfig for a token and returns its path.
func (cp *controlPlane) kubeconfig(t *testing.T, name, token string) string {
	t.Helper()
	path := filepath.Join(cp.dir, name+".kubeconfig")
	writeFile(t, path, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: %s, user: {token: %q}}]
contexts: [{name: local, context: {cluster: local, user: %s}}]
current-context: local
`, cp.url, name, token, name))
	return path
}

// start runs a process until the test ends; its output goes to <dir>/<name>.log, shown
// when the test fails.
func start(t *testing.T, dir, name, path string, args ...string) *exec.Cmd {
	t.Helper()
	return startProc(t, dir, name, path, args...).cmd
}

// proc is a process started by startProc; done is closed once it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startProc is start, also returning when the process has exited.
func startProc(t *testing.T, dir, name, path string, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, dir, name, nil, path, args...)
}

// startProcEnv is startProc with env added to the test's environment (a later setting of
// a variable wins).
func startProcEnv(t *testing.T, dir, name string, env []string, path string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	childproc.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				tail := data
				if len(tail) > 4000 {
					tail = tail[len(tail)-4000:]
				}
				t.Logf("--- %s log (tail) ---\n%s", name, tail)
			}
		}
	})
	return &proc{cmd: cmd, done: done}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientCertificate writes a CA and a client certificate it signed for user cn, as
// <dir>/<name>-ca.crt, <name>.crt and <name>.key, and returns their paths.
func clientCertificate(t *testing.T, dir, name, cn string) (caPath, certPath, keyPath string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	notBefore, notAfter := time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + "-ca"},
		NotBefore: notBefore, NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caPath, certPath, keyPath = filepath.Join(dir, name+"-ca.crt"), filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writeFile(t, caPath, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	writeFile(t, certPath, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return caPath, certPath, keyPath
}

// signingCA writes the cluster's signing CA (kubeadm's ca.crt and ca.key) as
// <dir>/signer-ca.crt and signer-ca.key.
func signingCA(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "signer-ca.crt"), filepath.Join(dir, "signer-ca.key")
	writeFile(t, certPath, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return certPath, keyPath
}

func serviceAccountKeys(t *testing.T, dir string) (keyPath, pubPath string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	keyPath, pubPath = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	writeFile(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	writeFile(t, pubPath, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
	return keyPath, pubPath
}

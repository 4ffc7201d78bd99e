package clientcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificates "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Config says where a node's client credentials are and what to do with them.
type Config struct {
	// Kubeconfig is --kubeconfig: used as it is while its client certificate is valid (or it
	// has none), else written to use the bootstrapped certificate.
	Kubeconfig string
	// BootstrapKubeconfig is --bootstrap-kubeconfig; empty: no bootstrap.
	BootstrapKubeconfig string
	// CertDir keeps the certificate and key (kubelet-client-current.pem).
	CertDir string
	// NodeName is the node the certificate is for: CN system:node:<name>, O system:nodes.
	NodeName string
	// Rotate is rotateCertificates: renew the certificate before it expires.
	Rotate bool
	// Registry receives the certificate manager's series (kubelet_certificate_manager_*);
	// Prefix is the node's metric prefix (kubelet_ by default).
	Registry prometheus.Registerer
	Prefix   string
	// Clock reads the certificate's time to live and paces the check that closes the
	// connections made with an older certificate.
	Clock clock.Clock
	// Logger receives what the bootstrap does.
	Logger klog.Logger
}

// Client is a node's API client configuration and, when the certificate is bootstrapped
// or rotated, the manager that keeps it.
type Client struct {
	// Rest is the node's client configuration. With a manager, its TLS client certificate is
	// the manager's current one at each handshake: none until the bootstrap succeeded.
	Rest   *restclient.Config
	mgr    certificate.Manager
	dialer *connrotation.Dialer
	clock  clock.Clock
	stop   sync.Once
}

// Load builds the node's client as the kubelet's buildKubeletClientConfig does:
//   - without rotation or bootstrap, the kubeconfig as it is;
//   - with a bootstrap kubeconfig and a kubeconfig whose certificate is still valid, that
//     kubeconfig (no bootstrap needed), rotated when Rotate;
//   - else the bootstrap kubeconfig's cluster, with a certificate the manager requests with
//     the bootstrap token (kubernetes.io/kube-apiserver-client-kubelet), and the kubeconfig
//     written to point at it.
//
// Start begins the requests; they are retried with the manager's back-off (2s doubling,
// then every 32s) while the node runs, and a refused bootstrap token is logged with its ID.
func Load(cfg Config) (*Client, error) {
	if cfg.Clock == nil {
		return nil, errors.New("clientcert: Config.Clock is required")
	}
	if cfg.BootstrapKubeconfig == "" && !cfg.Rotate {
		rest, err := loadRESTConfig(cfg.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		return &Client{Rest: rest}, nil
	}
	certConfig, userConfig, err := clientConfigs(cfg)
	if err != nil {
		return nil, err
	}
	store, err := certificate.NewFileStore("kubelet-client", cfg.CertDir, cfg.CertDir, userConfig.CertFile, userConfig.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("client certificate store in --cert-dir %s: %w", cfg.CertDir, err)
	}
	renewErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Name: cfg.Prefix + "certificate_manager_client_expiration_renew_errors",
		Help: "Counter of certificate renewal errors.",
	})
	logger := cfg.Logger.WithValues("node", cfg.NodeName)
	// The manager logs through the logger of its Ctx (client-go took out Logf).
	logCtx := klog.NewContext(context.Background(), logger)
	mgr, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(current *tls.Certificate) (kubernetes.Interface, error) {
			// A valid certificate requests its successor; the bootstrap token only the first.
			if current != nil {
				return kubernetes.NewForConfig(userConfig)
			}
			return kubernetes.NewForConfig(certConfig)
		},
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName: "system:node:" + cfg.NodeName, Organization: []string{"system:nodes"}}},
		SignerName: certificates.KubeAPIServerClientKubeletSignerName,
		GetUsages:  certificate.DefaultKubeletClientGetUsages,
		// kubeadm's control-plane kubelets start from a kubeconfig with certificate data,
		// rotated out at once.
		BootstrapCertificatePEM: userConfig.CertData,
		BootstrapKeyPEM:         userConfig.KeyData,
		CertificateStore:        store,
		CertificateRenewFailure: renewErrors,
		Name:                    "kubelet-client",
		Ctx:                     &logCtx,
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate manager: %w", err)
	}
	if cfg.Registry != nil {
		ttl := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: cfg.Prefix + "certificate_manager_client_ttl_seconds",
			Help: "Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF.",
		}, func() float64 {
			if c := mgr.Current(); c != nil && c.Leaf != nil {
				return math.Trunc(c.Leaf.NotAfter.Sub(cfg.Clock.Now()).Seconds())
			}
			return math.Inf(1)
		})
		for _, c := range []prometheus.Collector{renewErrors, ttl} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("register the certificate manager's metrics: %w", err)
			}
		}
	}
	// The node's client: the cluster of userConfig, the manager's certificate at each TLS
	// handshake, nothing of the files. As the kubelet's UpdateTransport, its connections are
	// tracked so that Start's watch closes them when the certificate changes: an HTTP/2
	// connection is reused for every request, and one opened before the bootstrap (anonymous)
	// or with the previous certificate would be used for good.
	rest := restclient.AnonymousClientConfig(userConfig)
	tlsConfig, err := restclient.TLSConfigFor(rest)
	if err != nil {
		return nil, fmt.Errorf("client TLS configuration: %w", err)
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := mgr.Current(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil // none yet: the API server sees an anonymous client
	}
	dial := rest.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	dialer := connrotation.NewDialer(dial)
	proxy := http.ProxyFromEnvironment
	if rest.Proxy != nil {
		proxy = rest.Proxy
	}
	rest.Transport = utilnet.SetTransportDefaults(&http.Transport{Proxy: proxy, TLSClientConfig: tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 25, DialContext: dialer.DialContext})
	rest.TLSClientConfig, rest.Dial, rest.Proxy = restclient.TLSClientConfig{}, nil, nil
	return &Client{Rest: rest, mgr: mgr, dialer: dialer, clock: cfg.Clock}, nil
}

// certCheckPeriod is how often Start's watch compares the current certificate with the one
// the connections were made with (upstream: 10s; here 1s, so that a node registers within
// a second of its bootstrap).
const certCheckPeriod = time.Second

// Start starts the certificate manager, when there is one, and a watch that closes the
// client's connections when the certificate changes; the watch ends with ctx. The
// manager's own goroutines are client-go's (as in the kubelet): Stop asks them to end, and
// one blocked waiting for a CSR ends when that wait does.
func (c *Client) Start(ctx context.Context) {
	if c.mgr == nil {
		return
	}
	c.mgr.Start()
	go func() {
		last := c.mgr.Current()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.clock.After(certCheckPeriod):
			}
			if cur := c.mgr.Current(); cur != last {
				last = cur
				c.dialer.CloseAll()
			}
		}
	}()
}

// Stop asks the certificate manager to stop.
func (c *Client) Stop() {
	if c.mgr != nil {
		c.stop.Do(c.mgr.Stop)
	}
}

// Current is the client certificate in use, nil before the bootstrap succeeded or without a
// manager.
func (c *Client) Current() *tls.Certificate {
	if c.mgr == nil {
		return nil
	}
	return c.mgr.Current()
}

// clientConfigs are the kubelet's bootstrap.LoadClientConfig: the configuration that
// requests certificates and the node's own. Without a bootstrap kubeconfig both are the
// kubeconfig. With one, a kubeconfig whose certificate is still valid is used as it is;
// otherwise the kubeconfig is (re)written to the bootstrap kubeconfig's cluster and the
// certificate the manager keeps in CertDir, and requests use the bootstrap credentials.
func clientConfigs(cfg Config) (certConfig, userConfig *restclient.Config, err error) {
	if cfg.BootstrapKubeconfig == "" {
		rest, err := loadRESTConfig(cfg.Kubeconfig)
		if err != nil {
			return nil, nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		return rest, restclient.CopyConfig(rest), nil
	}
	if ok, err := stillValid(cfg.Kubeconfig, cfg.Clock.Now()); err != nil {
		return nil, nil, err
	} else if ok {
		cfg.Logger.V(2).Info("Current kubeconfig file contents are still valid, no bootstrap necessary", "kubeconfig", cfg.Kubeconfig)
		rest, err := loadRESTConfig(cfg.Kubeconfig)
		if err != nil {
			return nil, nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		return rest, restclient.CopyConfig(rest), nil
	}
	bootstrap, err := loadRESTConfig(cfg.BootstrapKubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--bootstrap-kubeconfig %s: %w", cfg.BootstrapKubeconfig, err)
	}
	if bootstrap.BearerToken != "" {
		bootstrap.WrapTransport = refusedToken(cfg, tokenID(bootstrap.BearerToken))
	}
	user := restclient.AnonymousClientConfig(bootstrap)
	pem := filepath.Join(cfg.CertDir, "kubelet-client-current.pem")
	user.CertFile, user.KeyFile = pem, pem
	if err := writeKubeconfig(cfg.Kubeconfig, bootstrap, pem); err != nil {
		return nil, nil, err
	}
	cfg.Logger.Info("Using the bootstrap credentials to request a client certificate", "node", cfg.NodeName,
		"bootstrapKubeconfig", cfg.BootstrapKubeconfig, "kubeconfig", cfg.Kubeconfig, "certDir", cfg.CertDir)
	return bootstrap, user, nil
}

// tokenID is a bootstrap token's ID, the part before the dot (<id>.<secret>): what a
// message may name.
func tokenID(token string) string {
	id, _, _ := strings.Cut(token, ".")
	return id
}

// refusedToken logs a request the API server refused for its credentials (401) with the
// bootstrap token's ID: the manager's own error says only "Unauthorized".
func refusedToken(cfg Config, id string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusUnauthorized {
				cfg.Logger.Error(nil, "The API server refused the bootstrap token: it is wrong, expired or deleted; retrying",
					"tokenID", id, "bootstrapKubeconfig", cfg.BootstrapKubeconfig, "node", cfg.NodeName)
			}
			return resp, err
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// stillValid reports whether the kubeconfig exists and its client certificate (if any) is
// within its validity at now, as the kubelet's isClientConfigStillValid.
func stillValid(path string, now time.Time) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	rest, err := loadRESTConfig(path)
	if err != nil {
		return false, nil // rewritten from the bootstrap kubeconfig
	}
	if err := restclient.LoadTLSFiles(rest); err != nil {
		return false, nil
	}
	if len(rest.CertData) == 0 {
		return false, nil
	}
	certs, err := certutil.ParseCertsPEM(rest.CertData)
	if err != nil {
		return false, nil
	}
	return !now.Before(certs[0].NotBefore) && !now.After(certs[0].NotAfter), nil
}

func loadRESTConfig(path string) (*restclient.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// writeKubeconfig writes the kubeconfig the kubelet writes after bootstrapping: the
// bootstrap kubeconfig's server and CA, and the certificate and key in pem.
func writeKubeconfig(path string, bootstrap *restclient.Config, pem string) error {
	ca := bootstrap.CAData
	if len(ca) == 0 && bootstrap.CAFile != "" {
		data, err := os.ReadFile(bootstrap.CAFile)
		if err != nil {
			return fmt.Errorf("the bootstrap kubeconfig's CA %s: %w", bootstrap.CAFile, err)
		}
		ca = data
	}
	kc := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {Server: bootstrap.Host,
			InsecureSkipTLSVerify: bootstrap.Insecure, CertificateAuthorityData: ca, TLSServerName: bootstrap.ServerName}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pem, ClientKey: pem}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if err := clientcmd.WriteToFile(kc, path); err != nil {
		return fmt.Errorf("write --kubeconfig %s: %w", path, err)
	}
	return nil
}

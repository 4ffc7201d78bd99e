package servingcert

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	certificates "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
	"k8s.io/utils/clock"
)

// ManagerConfig configures the serving certificate manager of serverTLSBootstrap.
type ManagerConfig struct {
	// Client requests the certificates (the node's own client).
	Client kubernetes.Interface
	// NodeName is the subject (CN system:node:<name>, O system:nodes) and a DNS name.
	NodeName string
	// IPs are the node's addresses, the certificate's IP SANs.
	IPs []net.IP
	// CertDir keeps kubelet-server-current.pem.
	CertDir string
	// Registry receives kubelet_certificate_manager_server_ttl_seconds,
	// _server_rotation_seconds and kubelet_server_expiration_renew_errors; Prefix is the
	// node's metric prefix.
	Registry prometheus.Registerer
	Prefix   string
	Clock    clock.PassiveClock
}

// NewManager is the kubelet's NewKubeletServerCertificateManager: client-go's certificate
// manager requesting kubernetes.io/kubelet-serving certificates for the node's names and
// addresses, kept in CertDir and renewed before they expire. Nothing approves such a CSR by
// itself (kube-controller-manager does not): an administrator or an approver must.
func NewManager(cfg ManagerConfig) (certificate.Manager, error) {
	if cfg.Clock == nil {
		return nil, errors.New("servingcert: ManagerConfig.Clock is required")
	}
	store, err := certificate.NewFileStore("kubelet-server", cfg.CertDir, cfg.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("serving certificate store in --cert-dir %s: %w", cfg.CertDir, err)
	}
	renewErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Name: cfg.Prefix + "server_expiration_renew_errors",
		Help: "Counter of certificate renewal errors.",
	})
	rotation := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: cfg.Prefix + "certificate_manager_server_rotation_seconds",
		Help: "Histogram of the number of seconds the previous certificate lived before being rotated.",
		// 1 minute, 1 hour, 4 hours, 1 day, 1 week, 1 month, 3 and 6 months, 1 and 4 years.
		Buckets: []float64{60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000},
	})
	template := &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:" + cfg.NodeName, Organization: []string{"system:nodes"}},
		DNSNames:    []string{cfg.NodeName},
		IPAddresses: cfg.IPs,
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn:             func(*tls.Certificate) (kubernetes.Interface, error) { return cfg.Client, nil },
		GetTemplate:             func() *x509.CertificateRequest { return template },
		SignerName:              certificates.KubeletServingSignerName,
		GetUsages:               certificate.DefaultKubeletServingGetUsages,
		CertificateStore:        store,
		CertificateRotation:     rotation,
		CertificateRenewFailure: renewErrors,
		Name:                    "kubelet-serving",
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate manager: %w", err)
	}
	if cfg.Registry != nil {
		ttl := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: cfg.Prefix + "certificate_manager_server_ttl_seconds",
			Help: "Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). If serving certificate is invalid or unused, the value will be +INF.",
		}, func() float64 {
			if c := m.Current(); c != nil && c.Leaf != nil {
				return math.Trunc(c.Leaf.NotAfter.Sub(cfg.Clock.Now()).Seconds())
			}
			return math.Inf(1)
		})
		for _, c := range []prometheus.Collector{renewErrors, rotation, ttl} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("register the serving certificate manager's metrics: %w", err)
			}
		}
	}
	return m, nil
}

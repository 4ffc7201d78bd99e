package servingcert

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// The file names the kubelet keeps its self-signed certificate under in --cert-dir.
const (
	CertFileName = "kubelet.crt"
	KeyFileName  = "kubelet.key"
)

// Config says where the certificate comes from.
type Config struct {
	// CertFile and KeyFile, when both set, are the certificate (with its chain) and key.
	CertFile, KeyFile string
	// CertDir, when set and no files are given, keeps the self-signed certificate as
	// CertDir/kubelet.crt and kubelet.key: reused if readable, written otherwise.
	CertDir string
	// Host and IPs are what a generated certificate is for (the node's hostname and
	// addresses).
	Host string
	IPs  []net.IP
}

// Deferred is Load for a node that is one of many in a process (--node-count): what Load
// reads (given files, a certificate already in CertDir) is read now, with Load's errors; a
// self-signed certificate still to be generated is generated at the first call of the
// returned function (the first TLS handshake) instead, and written to CertDir then. The
// kubelet generates it at start: two RSA-2048 keys, about 0.1 s of CPU, which for 1,000
// nodes is minutes of start-up spent on certificates no one may ask for.
func Deferred(cfg Config) (func() (*tls.Certificate, error), error) {
	if cfg.CertFile != "" || cfg.KeyFile != "" || (cfg.CertDir != "" && canRead(cfg.CertDir)) {
		c, _, err := Load(cfg)
		if err != nil {
			return nil, err
		}
		return func() (*tls.Certificate, error) { return c, nil }, nil
	}
	var (
		mu  sync.Mutex
		c   *tls.Certificate
		err error
	)
	return func() (*tls.Certificate, error) {
		mu.Lock()
		defer mu.Unlock()
		if c == nil && err == nil {
			c, _, err = Load(cfg)
		}
		return c, err
	}, nil
}

// canRead says whether dir holds a certificate and key Load would read.
func canRead(dir string) bool {
	ok, _ := cert.CanReadCertAndKey(filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName))
	return ok
}

// Load returns the serving certificate as the kubelet's InitializeTLS: the given files,
// or a self-signed one for Host (valid one year, with its own CA), kept in CertDir when
// one is given and generated in memory otherwise. It also returns where the certificate
// came from, for the start-up log.
func Load(cfg Config) (*tls.Certificate, string, error) {
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		c, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, "", fmt.Errorf("tlsCertFile %s, tlsPrivateKeyFile %s: %w", cfg.CertFile, cfg.KeyFile, err)
		}
		return &c, cfg.CertFile, nil
	}
	if cfg.CertDir == "" {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(cfg.Host, cfg.IPs, nil)
		if err != nil {
			return nil, "", fmt.Errorf("generate a self-signed serving certificate for %s: %w", cfg.Host, err)
		}
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, "", err
		}
		return &c, "self-signed, in memory", nil
	}
	certPath, keyPath := filepath.Join(cfg.CertDir, CertFileName), filepath.Join(cfg.CertDir, KeyFileName)
	if ok, _ := cert.CanReadCertAndKey(certPath, keyPath); !ok {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(cfg.Host, cfg.IPs, nil)
		if err != nil {
			return nil, "", fmt.Errorf("generate a self-signed serving certificate for %s: %w", cfg.Host, err)
		}
		if err := os.MkdirAll(cfg.CertDir, 0o755); err != nil {
			return nil, "", fmt.Errorf("--cert-dir %s: %w", cfg.CertDir, err)
		}
		if err := cert.WriteCert(certPath, certPEM); err != nil {
			return nil, "", fmt.Errorf("--cert-dir %s: %w", cfg.CertDir, err)
		}
		if err := keyutil.WriteKey(keyPath, keyPEM); err != nil {
			return nil, "", fmt.Errorf("--cert-dir %s: %w", cfg.CertDir, err)
		}
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, "", fmt.Errorf("--cert-dir %s: %w", cfg.CertDir, err)
	}
	return &c, certPath, nil
}

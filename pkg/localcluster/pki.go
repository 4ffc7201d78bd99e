package localcluster

import (
	"crypto"
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
	"path/filepath"
	"time"
)

// pki is what the cluster's components authenticate with, as kubeadm lays it out: one CA
// (the API server's client CA and the controller manager's signer, which signs the nodes'
// CSRs), the API server's serving certificate, the service account key pair, the admin's
// client certificate (system:masters, for the controller manager, the scheduler and the
// user) and the API server's client certificate for the kubelets' secure ports.
type pki struct {
	dir                     string
	caCert, caKey           string
	serverCert, serverKey   string
	saKey, saPub            string
	adminCert, adminKey     string
	kubeletClientCert       string
	kubeletClientKey        string
	caPEM, adminPEM, adminK []byte
}

// newPKI writes the cluster's certificates and keys under dir/pki, valid from now for a
// year (the CA ten).
func newPKI(dir string, now time.Time) (*pki, error) {
	p := &pki{dir: filepath.Join(dir, "pki")}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	if p.caCert, p.caKey, err = p.write("ca", caDER, caKey); err != nil {
		return nil, err
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	leaf := func(name string, tmpl *x509.Certificate) (string, string, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial(), now.Add(-time.Hour), now.Add(365*24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return "", "", err
		}
		return p.write(name, der, key)
	}
	if p.serverCert, p.serverKey, err = leaf("apiserver", &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}}); err != nil {
		return nil, err
	}
	if p.adminCert, p.adminKey, err = leaf("admin", &x509.Certificate{Subject: pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, err
	}
	if p.kubeletClientCert, p.kubeletClientKey, err = leaf("apiserver-kubelet-client", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, err
	}
	if p.adminPEM, err = os.ReadFile(p.adminCert); err != nil {
		return nil, err
	}
	if p.adminK, err = os.ReadFile(p.adminKey); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p.saKey, p.saPub = filepath.Join(p.dir, "sa.key"), filepath.Join(p.dir, "sa.pub")
	if err := os.WriteFile(p.saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// write writes name.crt and name.key.
func (p *pki) write(name string, der []byte, key crypto.Signer) (certPath, keyPath string, err error) {
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return "", "", fmt.Errorf("%s: not an ECDSA key", name)
	}
	keyDER, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		return "", "", err
	}
	certPath, keyPath = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // the system's randomness failed
	}
	return n
}

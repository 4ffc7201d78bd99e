package servingcert

import (
	"bytes"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func leaf(t *testing.T, raw [][]byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(raw[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSelfSignedKeptInCertDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	cfg := Config{CertDir: dir, Host: "node-1", IPs: []net.IP{net.ParseIP("127.0.0.2")}}
	first, from, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if from != filepath.Join(dir, CertFileName) {
		t.Errorf("source %q", from)
	}
	c := leaf(t, first.Certificate)
	if err := c.VerifyHostname("node-1"); err != nil {
		t.Errorf("not for the node's hostname: %v", err)
	}
	if err := c.VerifyHostname("127.0.0.2"); err != nil {
		t.Errorf("not for the node's address: %v", err)
	}
	for _, f := range []string{CertFileName, KeyFileName} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	// A restart reuses it.
	second, _, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Certificate[0], second.Certificate[0]) {
		t.Error("a second start generated a new certificate instead of reusing the kept one")
	}
}

func TestInMemoryWithoutCertDir(t *testing.T) {
	c, from, err := Load(Config{Host: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	if from != "self-signed, in memory" || leaf(t, c.Certificate).VerifyHostname("node-1") != nil {
		t.Errorf("got %q, %v", from, leaf(t, c.Certificate).DNSNames)
	}
}

func TestGivenFiles(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Load(Config{CertDir: dir, Host: "node-x"}); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName)
	c, from, err := Load(Config{CertFile: certFile, KeyFile: keyFile, Host: "ignored"})
	if err != nil || from != certFile || leaf(t, c.Certificate).VerifyHostname("node-x") != nil {
		t.Errorf("given files not used: %q %v", from, err)
	}
	_, _, err = Load(Config{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: keyFile})
	if err == nil || !strings.Contains(err.Error(), "tlsCertFile "+filepath.Join(dir, "missing.crt")) {
		t.Errorf("a missing certificate file: %v", err)
	}
}

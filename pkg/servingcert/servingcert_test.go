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

// TestDeferred: a node of many generates its self-signed certificate at the first handshake,
// once, and writes it to the cert dir then; one already in the cert dir, or given files, are
// read at once, and a bad one fails the start as Load does.
func TestDeferred(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	get, err := Deferred(Config{CertDir: dir, Host: "node-1", IPs: []net.IP{net.ParseIP("127.0.0.2")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, CertFileName)); !os.IsNotExist(err) {
		t.Fatalf("before the first handshake the certificate exists (%v): generated at start", err)
	}
	first, err := get()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := get(); again != first {
		t.Error("the second handshake got another certificate: generated twice")
	}
	if c := leaf(t, first.Certificate); c.Subject.CommonName == "" || !strings.HasPrefix(c.Subject.CommonName, "node-1") {
		t.Errorf("certificate for %q, want node-1", c.Subject.CommonName)
	}
	written, err := os.ReadFile(filepath.Join(dir, CertFileName))
	if err != nil {
		t.Fatalf("not written to the cert dir: %v", err)
	}

	// The next start reads the certificate in the cert dir at once.
	get2, err := Deferred(Config{CertDir: dir, Host: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := get2()
	if err != nil || !bytes.Equal(second.Certificate[0], first.Certificate[0]) {
		t.Errorf("after a restart: %v, want the certificate of %s (%d bytes)", err, CertFileName, len(written))
	}

	if _, err := Deferred(Config{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: filepath.Join(dir, "missing.key")}); err == nil || !strings.Contains(err.Error(), "missing.crt") {
		t.Errorf("missing tlsCertFile: %v, want an error at start naming it", err)
	}
}

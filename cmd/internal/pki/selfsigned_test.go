package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestEnsureSelfSignedCreatesOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	hosts := CertHosts("node-1", "db.example.com")
	created, err := EnsureSelfSigned(dir, hosts, now)
	if err != nil || !created {
		t.Fatalf("first call: created %v, err %v", created, err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("key: %T, want ECDSA P-256", leaf.PublicKey)
	}
	if !slices.Equal(leaf.DNSNames, []string{"localhost", "node-1", "db.example.com"}) {
		t.Errorf("DNS names: %q", leaf.DNSNames)
	}
	var ips []string
	for _, ip := range leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	if !slices.Equal(ips, []string{"127.0.0.1", "::1"}) {
		t.Errorf("IP addresses: %q", ips)
	}
	if !leaf.NotBefore.Before(now) || leaf.NotAfter.Sub(now) < 364*24*time.Hour || leaf.NotAfter.Sub(now) > 366*24*time.Hour {
		t.Errorf("validity %s to %s; want about a year from %s", leaf.NotBefore, leaf.NotAfter, now)
	}
	// The certificate is its own root: a client that trusts cert.pem can
	// verify the server under every name it was made for.
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	for _, h := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("verify as %s: %v", h, err)
		}
	}

	before, _ := os.ReadFile(certFile)
	created, err = EnsureSelfSigned(dir, hosts, now)
	after, _ := os.ReadFile(certFile)
	if err != nil || created || string(before) != string(after) {
		t.Errorf("second call: created %v, err %v, changed %v; want the existing pair kept", created, err, string(before) != string(after))
	}
}

func TestCertHostsDeduplicates(t *testing.T) {
	got := CertHosts("localhost", "127.0.0.1")
	if !slices.Equal(got, []string{"localhost", "127.0.0.1", "::1"}) {
		t.Errorf("got %q", got)
	}
	if got := CertHosts("", "10.1.2.3"); net.ParseIP(got[len(got)-1]) == nil || len(got) != 4 {
		t.Errorf("got %q", got)
	}
}

package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbordb/arbor/cluster"
	"github.com/arbordb/arbor/cmd/internal/pki"
)

// cmIssue signs a certificate the way cert-manager's CA issuer does:
// a CA when isCA, else a node certificate for dnsNames.
func cmIssue(t *testing.T, cn string, isCA bool, dnsNames []string, key crypto.Signer, parent *x509.Certificate, parentKey crypto.Signer) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: testSerial(t),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dnsNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(90 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = nil
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCertManagerSecretWorksAsIs: the three files of a cert-manager
// Secret (kubernetes.io/tls plus ca.crt) are usable as --tls-cert,
// --tls-key and --tls-ca unchanged: an RSA key in PKCS#1 (cert-manager's
// default encoding) or an EC key in PKCS#8, a tls.crt with the
// intermediate after the leaf, and one wildcard certificate shared by
// every pod of the StatefulSet.
func TestCertManagerSecretWorksAsIs(t *testing.T) {
	const pod = "arbor-0.arbor-headless.arbor.svc.cluster.local"
	names := []string{"*.arbor-headless.arbor.svc.cluster.local", "arbor.arbor.svc", "localhost"}
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	root := cmIssue(t, "root", true, nil, rootKey, nil, nil)
	interKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	inter := cmIssue(t, "intermediate", true, nil, interKey, root, rootKey)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		chain  []*x509.Certificate // tls.crt
		keyPEM []byte
	}{
		"RSA PKCS#1 from the root": {
			[]*x509.Certificate{cmIssue(t, pod, false, names, rsaKey, root, rootKey)},
			pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
		},
		"EC PKCS#8 from an intermediate": {
			[]*x509.Certificate{cmIssue(t, pod, false, names, ecKey, inter, interKey), inter},
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}),
		},
	} {
		t.Run(name, func(t *testing.T) {
			secret := filepath.Join(t.TempDir(), "tls")
			if err := os.MkdirAll(secret, 0o700); err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{
				"tls.crt":    pemCerts(c.chain...),
				"tls.key":    c.keyPEM,
				"ca.crt":     pemCerts(root),
				"gossip.key": []byte(base64.StdEncoding.EncodeToString(randomGossipKey(t)) + "\n"),
			}
			for f, data := range files {
				if err := os.WriteFile(filepath.Join(secret, f), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, _, err := parse(t, nil, "--bootstrap-expect", "3", "--advertise-host", pod,
				"--tls-cert", filepath.Join(secret, "tls.crt"), "--tls-key", filepath.Join(secret, "tls.key"),
				"--tls-ca", filepath.Join(secret, "ca.crt"), "--gossip-key", filepath.Join(secret, "gossip.key"))
			if err != nil {
				t.Fatalf("serve refuses the Secret's files: %v", err)
			}
			certs, err := loadCertificates(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			served, _ := certs.GetCertificate(nil)
			if len(served.Certificate) != len(c.chain) || certs.Leaf().VerifyHostname(pod) != nil {
				t.Errorf("serves %d certificates (want the chain of %d) for %v", len(served.Certificate), len(c.chain), certs.Leaf().DNSNames)
			}
			ca, err := pki.NewCAReloader(cfg.TLSCA, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			inters := x509.NewCertPool()
			for _, ic := range c.chain[1:] {
				inters.AddCert(ic)
			}
			if _, err := certs.Leaf().Verify(x509.VerifyOptions{Roots: ca.Pool(), Intermediates: inters, DNSName: "arbor.arbor.svc"}); err != nil {
				t.Errorf("a peer with ca.crt refuses this node's chain: %v", err)
			}
		})
	}
}

// testSerial is a random 128-bit certificate serial.
func testSerial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// randomGossipKey is a new gossip key.
func randomGossipKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, cluster.GossipKeyLen)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// pemCerts writes certificates as PEM, in order.
func pemCerts(certs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

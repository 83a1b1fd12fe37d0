package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

// certAuthority is the CA that signs node certificates.
type certAuthority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// loadOrCreateCA reuses dir's CA, or creates it when there is no
// ca.pem (a ca.pem without its key is an error, never replaced).
func loadOrCreateCA(dir string, now time.Time) (ca certAuthority, created bool, err error) {
	if exists(filepath.Join(dir, caCertFile)) {
		ca, err = loadCA(dir)
		return ca, false, err
	}
	ca, certPEM, keyPEM, err := newCA(now, "Arbor cluster CA")
	if err != nil {
		return ca, false, err
	}
	// The key first: a crash in between leaves no ca.pem, and the next
	// run starts over.
	if err := atomicfile.Write(filepath.Join(dir, caKeyFile), keyPEM, 0o600); err != nil {
		return ca, false, err
	}
	if err := atomicfile.Write(filepath.Join(dir, caCertFile), certPEM, 0o644); err != nil {
		return ca, false, err
	}
	return ca, true, nil
}

// loadCA reads dir's CA: the key in ca-key.pem and, among the
// certificates of ca.pem (two during a rotation), the one for that key.
func loadCA(dir string) (certAuthority, error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return certAuthority{}, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return certAuthority{}, fmt.Errorf("%s exists but its key cannot be read: %w", certPath, err)
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return certAuthority{}, fmt.Errorf("%s: %w", keyPath, err)
	}
	certs, err := parseCertsPEM(certPEM)
	if err != nil {
		return certAuthority{}, fmt.Errorf("%s: %w", certPath, err)
	}
	for _, c := range certs {
		if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); ok && pub.Equal(c.PublicKey) {
			if !c.IsCA {
				return certAuthority{}, fmt.Errorf("%s: the certificate for %s is not a CA certificate", certPath, keyPath)
			}
			return certAuthority{cert: c, key: key}, nil
		}
	}
	return certAuthority{}, fmt.Errorf("%s: no certificate in it matches the key %s", certPath, keyPath)
}

// newCA makes a CA: an ECDSA P-256 key and a self-signed certificate that
// signs only end-entity certificates, valid for caValidity.
func newCA(now time.Time, name string) (ca certAuthority, certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ca, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serialNumber(),
		Subject:               pkix.Name{Organization: []string{"Arbor"}, CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return ca, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return ca, nil, nil, err
	}
	if keyPEM, err = encodeKeyPEM(key); err != nil {
		return ca, nil, nil, err
	}
	return certAuthority{cert: cert, key: key}, encodeCertsPEM(cert), keyPEM, nil
}

// issue makes a certificate named commonName, valid for names (DNS names
// and IP addresses) for serving and for client authentication between
// nodes, with a new key. It ends at hostValidity or with the CA, whichever
// is first; clamped reports the second.
func (ca certAuthority) issue(commonName string, names []string, now time.Time) (certPEM, keyPEM []byte, leaf *x509.Certificate, clamped bool, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, false, err
	}
	notAfter := now.Add(hostValidity)
	if notAfter.After(ca.cert.NotAfter) {
		// A certificate outliving its CA would only fail verification
		// then; ending with it makes the expiry metric tell the truth.
		notAfter, clamped = ca.cert.NotAfter, true
	}
	tmpl := &x509.Certificate{
		SerialNumber: serialNumber(),
		Subject:      pkix.Name{Organization: []string{"Arbor"}, CommonName: commonName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range names {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if leaf, err = x509.ParseCertificate(der); err != nil {
		return nil, nil, nil, false, err
	}
	if keyPEM, err = encodeKeyPEM(key); err != nil {
		return nil, nil, nil, false, err
	}
	return encodeCertsPEM(leaf), keyPEM, leaf, clamped, nil
}

// certNames lists the names a certificate is valid for, DNS names first.
func certNames(c *x509.Certificate) []string {
	names := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}

// parseCertsPEM reads every CERTIFICATE block of a PEM file; a file with
// none, or with one that does not parse, is an error.
func parseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate in the file")
	}
	return certs, nil
}

// encodeCertsPEM writes certificates as PEM, in order.
func encodeCertsPEM(certs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// encodeKeyPEM writes a private key as PKCS#8 PEM.
func encodeKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey reads a PEM private key: PKCS#8 (what arbor writes),
// or SEC 1 EC and PKCS#1 RSA keys (what openssl and other tools write), so
// a CA made elsewhere can sign too.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM private key in the file")
		}
		var k any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue // EC PARAMETERS and the like
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", block.Type, err)
		}
		signer, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("a %T cannot sign", k)
		}
		return signer, nil
	}
}

// serialNumber is a random 128-bit certificate serial.
func serialNumber() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Lifetimes of what `arbor certs init` issues.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	hostValidity = 825 * 24 * time.Hour // the longest that browsers and Go clients accept
)

// hostName matches what certs init accepts as a host: a DNS name or an IP
// address (checked separately); it also becomes a file name.
var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

// runCerts is `arbor certs init --dir D --hosts h1,h2,…`: a private CA,
// one certificate per host (for HTTPS and for mutual TLS between nodes)
// and a gossip key, laid out as the serve flags expect them:
//
//	--tls-ca D/ca.pem --tls-cert D/<host>.pem --tls-key D/<host>-key.pem --gossip-key D/gossip.key
//
// Run again with more hosts, it reuses the CA (D/ca-key.pem) and the
// gossip key and leaves existing certificates alone, so a node can be
// added later.
func runCerts(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "init" {
		fmt.Fprint(stderr, "Usage: arbor certs init --dir D --hosts h1,h2,h3\n")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return exitOK
		}
		return exitUsage
	}
	fset := flag.NewFlagSet("arbor certs init", flag.ContinueOnError)
	dir := fset.String("dir", "", "`directory` to write the files to (created, mode 0700)")
	var hosts commaList
	fset.Var(&hosts, "hosts", "comma-separated host `names` or IPs the nodes are reached at (their --advertise-host); one certificate each")
	fset.Usage = func() {
		fmt.Fprint(stderr, "Usage: arbor certs init --dir D --hosts h1,h2,h3\n\nWrites D/ca.pem, D/ca-key.pem, D/<host>.pem and D/<host>-key.pem per host, and D/gossip.key.\nEach host certificate is valid for the host and for localhost, 127.0.0.1 and ::1.\n\nFlags:\n")
		fset.PrintDefaults()
	}
	pos, code, ok := parseToolFlags(fset, args[1:], stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 || *dir == "" || len(hosts) == 0 {
		fset.Usage()
		return exitUsage
	}
	for _, h := range hosts {
		if net.ParseIP(h) == nil && !hostName.MatchString(h) {
			fmt.Fprintf(stderr, "arbor certs init: --hosts: %q is not a host name or IP address\n", h)
			return exitUsage
		}
	}
	if err := certsInit(*dir, hosts, time.Now(), stdout); err != nil {
		fmt.Fprintf(stderr, "arbor certs init: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// certsInit writes the files; see runCerts.
func certsInit(dir string, hosts []string, now time.Time, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, caKey, created, err := loadOrCreateCA(dir, now)
	if err != nil {
		return err
	}
	report := func(path, what string) { fmt.Fprintf(out, "%-8s %s\n", what, path) }
	if created {
		report(filepath.Join(dir, "ca.pem"), "wrote")
	} else {
		report(filepath.Join(dir, "ca.pem"), "reused")
	}
	for _, h := range hosts {
		certFile := filepath.Join(dir, h+".pem")
		if exists(certFile) {
			report(certFile, "kept")
			continue
		}
		certPEM, keyPEM, err := issueHost(ca, caKey, h, now)
		if err != nil {
			return fmt.Errorf("certificate for %s: %w", h, err)
		}
		if err := writeFileAtomic(filepath.Join(dir, h+"-key.pem"), keyPEM, 0o600); err != nil {
			return err
		}
		if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
			return err
		}
		report(certFile, "wrote")
	}
	keyFile := filepath.Join(dir, "gossip.key")
	if exists(keyFile) {
		report(keyFile, "kept")
	} else {
		key := make([]byte, gossipKeyLen)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		if err := writeFileAtomic(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
			return err
		}
		report(keyFile, "wrote")
	}
	fmt.Fprintf(out, "\nStart each node with:\n  --tls-ca %s --tls-cert %s --tls-key %s --gossip-key %s\n",
		filepath.Join(dir, "ca.pem"), filepath.Join(dir, "<host>.pem"), filepath.Join(dir, "<host>-key.pem"), keyFile)
	fmt.Fprintf(out, "Keep %s secret (it issues certificates the cluster trusts); clients trust %s.\n",
		filepath.Join(dir, "ca-key.pem"), filepath.Join(dir, "ca.pem"))
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// loadOrCreateCA reuses dir/ca.pem and dir/ca-key.pem, or creates them.
func loadOrCreateCA(dir string, now time.Time) (*x509.Certificate, crypto.Signer, bool, error) {
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	certPEM, err := os.ReadFile(certFile)
	switch {
	case err == nil:
		keyPEM, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, nil, false, fmt.Errorf("%s exists but its key cannot be read: %w", certFile, err)
		}
		ca, key, err := parseCA(certPEM, keyPEM)
		if err != nil {
			return nil, nil, false, fmt.Errorf("%s: %w", certFile, err)
		}
		return ca, key, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, false, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, false, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serialNumber(),
		Subject:               pkix.Name{Organization: []string{"Arbor"}, CommonName: "Arbor cluster CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, false, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, false, err
	}
	if err := writeFileAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, nil, false, err
	}
	if err := writeFileAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, false, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, true, err
}

// parseCA reads a CA certificate and its PKCS#8 key.
func parseCA(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("not PEM")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok || !ca.IsCA {
		return nil, nil, errors.New("not a CA certificate and key")
	}
	return ca, signer, nil
}

// issueHost makes a certificate for host (and the loopback names, so the
// node's own tools and local tests reach it) valid for serving and for
// client authentication between nodes.
func issueHost(ca *x509.Certificate, caKey crypto.Signer, host string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serialNumber(),
		Subject:      pkix.Name{Organization: []string{"Arbor"}, CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(hostValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range certHosts("", host) {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// serialNumber is a random 128-bit certificate serial.
func serialNumber() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

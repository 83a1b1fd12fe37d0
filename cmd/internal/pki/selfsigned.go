package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
	"github.com/arbordb/arbor/cmd/internal/selfsigned"
)

// selfSignedValidity is how long a generated certificate lasts; operators
// who need more should bring their own with --tls-cert/--tls-key.
const selfSignedValidity = 365 * 24 * time.Hour

// CertHosts lists the names a generated certificate is valid for: the
// loopback names, then the host name and the advertise host when known.
func CertHosts(hostname, advertiseHost string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	for _, h := range []string{hostname, advertiseHost} {
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// EnsureSelfSigned creates dir/cert.pem and dir/key.pem (an ECDSA P-256
// key, mode 0600) unless cert.pem already exists; it reports whether it
// created them. The key is written first and the certificate last, so a
// crash in between leaves no certificate and the next start starts over.
func EnsureSelfSigned(dir string, hosts []string, now time.Time) (bool, error) {
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if _, err := os.Stat(certFile); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	certPEM, keyPEM, err := NewSelfSigned(hosts, now)
	if err != nil {
		return false, err
	}
	if err := atomicfile.Write(keyFile, keyPEM, 0o600); err != nil {
		return false, fmt.Errorf("write key: %w", err)
	}
	if err := atomicfile.Write(certFile, certPEM, 0o644); err != nil {
		return false, fmt.Errorf("write certificate: %w", err)
	}
	return true, nil
}

// NewSelfSigned makes a self-signed server certificate for hosts, valid
// for selfSignedValidity (selfsigned.New).
func NewSelfSigned(hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	return selfsigned.New(hosts, now, selfSignedValidity)
}

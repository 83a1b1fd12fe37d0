package pki

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CheckInterval bounds how often a handshake looks at the files: a
// rotated certificate is served within about this long.
const CheckInterval = time.Second

// CertReloader serves a certificate pair from disk and picks up a new pair
// written over the files (cert-manager, an operator's rotation) without a
// restart. An unreadable or mismatched new pair is logged and the old
// certificate stays in service.
type CertReloader struct {
	certFile, keyFile string
	logger            *slog.Logger
	now               func() time.Time

	cert atomic.Pointer[tls.Certificate]

	// mu guards the fields below; handshakes only TryLock it, so at most
	// one of them stats the files and none ever waits for another.
	mu        sync.Mutex
	stamp     pairStamp
	nextCheck time.Time
}

// fileStamp identifies one version of a file cheaply.
type fileStamp struct {
	modTime int64 // nanoseconds, so stamps compare with ==
	size    int64
	missing bool
}

// pairStamp is the stamp of the certificate file and of the key file.
type pairStamp [2]fileStamp

// NewCertReloader loads the pair, failing if it is unusable, and logs its
// fingerprint.
func NewCertReloader(certFile, keyFile string, logger *slog.Logger) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile, logger: logger, now: time.Now}
	r.stamp = r.statPair()
	cert, err := loadPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	r.cert.Store(cert)
	r.nextCheck = r.now().Add(CheckInterval)
	r.logLoaded("TLS certificate loaded", cert)
	return r, nil
}

// GetCertificate is the tls.Config hook: it returns the current
// certificate after, at most once per CheckInterval, looking for a
// new one on disk.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if r.mu.TryLock() {
		if now := r.now(); !now.Before(r.nextCheck) {
			r.nextCheck = now.Add(CheckInterval)
			r.refresh()
		}
		r.mu.Unlock()
	}
	return r.cert.Load(), nil
}

// Leaf returns the parsed certificate being served.
func (r *CertReloader) Leaf() *x509.Certificate { return r.cert.Load().Leaf }

// refresh reloads the pair if either file changed since the last look.
// The new stamp is remembered even when loading fails, so a broken pair is
// reported once and retried only when the files change again (a rotation
// that writes the certificate and then the key succeeds on the second).
// r.mu must be held.
func (r *CertReloader) refresh() {
	stamp := r.statPair()
	if stamp == r.stamp {
		return
	}
	r.stamp = stamp
	cert, err := loadPair(r.certFile, r.keyFile)
	if err != nil {
		r.logger.Warn("TLS certificate changed on disk but cannot be used; still serving the previous one", "err", err)
		return
	}
	r.cert.Store(cert)
	r.logLoaded("TLS certificate reloaded", cert)
}

// statPair stamps both files.
func (r *CertReloader) statPair() pairStamp {
	return pairStamp{statFile(r.certFile), statFile(r.keyFile)}
}

// statFile stamps one file; a missing (or unreadable) file is a stamp of
// its own. os.Stat follows symbolic links, so a Kubernetes Secret volume,
// whose files are links swapped to a new directory on every update, is
// seen to change.
func statFile(name string) fileStamp {
	fi, err := os.Stat(name)
	if err != nil {
		return fileStamp{missing: true}
	}
	return fileStamp{modTime: fi.ModTime().UnixNano(), size: fi.Size()}
}

func (r *CertReloader) logLoaded(msg string, cert *tls.Certificate) {
	r.logger.Info(msg, "file", r.certFile, "sha256", fingerprint(cert.Leaf.Raw),
		"not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
}

// loadPair reads and checks a certificate and its key; the returned
// certificate has Leaf set.
func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &cert, nil
}

// fingerprint is the SHA-256 of a certificate's DER bytes written as
// colon-separated upper-case hex, the form `openssl x509 -fingerprint
// -sha256` prints, so an operator can compare what a client sees.
func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

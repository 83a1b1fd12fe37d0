package pki

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// CAReloader serves the --tls-ca pool from disk and picks up a new file
// (a CA rotation's bundle, then the new CA alone) without a restart, as
// CertReloader does for the node certificate. A file that cannot be used
// is logged as an error and the previous pool stays in service: a broken
// rollout must not shut every peer out.
type CAReloader struct {
	file   string
	logger *slog.Logger
	now    func() time.Time

	cur atomic.Pointer[caBundle]

	// mu guards the fields below; handshakes only TryLock it, so at most
	// one of them stats the file and none ever waits for another.
	mu        sync.Mutex
	stamp     fileStamp
	nextCheck time.Time
}

// caBundle is one version of the CA file.
type caBundle struct {
	pool  *x509.CertPool
	certs []*x509.Certificate
	// notAfter is the earliest expiry among certs: the date after which
	// some peer certificate the bundle is there to accept stops verifying.
	notAfter time.Time
}

// NewCAReloader loads file, failing if it holds no usable certificate.
func NewCAReloader(file string, logger *slog.Logger) (*CAReloader, error) {
	r := &CAReloader{file: file, logger: logger, now: time.Now}
	r.stamp = statFile(file)
	b, err := loadCABundle(file)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	r.cur.Store(b)
	r.nextCheck = r.now().Add(CheckInterval)
	r.logLoaded("TLS CA loaded", b)
	return r, nil
}

// Pool is cluster.TLSConfig.Roots: the current pool, after looking for a
// new file at most once per CheckInterval.
func (r *CAReloader) Pool() *x509.CertPool {
	if r.mu.TryLock() {
		if now := r.now(); !now.Before(r.nextCheck) {
			r.nextCheck = now.Add(CheckInterval)
			r.refresh()
		}
		r.mu.Unlock()
	}
	return r.cur.Load().pool
}

// notAfter is the earliest expiry of the CAs in use.
func (r *CAReloader) notAfter() time.Time { return r.cur.Load().notAfter }

// refresh reloads the file if it changed since the last look. As with the
// node certificate, a broken file is reported once and retried when it
// changes again. r.mu must be held.
func (r *CAReloader) refresh() {
	stamp := statFile(r.file)
	if stamp == r.stamp {
		return
	}
	r.stamp = stamp
	b, err := loadCABundle(r.file)
	if err != nil {
		r.logger.Error("TLS CA file changed on disk but cannot be used; still trusting the previous CAs", "file", r.file, "err", err)
		return
	}
	r.cur.Store(b)
	r.logLoaded("TLS CA reloaded", b)
}

// logLoaded names every CA now trusted by its fingerprint, so an operator
// can see a rotation step arrive (two fingerprints, then one).
func (r *CAReloader) logLoaded(msg string, b *caBundle) {
	fps := make([]string, len(b.certs))
	for i, c := range b.certs {
		fps[i] = fingerprint(c.Raw)
	}
	r.logger.Info(msg, "file", r.file, "certificates", len(b.certs), "sha256", fps,
		"not_after", b.notAfter.UTC().Format(time.RFC3339))
}

// loadCABundle reads every certificate of a PEM file into a pool.
func loadCABundle(file string) (*caBundle, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := parseCertsPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	b := &caBundle{pool: x509.NewCertPool(), certs: certs}
	for _, c := range certs {
		b.pool.AddCert(c)
		if b.notAfter.IsZero() || c.NotAfter.Before(b.notAfter) {
			b.notAfter = c.NotAfter
		}
	}
	return b, nil
}

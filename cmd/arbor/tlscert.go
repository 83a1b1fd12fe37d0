package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/arbordb/arbor/cmd/internal/pki"
)

// loadCertificates returns the certificate source for the HTTPS server:
// the --tls-cert/--tls-key pair, or else a self-signed pair kept in
// <data-dir>/tls and created on the first start.
func loadCertificates(cfg serveConfig, logger *slog.Logger) (*pki.CertReloader, error) {
	certFile, keyFile := cfg.TLSCert, cfg.TLSKey
	if certFile == "" {
		hostname, _ := os.Hostname()
		dir := filepath.Join(cfg.DataDir, "tls")
		created, err := pki.EnsureSelfSigned(dir, pki.CertHosts(hostname, cfg.AdvertiseHost), time.Now())
		if err != nil {
			return nil, fmt.Errorf("self-signed certificate: %w", err)
		}
		certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		if created {
			logger.Info("created a self-signed TLS certificate; clients must trust it or skip verification (curl -k)", "file", certFile)
		}
	}
	r, err := pki.NewCertReloader(certFile, keyFile, logger)
	if err != nil {
		return nil, err
	}
	if cfg.AdvertiseHost != "" {
		if err := r.Leaf().VerifyHostname(cfg.AdvertiseHost); err != nil {
			logger.Warn("the TLS certificate does not name the advertise host; peers and clients using it will fail verification",
				"advertise_host", cfg.AdvertiseHost, "err", err)
		}
	}
	return r, nil
}

package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/arbordb/arbor/cluster"
)

// clusterTLS builds the mutual TLS between nodes: this node presents the
// --tls-cert pair (rotated on disk like the HTTPS certificate, through the
// same reloader) and accepts peers whose certificates --tls-ca signed.
func clusterTLS(caFile string, certs *certReloader) (*cluster.TLSConfig, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in the file", caFile)
	}
	return &cluster.TLSConfig{
		RootCAs:     roots,
		Certificate: func() (*tls.Certificate, error) { return certs.GetCertificate(nil) },
	}, nil
}

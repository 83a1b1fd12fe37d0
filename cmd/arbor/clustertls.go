package main

import (
	"crypto/tls"

	"github.com/arbordb/arbor/cluster"
	"github.com/arbordb/arbor/cmd/internal/pki"
)

// clusterTLS builds the mutual TLS between nodes: this node presents the
// --tls-cert pair and accepts peers whose certificates a --tls-ca
// certificate signed. Both are read per handshake from reloaders that
// follow the files on disk, so certificates and CAs rotate without a
// restart (docs/OPERATIONS.md).
func clusterTLS(ca *pki.CAReloader, certs *pki.CertReloader) *cluster.TLSConfig {
	return &cluster.TLSConfig{
		Roots:       ca.Pool,
		Certificate: func() (*tls.Certificate, error) { return certs.GetCertificate(nil) },
	}
}

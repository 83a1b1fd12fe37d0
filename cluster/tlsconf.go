package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// serverTLS is the accepting side of mutual TLS between nodes: a client
// certificate is required and must chain to the cluster CA.
func (t *TLSConfig) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13, // both ends are Arbor nodes
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return t.Certificate() },
		// Verified by verifyPeer against the cluster CA, with any key
		// usage: operators' certificates often carry only serverAuth.
		ClientAuth:            tls.RequireAnyClientCert,
		VerifyPeerCertificate: t.verifyPeer,
	}
}

// clientTLS is the dialling side: it presents this node's certificate and
// accepts the peer's if it chains to the cluster CA.
func (t *TLSConfig) clientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return t.Certificate() },
		// The standard check would also match the host name against the
		// dialled Raft address, which certificates need not name (see
		// TLSConfig); verifyPeer does the CA check instead.
		InsecureSkipVerify:    true, //nolint:gosec // replaced by verifyPeer
		VerifyPeerCertificate: t.verifyPeer,
	}
}

// verifyPeer accepts a certificate chain only if it leads to RootCAs.
func (t *TLSConfig) verifyPeer(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return errors.New("peer sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, der := range raw {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("peer certificate: %w", err)
		}
		certs[i] = c
	}
	opts := x509.VerifyOptions{
		Roots:         t.RootCAs,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return fmt.Errorf("peer certificate not signed by the cluster CA: %w", err)
	}
	return nil
}

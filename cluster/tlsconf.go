package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// serverTLS is the accepting side of mutual TLS between nodes: a client
// certificate is required and must chain to the cluster CA as it is at
// the time of the handshake.
func (t *TLSConfig) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13, // both ends are Arbor nodes
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return t.Certificate() },
		// Verified by verifyPeer against the cluster CA, with any key
		// usage: operators' certificates often carry only serverAuth.
		ClientAuth:       tls.RequireAnyClientCert,
		VerifyConnection: t.verifyPeer,
		// Nodes never resume sessions (their clients keep no session
		// cache); tickets would only be bytes on every connection.
		SessionTicketsDisabled: true,
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
		// TLSConfig), and it could only use a pool fixed when the config
		// was built; verifyPeer does the CA check with the current pool.
		InsecureSkipVerify: true, //nolint:gosec // replaced by verifyPeer
		VerifyConnection:   t.verifyPeer,
	}
}

// verifyPeer accepts a connection only if the peer's certificate chain
// leads to one of the current Roots. It is a VerifyConnection hook rather
// than VerifyPeerCertificate because that one is skipped on resumed
// sessions: a certificate from a CA dropped since must not get back in
// that way.
func (t *TLSConfig) verifyPeer(cs tls.ConnectionState) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return errors.New("peer sent no certificate")
	}
	roots := t.Roots()
	if roots == nil {
		// An empty pool, never the system roots (what nil means to
		// x509): only the cluster's CA makes a member.
		roots = x509.NewCertPool()
	}
	opts := x509.VerifyOptions{
		Roots:         roots,
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

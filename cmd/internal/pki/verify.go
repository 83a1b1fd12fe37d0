package pki

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// CheckSignedBy requires the first certificate in certFile to chain to a
// CA in caFile, so a node with the wrong certificate fails at start rather
// than at every handshake with its peers.
func CheckSignedBy(certFile, caFile string) error {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return errors.New("no PEM certificate in the file")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("parse certificate: %w", err)
	}
	inter := x509.NewCertPool()
	inter.AppendCertsFromPEM(rest)
	opts := x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("not signed by --tls-ca %s: %w", caFile, err)
	}
	return nil
}

// CheckCAFile reports whether file holds the PEM CA certificates that
// --tls-ca needs (CAReloader reads it the same way).
func CheckCAFile(file string) error {
	_, err := loadCABundle(file)
	return err
}

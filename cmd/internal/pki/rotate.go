package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

// RotateCA is `arbor certs rotate-ca`, the first of the three steps that
// replace a cluster's CA without a moment in which two nodes distrust each
// other (docs/OPERATIONS.md):
//
//  1. RotateCA: a new CA; ca.pem holds the new and the old one, so a
//     node given it trusts certificates from either. Roll it out.
//  2. Renew: every node certificate from the new CA. Roll them out.
//  3. DropOldCA: ca.pem holds the new CA alone. Roll it out.
//
// Each step must have reached every node (and client) before the next.
// What it wrote and what to do next go to out.
func RotateCA(dir string, now time.Time, out io.Writer) error {
	if exists(filepath.Join(dir, oldCACertFile)) {
		return fmt.Errorf("a CA rotation is already under way (%s exists): finish it with --drop-old first", filepath.Join(dir, oldCACertFile))
	}
	if _, err := loadCA(dir); err != nil {
		return fmt.Errorf("the current CA: %w", err)
	}
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	oldCertPEM, err := os.ReadFile(certPath)
	if err != nil {
		return err
	}
	oldKeyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return err
	}
	next, newCertPEM, newKeyPEM, err := newCA(now, "Arbor cluster CA "+now.UTC().Format("2006-01-02 15:04:05"))
	if err != nil {
		return err
	}
	// The old CA is saved before anything is replaced; the bundle is
	// written last, once the key it names is in place.
	steps := []struct {
		path string
		data []byte
		perm os.FileMode
	}{
		{filepath.Join(dir, oldCAKeyFile), oldKeyPEM, 0o600},
		{filepath.Join(dir, oldCACertFile), oldCertPEM, 0o644},
		{keyPath, newKeyPEM, 0o600},
		{certPath, append(newCertPEM, oldCertPEM...), 0o644},
	}
	for _, s := range steps {
		if err := atomicfile.Write(s.path, s.data, s.perm); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "new CA   %s (valid until %s), in %s\n", next.cert.Subject.CommonName,
		next.cert.NotAfter.UTC().Format(time.DateOnly), keyPath)
	fmt.Fprintf(out, "saved    the old CA as %s and %s\n", filepath.Join(dir, oldCACertFile), filepath.Join(dir, oldCAKeyFile))
	fmt.Fprintf(out, "wrote    %s: the new and the old CA (a bundle)\n", certPath)
	fmt.Fprintf(out, "\nCA rotation, step 1 of 3: roll %s out to every node (on Kubernetes: update the Secret)\n"+
		"and to clients that verify with it; nodes trust both CAs within a second of the file changing.\n"+
		"Step 2, once every node has it: arbor certs renew --dir %s\n", certPath, dir)
	return nil
}

// DropOldCA is `arbor certs rotate-ca --drop-old`, step 3 (see RotateCA).
// It refuses while a node certificate in dir still comes from the old CA:
// that node would be shut out of the cluster.
func DropOldCA(dir string, out io.Writer) error {
	oldPath := filepath.Join(dir, oldCACertFile)
	if !exists(oldPath) {
		return fmt.Errorf("no CA rotation is under way (no %s); start one with arbor certs rotate-ca --dir %s", oldPath, dir)
	}
	ca, err := loadCA(dir)
	if err != nil {
		return fmt.Errorf("the new CA: %w", err)
	}
	hosts, err := nodeCertHosts(dir)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	var stale []string
	for _, h := range hosts {
		nc, err := readNodeCert(dir, h)
		if err != nil {
			return err
		}
		opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
		if _, err := nc.leaf.Verify(opts); err != nil {
			stale = append(stale, h)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("not signed by the new CA: %s; run arbor certs renew --dir %s, roll the certificates out, then run this again",
			strings.Join(stale, ", "), dir)
	}
	certPath := filepath.Join(dir, caCertFile)
	if err := atomicfile.Write(certPath, encodeCertsPEM(ca.cert), 0o644); err != nil {
		return err
	}
	for _, name := range []string{oldCACertFile, oldCAKeyFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	fmt.Fprintf(out, "wrote    %s: the new CA alone\nremoved  %s and %s\n", certPath, oldPath, filepath.Join(dir, oldCAKeyFile))
	fmt.Fprintf(out, "\nCA rotation, step 3 of 3: roll %s out to every node and to clients; from then on a\n"+
		"certificate of the old CA is refused.\n", certPath)
	return nil
}

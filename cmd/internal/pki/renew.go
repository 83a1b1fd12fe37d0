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

// Renew is `arbor certs renew`: every node certificate in dir (or those
// of hosts) issued again by dir's CA, with a new key, the same names plus
// extraNames, and a new validity, reporting each certificate to out as it
// is written. Nodes pick the files up without a restart.
func Renew(dir string, hosts, extraNames []string, now time.Time, out io.Writer) error {
	ca, err := loadCA(dir)
	if err != nil {
		return fmt.Errorf("the CA: %w", err)
	}
	if len(hosts) == 0 {
		if hosts, err = nodeCertHosts(dir); err != nil {
			return err
		}
		if len(hosts) == 0 {
			return fmt.Errorf("no node certificate (<host>.pem with <host>-key.pem) in %s; arbor certs init writes them", dir)
		}
	}
	// Read them all before writing any: a typo in --hosts must not leave
	// half of the certificates renewed.
	olds := make([]*nodeCert, len(hosts))
	for i, h := range hosts {
		if olds[i], err = readNodeCert(dir, h); err != nil {
			return err
		}
	}
	clampedAny := false
	for i, old := range olds {
		names := withNames(certNames(old.leaf), extraNames)
		cn := old.leaf.Subject.CommonName
		if cn == "" {
			cn = old.host
		}
		certPEM, keyPEM, leaf, clamped, err := ca.issue(cn, names, now)
		if err != nil {
			return fmt.Errorf("certificate for %s: %w", old.host, err)
		}
		if err := atomicfile.Write(filepath.Join(dir, old.host+"-key.pem"), keyPEM, 0o600); err != nil {
			return err
		}
		if err := atomicfile.Write(old.file, certPEM, 0o644); err != nil {
			return err
		}
		clampedAny = clampedAny || clamped
		fmt.Fprintf(out, "[%d/%d] renewed %s: valid until %s (was %s), names %s\n", i+1, len(olds), old.file,
			leaf.NotAfter.UTC().Format(time.DateOnly), old.leaf.NotAfter.UTC().Format(time.DateOnly), strings.Join(names, ", "))
	}
	if clampedAny {
		fmt.Fprintf(out, "\nThe CA expires on %s and no certificate it signs can outlive it: rotate it (arbor certs rotate-ca).\n",
			ca.cert.NotAfter.UTC().Format(time.DateOnly))
	}
	fmt.Fprint(out, "\nRoll the files out to the nodes (on Kubernetes: update the Secret); each node uses its new\n"+
		"certificate within a second of the files changing, without a restart.\n")
	if exists(filepath.Join(dir, oldCACertFile)) {
		fmt.Fprintf(out, "CA rotation, step 2 of 3: once every node runs its new certificate, finish with\n"+
			"  arbor certs rotate-ca --dir %s --drop-old\n", dir)
	}
	return nil
}

// nodeCert is a host's certificate as found in a certificate directory.
type nodeCert struct {
	host, file string
	leaf       *x509.Certificate
}

// readNodeCert reads dir/<host>.pem (its first certificate).
func readNodeCert(dir, host string) (*nodeCert, error) {
	file := filepath.Join(dir, host+".pem")
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no certificate for %s (%s); arbor certs init issues one", host, file)
	}
	if err != nil {
		return nil, err
	}
	certs, err := parseCertsPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &nodeCert{host: host, file: file, leaf: certs[0]}, nil
}

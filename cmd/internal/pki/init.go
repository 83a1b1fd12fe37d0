package pki

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

// Lifetimes of what the CA issues.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	hostValidity = 825 * 24 * time.Hour // the longest that browsers and Go clients accept
)

// Init is `arbor certs init`: a private CA, one certificate per host (for
// HTTPS and for mutual TLS between nodes, valid for the host, the loopback
// names and extraNames) and a gossip key, laid out as the serve flags
// expect them (see dir.go). With no hosts it writes the CA and the key
// alone. Inside a git work tree, dir/.gitignore keeps the keys out of git.
//
// Run again with more hosts, it reuses the CA (dir/ca-key.pem) and the
// gossip key and leaves existing certificates alone, so a node can be
// added later. It reports each file, then how to start a node, to out.
func Init(dir string, hosts, extraNames []string, now time.Time, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	report := func(what string, files ...string) {
		for _, f := range files {
			fmt.Fprintf(out, "%-8s %s\n", what, filepath.Join(dir, f))
		}
	}
	ignore, err := ignoreKeysInGit(dir)
	if err != nil {
		return err
	}
	if ignore != "" {
		report("wrote", ignore)
	}
	ca, created, err := loadOrCreateCA(dir, now)
	if err != nil {
		return err
	}
	if created {
		report("wrote", caKeyFile, caCertFile)
	} else {
		report("reused", caKeyFile, caCertFile)
	}
	for _, h := range hosts {
		if exists(filepath.Join(dir, h+".pem")) {
			report("kept", h+"-key.pem", h+".pem")
			continue
		}
		names := withNames(CertHosts("", h), extraNames)
		if err := writeNodeCert(dir, h, ca, h, names, now); err != nil {
			return err
		}
		report("wrote", h+"-key.pem", h+".pem")
	}
	keyFile := filepath.Join(dir, gossipKeyFile)
	if exists(keyFile) {
		report("kept", gossipKeyFile)
	} else {
		if _, err := addGossipKey(keyFile); err != nil {
			return err
		}
		report("wrote", gossipKeyFile)
	}
	caFile := filepath.Join(dir, caCertFile)
	switch len(hosts) {
	case 0:
		fmt.Fprintf(out, "\nIssue each node's certificate with this CA (cert-manager: deploy/README.md), then start it with:\n"+
			"  --tls-ca %s --tls-cert <its certificate> --tls-key <its key> --gossip-key %s\n", caFile, keyFile)
	case 1:
		h := hosts[0]
		fmt.Fprintf(out, "\nStart the node with:\n  --tls-ca %s --tls-cert %s --tls-key %s --gossip-key %s\n",
			caFile, filepath.Join(dir, h+".pem"), filepath.Join(dir, h+"-key.pem"), keyFile)
	default:
		fmt.Fprintf(out, "\nStart each node, <host> one of %s, with:\n  --tls-ca %s --tls-cert %s --tls-key %s --gossip-key %s\n",
			strings.Join(hosts, ", "), caFile, filepath.Join(dir, "<host>.pem"), filepath.Join(dir, "<host>-key.pem"), keyFile)
	}
	fmt.Fprintf(out, "Keep %s secret (it issues certificates the cluster trusts); clients trust %s.\n",
		filepath.Join(dir, caKeyFile), caFile)
	return nil
}

// writeNodeCert issues host's certificate and writes it and its key to
// dir/<host>.pem and dir/<host>-key.pem. The key goes first: a node that
// reloads in between sees a mismatched pair, keeps its old one and takes
// the new pair when the certificate lands (CertReloader).
func writeNodeCert(dir, host string, ca certAuthority, commonName string, names []string, now time.Time) error {
	certPEM, keyPEM, _, _, err := ca.issue(commonName, names, now)
	if err != nil {
		return fmt.Errorf("certificate for %s: %w", host, err)
	}
	if err := atomicfile.Write(filepath.Join(dir, host+"-key.pem"), keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, host+".pem"), certPEM, 0o644)
}

// withNames appends to names the extra ones it lacks (compared without
// regard to case, as DNS does).
func withNames(names, extra []string) []string {
	out := slices.Clone(names)
	for _, e := range extra {
		if !slices.ContainsFunc(out, func(n string) bool { return strings.EqualFold(n, e) }) {
			out = append(out, e)
		}
	}
	return out
}

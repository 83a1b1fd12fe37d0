package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Lifetimes of what `arbor certs` issues.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	hostValidity = 825 * 24 * time.Hour // the longest that browsers and Go clients accept
)

// hostName matches what certs accepts as a host or an extra name: a DNS
// name or an IP address (checked separately); a host also becomes a file
// name.
var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

// certsUsage lists the certs subcommands.
const certsUsage = `Usage:
  arbor certs init --dir D --hosts h1,h2,h3 [--dns name]...  a CA, one certificate per host (localhost without --hosts), a gossip key
  arbor certs renew --dir D [--hosts h1,h2] [--dns name]...   new node certificates from the CA, same names
  arbor certs rotate-ca --dir D [--drop-old]                  a new CA trusted beside the old one; later, drop the old
  arbor certs gossip-key --dir D [--promote | --drop-old]     add a gossip key; make it the one in use; drop the old

Every command prints what it wrote and what to roll out next; rotations
are described in docs/OPERATIONS.md. "arbor certs <command> -h" lists its flags.
`

// runCerts dispatches `arbor certs <command>`.
func runCerts(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, certsUsage)
		return exitUsage
	}
	switch args[0] {
	case "init":
		return runCertsInit(args[1:], stdout, stderr)
	case "renew":
		return runCertsRenew(args[1:], stdout, stderr)
	case "rotate-ca":
		return runCertsRotateCA(args[1:], stdout, stderr)
	case "gossip-key":
		return runCertsGossipKey(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, certsUsage)
		return exitOK
	}
	return usageMistake(stderr, "arbor certs", "unknown command %q: want init, renew, rotate-ca or gossip-key", args[0])
}

// certsFlags are the flags the certs commands share.
type certsFlags struct {
	dir   string
	hosts commaList
	dns   commaList
}

// newCertsFlagSet makes the flag set of `arbor certs <name>` with --dir,
// and --hosts and --dns when withNames.
func newCertsFlagSet(name, usage string, f *certsFlags, withNames bool, stderr io.Writer) *flag.FlagSet {
	fset := flag.NewFlagSet("arbor certs "+name, flag.ContinueOnError)
	fset.StringVar(&f.dir, "dir", "", "certificate `directory` (created by init, mode 0700)")
	if withNames {
		fset.Var(&f.hosts, "hosts", "comma-separated host `names` or IPs the nodes are reached at (their --advertise-host); one certificate each")
		fset.Var(&f.dns, "dns", "an extra `name` (DNS name or IP) every node certificate is also valid for, such as the client Service's arbor.<namespace>.svc; repeatable or comma-separated")
	}
	fset.Usage = func() {
		fmt.Fprint(stderr, usage, "\nFlags:\n")
		fset.PrintDefaults()
	}
	return fset
}

// parseCertsFlags parses args and checks --dir and the names; the bool
// is false when the command must stop with code.
func parseCertsFlags(fset *flag.FlagSet, f *certsFlags, args []string, stderr io.Writer) (int, bool) {
	pos, code, ok := parseToolFlags(fset, args, stderr)
	if !ok {
		return code, false
	}
	if len(pos) > 0 {
		return usageMistake(stderr, fset.Name(), "unexpected argument %q", pos[0]), false
	}
	if f.dir == "" {
		return usageMistake(stderr, fset.Name(), "--dir is required: the certificate directory"), false
	}
	for _, list := range []struct {
		flag  string
		names []string
	}{{"--hosts", f.hosts}, {"--dns", f.dns}} {
		for _, h := range list.names {
			if net.ParseIP(h) == nil && !hostName.MatchString(h) {
				return usageMistake(stderr, fset.Name(), "%s %q: not a host name or IP address", list.flag, h), false
			}
		}
	}
	return 0, true
}

// runCertsInit is `arbor certs init --dir D --hosts h1,h2,…`: a private
// CA, one certificate per host (for HTTPS and for mutual TLS between
// nodes) and a gossip key, laid out as the serve flags expect them (see
// certsdir.go). Without --hosts the one host is localhost, for a first
// cluster on one machine; --ca-only writes the CA and the key alone.
//
// Run again with more hosts, it reuses the CA (D/ca-key.pem) and the
// gossip key and leaves existing certificates alone, so a node can be
// added later.
func runCertsInit(args []string, stdout, stderr io.Writer) int {
	var f certsFlags
	fset := newCertsFlagSet("init", "Usage: arbor certs init --dir D [--hosts h1,h2,h3] [--dns name]... [--ca-only]\n\n"+
		"Writes D/ca.pem, D/ca-key.pem, D/<host>.pem and D/<host>-key.pem per host, and D/gossip.key;\n"+
		"without --hosts, the one host is localhost. Each host certificate is valid for the host, for\n"+
		"localhost, 127.0.0.1 and ::1, and for the --dns names. Inside a git work tree, D/.gitignore\n"+
		"keeps the keys out of git.\n", &f, true, stderr)
	caOnly := fset.Bool("ca-only", false, "write only the CA and the gossip key (for a CA that cert-manager or another tool signs node certificates with)")
	if code, ok := parseCertsFlags(fset, &f, args, stderr); !ok {
		return code
	}
	hosts := []string(f.hosts)
	switch {
	case *caOnly && (len(hosts) > 0 || len(f.dns) > 0):
		return usageMistake(stderr, fset.Name(), "--ca-only writes no node certificate: give it without --hosts and --dns")
	case !*caOnly && len(hosts) == 0:
		hosts = []string{"localhost"}
	}
	if err := certsInit(f.dir, hosts, f.dns, time.Now(), stdout); err != nil {
		fmt.Fprintf(stderr, "arbor certs init: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// certsInit writes the files; see runCertsInit.
func certsInit(dir string, hosts, extraNames []string, now time.Time, out io.Writer) error {
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
		names := withNames(certHosts("", h), extraNames)
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
// the new pair when the certificate lands (certReloader).
func writeNodeCert(dir, host string, ca certAuthority, commonName string, names []string, now time.Time) error {
	certPEM, keyPEM, _, _, err := ca.issue(commonName, names, now)
	if err != nil {
		return fmt.Errorf("certificate for %s: %w", host, err)
	}
	if err := writeFileAtomic(filepath.Join(dir, host+"-key.pem"), keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, host+".pem"), certPEM, 0o644)
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

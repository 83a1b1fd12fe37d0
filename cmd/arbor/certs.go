package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"regexp"
	"time"

	"github.com/arbordb/arbor/cmd/internal/pki"
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

// runCertsInit is `arbor certs init --dir D --hosts h1,h2,…` (pki.Init).
// Without --hosts the one host is localhost, for a first cluster on one
// machine; --ca-only writes the CA and the key alone.
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
	if err := pki.Init(f.dir, hosts, f.dns, time.Now(), stdout); err != nil {
		fmt.Fprintf(stderr, "arbor certs init: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// runCertsRenew is `arbor certs renew --dir D [--hosts h1,h2] [--dns n]`:
// every node certificate in D (or the --hosts ones) issued again by D's
// CA, with a new key, the same names plus the --dns ones, and a new
// validity. Nodes pick the files up without a restart.
func runCertsRenew(args []string, stdout, stderr io.Writer) int {
	var f certsFlags
	fset := newCertsFlagSet("renew", "Usage: arbor certs renew --dir D [--hosts h1,h2] [--dns name]...\n\n"+
		"Issues D/<host>.pem and D/<host>-key.pem again from the CA in D (ca.pem, ca-key.pem), for every\n"+
		"host that has them or only the --hosts ones: a new key, the names of the old certificate plus the\n"+
		"--dns ones, valid for another 825 days (at most until the CA expires).\n", &f, true, stderr)
	if code, ok := parseCertsFlags(fset, &f, args, stderr); !ok {
		return code
	}
	if err := pki.Renew(f.dir, f.hosts, f.dns, time.Now(), stdout); err != nil {
		fmt.Fprintf(stderr, "arbor certs renew: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// runCertsRotateCA is `arbor certs rotate-ca --dir D [--drop-old]`, the
// first and last of the three steps that replace a cluster's CA without
// a moment in which two nodes distrust each other (docs/OPERATIONS.md):
//
//  1. rotate-ca: a new CA; ca.pem holds the new and the old one, so a
//     node given it trusts certificates from either. Roll it out.
//  2. renew: every node certificate from the new CA. Roll them out.
//  3. rotate-ca --drop-old: ca.pem holds the new CA alone. Roll it out.
//
// Each step must have reached every node (and client) before the next.
func runCertsRotateCA(args []string, stdout, stderr io.Writer) int {
	var f certsFlags
	fset := newCertsFlagSet("rotate-ca", "Usage: arbor certs rotate-ca --dir D [--drop-old]\n\n"+
		"Without --drop-old: creates a new CA in D (ca-key.pem), keeps the old one as ca-old.pem and\n"+
		"ca-old-key.pem, and makes ca.pem a bundle of the new and the old CA. With --drop-old, once every\n"+
		"node certificate in D comes from the new CA (arbor certs renew): ca.pem holds the new CA alone\n"+
		"and the old CA's files go.\n", &f, false, stderr)
	dropOld := fset.Bool("drop-old", false, "end a rotation: the old CA is no longer trusted")
	if code, ok := parseCertsFlags(fset, &f, args, stderr); !ok {
		return code
	}
	run := func() error { return pki.RotateCA(f.dir, time.Now(), stdout) }
	if *dropOld {
		run = func() error { return pki.DropOldCA(f.dir, stdout) }
	}
	if err := run(); err != nil {
		fmt.Fprintf(stderr, "arbor certs rotate-ca: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// runCertsGossipKey is `arbor certs gossip-key --dir D [--promote |
// --drop-old]`, the three steps that change the gossip key without a
// moment in which two nodes cannot read each other (docs/OPERATIONS.md):
//
//  1. gossip-key: a new key, last in D/gossip.key: nodes accept it but
//     still seal with the first. Roll it out.
//  2. --promote: the new key first: nodes seal with it and still accept
//     the old one. Roll it out.
//  3. --drop-old: the new key alone. Roll it out.
//
// Nodes re-read the file within a second of it changing.
func runCertsGossipKey(args []string, stdout, stderr io.Writer) int {
	var f certsFlags
	fset := newCertsFlagSet("gossip-key", "Usage: arbor certs gossip-key --dir D [--promote | --drop-old]\n\n"+
		"D/gossip.key holds the gossip keys, one per line: nodes seal gossip with the first and accept all.\n"+
		"Without flags: adds a new key at the end (creating the file if need be). --promote moves the last\n"+
		"key to the front. --drop-old keeps the first key alone.\n", &f, false, stderr)
	promote := fset.Bool("promote", false, "make the newest key (the last) the one gossip is sealed with")
	dropOld := fset.Bool("drop-old", false, "keep only the key in use (the first)")
	if code, ok := parseCertsFlags(fset, &f, args, stderr); !ok {
		return code
	}
	if *promote && *dropOld {
		fmt.Fprintln(stderr, "arbor certs gossip-key: --promote and --drop-old are separate steps; give one")
		return exitUsage
	}
	step := pki.GossipKeyAdd
	switch {
	case *promote:
		step = pki.GossipKeyPromote
	case *dropOld:
		step = pki.GossipKeyDropOld
	}
	if err := pki.RotateGossipKey(f.dir, step, stdout); err != nil {
		fmt.Fprintf(stderr, "arbor certs gossip-key: %v\n", err)
		return exitFailure
	}
	return exitOK
}

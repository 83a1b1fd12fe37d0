package main

import (
	"fmt"
	"io"
	"time"

	"github.com/arbordb/arbor/cmd/internal/pki"
)

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

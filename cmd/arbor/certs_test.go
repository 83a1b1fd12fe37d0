package main

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The operations behind `arbor certs` are tested in cmd/internal/pki;
// these tests cover the command line: flags, defaults and exit codes.

// runCertsCmd runs `arbor certs args…` and fails the test unless it exits
// with want; it returns the standard output.
func runCertsCmd(t *testing.T, want int, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(append([]string{"certs"}, args...), &out, &errOut); code != want {
		t.Fatalf("arbor certs %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out.String(), errOut.String())
	}
	return out.String() + errOut.String()
}

func TestCertsUsage(t *testing.T) {
	runCertsCmd(t, exitUsage)
	runCertsCmd(t, exitUsage, "frobnicate")
	if out := runCertsCmd(t, exitOK, "help"); !strings.Contains(out, "rotate-ca") || !strings.Contains(out, "gossip-key") {
		t.Errorf("help:\n%s", out)
	}
	runCertsCmd(t, exitOK, "renew", "-h")
	runCertsCmd(t, exitUsage, "rotate-ca", "--dir", t.TempDir(), "extra")
}

// TestCertsFlagMistakes: bad names and flags are usage mistakes, and
// nothing is written.
func TestCertsFlagMistakes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	runCertsCmd(t, exitUsage, "init", "--dir", dir, "--hosts", "../evil")
	runCertsCmd(t, exitUsage, "init", "--dir", dir, "--hosts", "n2", "--dns", "bad name")
	runCertsCmd(t, exitUsage, "init", "--dir", dir, "--ca-only", "--hosts", "n1")
	runCertsCmd(t, exitUsage, "init", "--hosts", "n1")
	runCertsCmd(t, exitUsage, "renew")
	runCertsCmd(t, exitUsage, "gossip-key", "--dir", dir, "--promote", "--drop-old")
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a usage mistake created %s", dir)
	}
}

// TestCertsInitWithoutHosts: without --hosts the one host is localhost.
func TestCertsInitWithoutHosts(t *testing.T) {
	dir := t.TempDir()
	out := runCertsCmd(t, exitOK, "init", "--dir", dir)
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "localhost.pem"), filepath.Join(dir, "localhost-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.Leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if !strings.Contains(out, "Start the node with:") {
		t.Errorf("output:\n%s", out)
	}
}

// TestCertsCommands runs every command once the way an operator does,
// so each flag reaches its operation: --dns repeated and comma-separated,
// --ca-only, --hosts, --drop-old, --promote; a failed operation exits
// with exitFailure.
func TestCertsCommands(t *testing.T) {
	caOnly := t.TempDir()
	runCertsCmd(t, exitOK, "init", "--dir", caOnly, "--ca-only")
	if entries, _ := os.ReadDir(caOnly); len(entries) != 3 {
		t.Errorf("--ca-only wrote %d files, want ca.pem, ca-key.pem and gossip.key", len(entries))
	}

	dir := t.TempDir()
	runCertsCmd(t, exitOK, "init", "--dir", dir, "--hosts", "n1,n2", "--dns", "a.svc", "--dns", "b.svc,10.9.8.7")
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "n2.pem"), filepath.Join(dir, "n2-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"n2", "a.svc", "b.svc", "10.9.8.7"} {
		if err := pair.Leaf.VerifyHostname(name); err != nil {
			t.Errorf("n2: %v", err)
		}
	}
	runCertsCmd(t, exitFailure, "rotate-ca", "--dir", dir, "--drop-old") // nothing under way
	runCertsCmd(t, exitOK, "rotate-ca", "--dir", dir)
	if out := runCertsCmd(t, exitOK, "renew", "--dir", dir, "--hosts", "n1"); !strings.Contains(out, "[1/1] renewed") {
		t.Errorf("renew --hosts n1:\n%s", out)
	}
	if out := runCertsCmd(t, exitFailure, "rotate-ca", "--dir", dir, "--drop-old"); !strings.Contains(out, "arbor certs rotate-ca: not signed by the new CA: n2") {
		t.Errorf("drop-old with n2 still old:\n%s", out)
	}
	runCertsCmd(t, exitOK, "renew", "--dir", dir)
	runCertsCmd(t, exitOK, "rotate-ca", "--dir", dir, "--drop-old")

	runCertsCmd(t, exitFailure, "gossip-key", "--dir", dir, "--drop-old") // one key: nothing to drop
	for _, step := range [][]string{nil, {"--promote"}, {"--drop-old"}} {
		out := runCertsCmd(t, exitOK, slices.Concat([]string{"gossip-key", "--dir", dir}, step)...)
		if !strings.Contains(out, "in use (seals gossip)") {
			t.Errorf("gossip-key %v:\n%s", step, out)
		}
	}
}

package pki

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRotateCA walks the three steps and checks, after each, what a
// node holding the files would trust and present: at no step does a node
// that has the new files distrust one that still has the previous ones.
func TestRotateCA(t *testing.T) {
	dir := t.TempDir()
	mustInit(t, dir, "n1", "n2")
	rotate := func(out io.Writer) error { return RotateCA(dir, time.Now(), out) }
	dropOld := func(out io.Writer) error { return DropOldCA(dir, out) }
	caFile := filepath.Join(dir, "ca.pem")
	oldRoots := poolOf(t, caFile)
	oldLeaf := loadNodePair(t, dir, "n1")
	runStep(t, true, dropOld) // nothing under way

	// Step 1: the bundle trusts the old and the new CA.
	out := runStep(t, false, rotate)
	if !strings.Contains(out, "step 1 of 3") || !strings.Contains(out, "arbor certs renew --dir") {
		t.Errorf("step 1 output:\n%s", out)
	}
	bundle, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := parseCertsPEM(bundle)
	if err != nil || len(certs) != 2 {
		t.Fatalf("ca.pem after rotate-ca: %d certificates, %v", len(certs), err)
	}
	for _, f := range []string{"ca-old.pem", "ca-old-key.pem"} {
		if !exists(filepath.Join(dir, f)) {
			t.Errorf("%s missing", f)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "ca-old-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("ca-old-key.pem mode %v, %v", fi.Mode(), err)
	}
	ca, err := loadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(ca.cert.Raw, certs[1].Raw) || !bytes.Equal(ca.cert.Raw, certs[0].Raw) {
		t.Error("the CA that signs is not the new one, first in the bundle")
	}
	bundleRoots := poolOf(t, caFile)
	if err := verifies(oldLeaf, bundleRoots, "n1"); err != nil {
		t.Errorf("the bundle does not trust the old node certificate: %v", err)
	}
	if err := CheckSignedBy(filepath.Join(dir, "n1.pem"), caFile); err != nil {
		t.Errorf("serve's start-up check refuses the bundle: %v", err)
	}
	runStep(t, true, rotate)        // already under way
	out = runStep(t, true, dropOld) // node certificates still old
	if !strings.Contains(out, "n1, n2") {
		t.Errorf("drop-old before renew names no stale certificate:\n%s", out)
	}

	// Step 2: node certificates from the new CA, trusted by the bundle
	// (nodes that have it) and refused by the old CA alone.
	out = runStep(t, false, renewStep(dir, nil, nil))
	if !strings.Contains(out, "step 2 of 3") {
		t.Errorf("renew during a rotation does not say so:\n%s", out)
	}
	newLeaf := loadNodePair(t, dir, "n1")
	if err := verifies(newLeaf, bundleRoots, "n1"); err != nil {
		t.Errorf("the bundle does not trust the new node certificate: %v", err)
	}
	if verifies(newLeaf, oldRoots, "n1") == nil {
		t.Error("the new node certificate verifies against the old CA alone")
	}

	// Step 3: the new CA alone.
	out = runStep(t, false, dropOld)
	if !strings.Contains(out, "step 3 of 3") {
		t.Errorf("step 3 output:\n%s", out)
	}
	final, _ := os.ReadFile(caFile)
	if certs, err := parseCertsPEM(final); err != nil || len(certs) != 1 || !bytes.Equal(certs[0].Raw, ca.cert.Raw) {
		t.Fatalf("ca.pem after drop-old: %d certificates, %v", len(certs), err)
	}
	newRoots := poolOf(t, caFile)
	if err := verifies(newLeaf, newRoots, "n1"); err != nil {
		t.Errorf("new CA alone refuses the new certificate: %v", err)
	}
	if verifies(oldLeaf, newRoots, "n1") == nil {
		t.Error("the old node certificate is still trusted after drop-old")
	}
	for _, f := range []string{"ca-old.pem", "ca-old-key.pem"} {
		if exists(filepath.Join(dir, f)) {
			t.Errorf("%s left behind", f)
		}
	}
	// The directory works as before: a new host is signed by the new CA.
	mustInit(t, dir, "n3")
	if err := verifies(loadNodePair(t, dir, "n3"), newRoots, "n3"); err != nil {
		t.Errorf("n3 after the rotation: %v", err)
	}
}

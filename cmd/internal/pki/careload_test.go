package pki

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

// writeCA writes a fresh CA certificate (or several, a bundle) to file
// and returns them.
func writeCA(t *testing.T, file string, n int) []certAuthority {
	t.Helper()
	var cas []certAuthority
	var data []byte
	for i := 0; i < n; i++ {
		ca, certPEM, _, err := newCA(time.Now(), "test CA")
		if err != nil {
			t.Fatal(err)
		}
		cas = append(cas, ca)
		data = append(data, certPEM...)
	}
	if err := atomicfile.Write(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return cas
}

// trusts reports whether pool accepts a certificate issued by ca.
func trusts(t *testing.T, r *CAReloader, ca certAuthority) bool {
	t.Helper()
	_, _, leaf, _, err := ca.issue("n1", []string{"n1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return verifies(leaf, r.Pool(), "n1") == nil
}

func TestCAReloader(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ca.pem")
	first := writeCA(t, file, 1)[0]
	var logs bytes.Buffer
	r, err := NewCAReloader(file, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Now()}
	r.now = clock.now
	r.nextCheck = clock.t.Add(CheckInterval)
	if !trusts(t, r, first) || !r.notAfter().Equal(first.cert.NotAfter) {
		t.Fatal("the first CA is not in use")
	}

	// A bundle (step 1 of a rotation) is used after the check interval,
	// not before.
	bundle := writeCA(t, file, 2)
	bumpMtime(t, file, 1)
	if trusts(t, r, bundle[0]) {
		t.Fatal("looked at the file before the check interval passed")
	}
	clock.t = clock.t.Add(CheckInterval)
	if !trusts(t, r, bundle[0]) || !trusts(t, r, bundle[1]) || trusts(t, r, first) {
		t.Fatal("the bundle is not what is trusted after the check interval")
	}
	earliest := bundle[0].cert.NotAfter
	if bundle[1].cert.NotAfter.Before(earliest) {
		earliest = bundle[1].cert.NotAfter
	}
	if !r.notAfter().Equal(earliest) {
		t.Errorf("expiry %s, want the earliest of the bundle, %s", r.notAfter(), earliest)
	}

	// A broken file keeps the pool and logs an error; so does a missing one.
	for i, breakIt := range []func(){
		func() {
			_ = os.WriteFile(file, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), 0o644)
		},
		func() { _ = os.WriteFile(file, []byte("garbage"), 0o644) },
		func() { _ = os.Remove(file) },
	} {
		logs.Reset()
		breakIt()
		if i < 2 {
			bumpMtime(t, file, 2+i)
		}
		clock.t = clock.t.Add(CheckInterval)
		if !trusts(t, r, bundle[0]) || !trusts(t, r, bundle[1]) {
			t.Fatalf("case %d: a broken CA file replaced the working pool", i)
		}
		if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "still trusting the previous CAs") {
			t.Errorf("case %d: log:\n%s", i, logs.String())
		}
	}
	// Step 3: the new CA alone.
	last := writeCA(t, file, 1)[0]
	clock.t = clock.t.Add(CheckInterval)
	if !trusts(t, r, last) || trusts(t, r, bundle[1]) {
		t.Fatal("the repaired file is not what is trusted")
	}
	if _, err := NewCAReloader(filepath.Join(dir, "none.pem"), slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a missing CA file at start was accepted")
	}
}

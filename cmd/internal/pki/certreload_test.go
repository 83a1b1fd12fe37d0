package pki

import (
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

// fakeClock is a settable clock for the reloader's check interval.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func writePair(t *testing.T, certFile, keyFile string) []byte {
	t.Helper()
	certPEM, keyPEM, err := NewSelfSigned([]string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf.Raw
}

func served(t *testing.T, r *CertReloader) []byte {
	t.Helper()
	c, err := r.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf.Raw
}

func TestCertReloaderPicksUpNewPair(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := writePair(t, certFile, keyFile)
	r, err := NewCertReloader(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Now()}
	r.now = clock.now
	r.nextCheck = clock.t.Add(CheckInterval)

	second := writePair(t, certFile, keyFile)
	if got := served(t, r); string(got) != string(first) {
		t.Fatal("looked at the files before the check interval passed")
	}
	clock.t = clock.t.Add(CheckInterval)
	if got := served(t, r); string(got) != string(second) {
		t.Fatal("new pair not served after the check interval")
	}

	// A broken pair (a key that does not match) keeps the old one in use.
	otherKeyDir := t.TempDir()
	writePair(t, filepath.Join(otherKeyDir, "c"), keyFile)
	clock.t = clock.t.Add(CheckInterval)
	if got := served(t, r); string(got) != string(second) {
		t.Fatal("a mismatched pair replaced the working one")
	}
	// A missing file too.
	if err := os.Remove(certFile); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(CheckInterval)
	if got := served(t, r); string(got) != string(second) {
		t.Fatal("a missing certificate replaced the working one")
	}
	// Once a good pair is back, it is served.
	third := writePair(t, certFile, keyFile)
	clock.t = clock.t.Add(CheckInterval)
	if got := served(t, r); string(got) != string(third) {
		t.Fatal("a repaired pair was not picked up")
	}
}

func TestCertReloaderRejectsBadPairAtStart(t *testing.T) {
	dir := t.TempDir()
	_, err := NewCertReloader(filepath.Join(dir, "none.pem"), filepath.Join(dir, "none.key"), slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("want an error for missing files")
	}
}

func TestFingerprint(t *testing.T) {
	// sha256("") is e3b0c442…b855.
	got := fingerprint(nil)
	if want := "E3:B0:C4:42:98:FC:1C:14:9A:FB:F4:C8:99:6F:B9:24:27:AE:41:E4:64:9B:93:4C:A4:95:99:1B:78:52:B8:55"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// runStep runs one certs operation and fails the test unless it fails
// when wantErr and succeeds otherwise; it returns what the operation
// wrote followed by its error, as `arbor certs` would print them.
func runStep(t *testing.T, wantErr bool, op func(out io.Writer) error) string {
	t.Helper()
	var out bytes.Buffer
	err := op(&out)
	if (err != nil) != wantErr {
		t.Fatalf("error %v, want one: %v\noutput:\n%s", err, wantErr, out.String())
	}
	if err != nil {
		out.WriteString(err.Error())
	}
	return out.String()
}

// mustInit runs Init for hosts.
func mustInit(t *testing.T, dir string, hosts ...string) {
	t.Helper()
	runStep(t, false, func(out io.Writer) error { return Init(dir, hosts, nil, time.Now(), out) })
}

// renewStep is Renew now, as a step for runStep.
func renewStep(dir string, hosts, extraNames []string) func(io.Writer) error {
	return func(out io.Writer) error { return Renew(dir, hosts, extraNames, time.Now(), out) }
}

// loadNodePair loads dir/<host>.pem with its key; a mismatch fails.
func loadNodePair(t *testing.T, dir, host string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, host+".pem"), filepath.Join(dir, host+"-key.pem"))
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return pair.Leaf
}

// poolOf reads a PEM file into a pool.
func poolOf(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatalf("%s: no certificate", file)
	}
	return pool
}

func verifies(leaf *x509.Certificate, roots *x509.CertPool, name string) error {
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}

func TestInitWithServiceNames(t *testing.T) {
	dir := t.TempDir()
	runStep(t, false, func(out io.Writer) error {
		return Init(dir, []string{"n1"}, []string{"arbor.ns.svc", "arbor.ns.svc.cluster.local", "10.9.8.7"}, time.Now(), out)
	})
	leaf := loadNodePair(t, dir, "n1")
	if want := []string{"n1", "localhost", "arbor.ns.svc", "arbor.ns.svc.cluster.local"}; !sameSet(leaf.DNSNames, want) {
		t.Errorf("DNS names %q, want %q", leaf.DNSNames, want)
	}
	roots := poolOf(t, filepath.Join(dir, "ca.pem"))
	for _, name := range []string{"arbor.ns.svc", "10.9.8.7", "n1"} {
		if err := verifies(leaf, roots, name); err != nil {
			t.Errorf("verify as %s: %v", name, err)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestRenew(t *testing.T) {
	dir := t.TempDir()
	mustInit(t, dir, "n1", "n2", "10.0.0.3")
	before := map[string]*x509.Certificate{}
	keys := map[string][]byte{}
	for _, h := range []string{"n1", "n2", "10.0.0.3"} {
		before[h] = loadNodePair(t, dir, h)
		keys[h], _ = os.ReadFile(filepath.Join(dir, h+"-key.pem"))
	}
	caBefore, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))

	out := runStep(t, false, renewStep(dir, nil, []string{"arbor.arbor.svc"}))
	for _, want := range []string{"[1/3] renewed", "[3/3] renewed", "arbor.arbor.svc", "valid until"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	roots := poolOf(t, filepath.Join(dir, "ca.pem"))
	for h, old := range before {
		leaf := loadNodePair(t, dir, h)
		if leaf.SerialNumber.Cmp(old.SerialNumber) == 0 {
			t.Errorf("%s: not renewed", h)
		}
		if k, _ := os.ReadFile(filepath.Join(dir, h+"-key.pem")); bytes.Equal(k, keys[h]) {
			t.Errorf("%s: the key was kept; a renewal makes a new one", h)
		}
		if want := append(certNames(old), "arbor.arbor.svc"); !sameSet(certNames(leaf), want) {
			t.Errorf("%s: names %q, want %q", h, certNames(leaf), want)
		}
		if leaf.Subject.CommonName != old.Subject.CommonName {
			t.Errorf("%s: common name %q, was %q", h, leaf.Subject.CommonName, old.Subject.CommonName)
		}
		if err := verifies(leaf, roots, "arbor.arbor.svc"); err != nil {
			t.Errorf("%s: %v", h, err)
		}
		if fi, err := os.Stat(filepath.Join(dir, h+"-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: key file mode %v, %v", h, fi.Mode(), err)
		}
	}
	if caAfter, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); !bytes.Equal(caBefore, caAfter) {
		t.Error("renew changed the CA")
	}

	// --hosts renews only those; a name renewed again is not repeated.
	n2 := loadNodePair(t, dir, "n2")
	runStep(t, false, renewStep(dir, []string{"n1"}, []string{"arbor.arbor.svc"}))
	if loadNodePair(t, dir, "n2").SerialNumber.Cmp(n2.SerialNumber) != 0 {
		t.Error("--hosts n1 renewed n2")
	}
	if names := certNames(loadNodePair(t, dir, "n1")); strings.Count(strings.Join(names, " "), "arbor.arbor.svc") != 1 {
		t.Errorf("names after a second renewal: %q", names)
	}

	// An unknown host renews nothing at all.
	n1 := loadNodePair(t, dir, "n1")
	runStep(t, true, renewStep(dir, []string{"n1", "n9"}, nil))
	if loadNodePair(t, dir, "n1").SerialNumber.Cmp(n1.SerialNumber) != 0 {
		t.Error("a failed renewal changed n1")
	}
	runStep(t, true, renewStep(t.TempDir(), nil, nil))
}

// TestRenewEndsWithTheCA: a node certificate never outlives its CA,
// and the operator is told to rotate it.
func TestRenewEndsWithTheCA(t *testing.T) {
	dir := t.TempDir()
	mustInit(t, dir, "n1")
	ca, err := loadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	late := ca.cert.NotAfter.Add(-100 * 24 * time.Hour)
	if err := Renew(dir, nil, nil, late, &out); err != nil {
		t.Fatal(err)
	}
	if leaf := loadNodePair(t, dir, "n1"); !leaf.NotAfter.Equal(ca.cert.NotAfter) {
		t.Errorf("renewed certificate ends %s, the CA %s", leaf.NotAfter, ca.cert.NotAfter)
	}
	if !strings.Contains(out.String(), "rotate it (arbor certs rotate-ca)") {
		t.Errorf("no advice to rotate the CA:\n%s", out.String())
	}
}

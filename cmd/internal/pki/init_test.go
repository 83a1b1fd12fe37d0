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

func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	var out bytes.Buffer
	if err := Init(dir, []string{"n1", "n2", "10.0.0.3"}, nil, time.Now(), &out); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	for _, h := range []string{"n1", "n2", "10.0.0.3"} {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, h+".pem"), filepath.Join(dir, h+"-key.pem"))
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		for _, name := range []string{h, "localhost", "127.0.0.1"} {
			for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				_, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}})
				if err != nil {
					t.Errorf("%s certificate for %s (usage %v): %v", h, name, usage, err)
				}
			}
		}
		if fi, err := os.Stat(filepath.Join(dir, h+"-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s key file mode: %v %v", h, fi.Mode(), err)
		}
		if err := CheckSignedBy(filepath.Join(dir, h+".pem"), filepath.Join(dir, "ca.pem")); err != nil {
			t.Errorf("CheckSignedBy(%s): %v", h, err)
		}
	}
	keys, err := decodeGossipKeyValue(filepath.Join(dir, "gossip.key"))
	if err != nil || len(keys) != 1 {
		t.Fatalf("gossip.key: %d keys, %v", len(keys), err)
	}
	key := keys[0]

	// Again with a new host: the CA, the key and the old certificates stay.
	n1, _ := os.ReadFile(filepath.Join(dir, "n1.pem"))
	out.Reset()
	if err := Init(dir, []string{"n1", "n4"}, nil, time.Now(), &out); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if !strings.Contains(out.String(), "reused") || !strings.Contains(out.String(), "kept") {
		t.Errorf("second run output:\n%s", out.String())
	}
	caAgain, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	n1Again, _ := os.ReadFile(filepath.Join(dir, "n1.pem"))
	keys2, _ := decodeGossipKeyValue(filepath.Join(dir, "gossip.key"))
	if !bytes.Equal(caPEM, caAgain) || !bytes.Equal(n1, n1Again) || len(keys2) != 1 || !bytes.Equal(key, keys2[0]) {
		t.Error("the second run replaced existing files")
	}
	if err := CheckSignedBy(filepath.Join(dir, "n4.pem"), filepath.Join(dir, "ca.pem")); err != nil {
		t.Errorf("n4 is not signed by the reused CA: %v", err)
	}
}

// TestInitCAOnly: without hosts, only the CA and the gossip key, for a
// CA that cert-manager or another tool signs with.
func TestInitCAOnly(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, nil, nil, time.Now(), io.Discard); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "ca-key.pem ca.pem gossip.key" {
		t.Errorf("wrote %q", names)
	}
}

// TestInitKeepsACAWithoutItsKey: a ca.pem whose key is missing is an
// error, never a reason to make a new CA over it.
func TestInitKeepsACAWithoutItsKey(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, nil, nil, time.Now(), io.Discard); err != nil {
		t.Fatal(err)
	}
	ca, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err := os.Remove(filepath.Join(dir, "ca-key.pem")); err != nil {
		t.Fatal(err)
	}
	if err := Init(dir, []string{"n1"}, nil, time.Now(), io.Discard); err == nil {
		t.Error("no error, want a failure")
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); !bytes.Equal(ca, again) {
		t.Error("ca.pem was replaced")
	}
}

// TestInitLocalhost: the one host localhost (arbor certs init without
// --hosts); the "wrote" lines name every file written, keys included, and
// every file the start command names exists.
func TestInitLocalhost(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := Init(dir, []string{"localhost"}, nil, time.Now(), &out); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "localhost.pem"), filepath.Join(dir, "localhost-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pair.Leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	checkWroteAndNamed(t, dir, out.String())
}

// checkWroteAndNamed checks that output's "wrote" lines list exactly the
// files in dir and that each file its "--flag file" pairs name exists.
func checkWroteAndNamed(t *testing.T, dir, output string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files, wrote []string
	for _, e := range entries {
		files = append(files, filepath.Join(dir, e.Name()))
	}
	fields := strings.Fields(output)
	for i, f := range fields {
		if f == "wrote" && i+1 < len(fields) {
			wrote = append(wrote, fields[i+1])
		}
		if strings.HasPrefix(f, "--") && i+1 < len(fields) {
			if _, err := os.Stat(fields[i+1]); err != nil {
				t.Errorf("output names %s %s, which was not written: %v\n%s", f, fields[i+1], err, output)
			}
		}
	}
	slices.Sort(wrote)
	if !slices.Equal(wrote, files) {
		t.Errorf("wrote lines %q, files %q:\n%s", wrote, files, output)
	}
}

// TestInitInGitWorkTree: inside a git work tree the keys are ignored
// by a .gitignore beside them; outside, no such file appears.
func TestInitInGitWorkTree(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, "deploy", "certs")
	var out bytes.Buffer
	if err := Init(dir, []string{"n1"}, nil, time.Now(), &out); err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		t.Fatalf("no .gitignore beside the keys: %v\n%s", err, out.String())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		secret := strings.HasSuffix(e.Name(), "-key.pem") || e.Name() == "gossip.key"
		if ignored, _ := filepath.Match("*-key.pem", e.Name()); secret && !ignored && !strings.Contains(string(ignore), e.Name()) {
			t.Errorf("%s is not ignored by %q", e.Name(), ignore)
		}
	}
	checkWroteAndNamed(t, dir, out.String())

	outside := t.TempDir()
	if err := Init(outside, []string{"n1"}, nil, time.Now(), &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, ".gitignore")); err == nil {
		t.Error(".gitignore written outside a git work tree")
	}
}

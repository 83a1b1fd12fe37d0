package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCertsInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	var out, errOut bytes.Buffer
	if code := run([]string{"certs", "init", "--dir", dir, "--hosts", "n1,n2,10.0.0.3"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
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
		if err := checkSignedBy(filepath.Join(dir, h+".pem"), filepath.Join(dir, "ca.pem")); err != nil {
			t.Errorf("checkSignedBy(%s): %v", h, err)
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
	if code := run([]string{"certs", "init", "--dir", dir, "--hosts", "n1,n4"}, &out, &errOut); code != exitOK {
		t.Fatalf("second run: exit %d: %s", code, errOut.String())
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
	if err := checkSignedBy(filepath.Join(dir, "n4.pem"), filepath.Join(dir, "ca.pem")); err != nil {
		t.Errorf("n4 is not signed by the reused CA: %v", err)
	}
	if code := run([]string{"certs", "init", "--dir", dir, "--hosts", "../evil"}, &out, &errOut); code != exitUsage {
		t.Errorf("a host with a slash: exit %d", code)
	}
}

// TestCertsInitWithoutHosts: only the CA and the gossip key, for a CA
// that cert-manager or another tool signs with.
func TestCertsInitWithoutHosts(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run([]string{"certs", "init", "--dir", dir}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
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

// TestCertsInitKeepsACAWithoutItsKey: a ca.pem whose key is missing is an
// error, never a reason to make a new CA over it.
func TestCertsInitKeepsACAWithoutItsKey(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run([]string{"certs", "init", "--dir", dir}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	ca, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err := os.Remove(filepath.Join(dir, "ca-key.pem")); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"certs", "init", "--dir", dir, "--hosts", "n1"}, &out, &errOut); code != exitFailure {
		t.Errorf("exit %d, want a failure", code)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); !bytes.Equal(ca, again) {
		t.Error("ca.pem was replaced")
	}
}

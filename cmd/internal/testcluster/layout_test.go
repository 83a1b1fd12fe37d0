package testcluster

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWipeDirKeepsTheDirectory: a wipe empties a node's data directory
// but keeps the directory itself, which a container has mounted.
func TestWipeDirKeepsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"raft.db", "snapshots/1-2-3/state.bin", "tls/cert.pem"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := WipeDir(dir); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("after the wipe: %v %v", entries, err)
	}
	if err := WipeDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("wiping a missing directory succeeded")
	}
}

func TestLayout(t *testing.T) {
	l := Layout("/run")
	for got, want := range map[string]string{
		l.PKI():         "/run/pki",
		l.CAFile():      "/run/pki/ca.pem",
		l.NodeDir("n2"): "/run/nodes/n2",
		l.LogDir():      "/run/logs",
		l.LogFile("n3"): "/run/logs/n3.log",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

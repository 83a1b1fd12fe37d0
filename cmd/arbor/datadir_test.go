package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPrepareDataDirRemovesStaleAddress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := prepareDataDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	if err := writeFileAtomic(addrFile(dir), []byte("127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prepareDataDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(addrFile(dir)); !os.IsNotExist(err) {
		t.Errorf("stale address file kept: %v", err)
	}
}

func TestWriteFileAtomicReplacesWithMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	for _, content := range []string{"one", "two"} {
		if err := writeFileAtomic(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("got %q, %v; want %q", got, err, content)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

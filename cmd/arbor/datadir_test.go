package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

func TestPrepareDataDirRemovesStaleAddress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := prepareDataDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	if err := atomicfile.Write(addrFile(dir), []byte("127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prepareDataDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(addrFile(dir)); !os.IsNotExist(err) {
		t.Errorf("stale address file kept: %v", err)
	}
}

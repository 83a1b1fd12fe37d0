package pki

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

// bumpMtime makes sure a rewritten file's stamp differs even on file
// systems with coarse timestamps.
func bumpMtime(t *testing.T, file string, n int) {
	t.Helper()
	ts := time.Now().Add(time.Duration(n) * time.Second)
	if err := os.Chtimes(file, ts, ts); err != nil {
		t.Fatal(err)
	}
}

func TestGossipKeyReloader(t *testing.T) {
	dir := t.TempDir()
	a, b := randomKey(t), randomKey(t)
	file := filepath.Join(dir, "gossip.key")
	if err := atomicfile.Write(file, formatGossipKeyFile([][]byte{a}), 0o600); err != nil {
		t.Fatal(err)
	}
	inline := randomKey(t)
	values := []string{file, b64(inline)}
	keys, err := DecodeGossipKeys(values)
	if err != nil {
		t.Fatal(err)
	}
	var applied [][][]byte
	failApply := false
	apply := func(k [][]byte) error {
		if failApply {
			return errors.New("refused")
		}
		applied = append(applied, k)
		return nil
	}
	var logs bytes.Buffer
	r := NewGossipKeyReloader(values, keys, apply, slog.New(slog.NewTextHandler(&logs, nil)))
	if !slices.Equal(r.files, []string{file}) {
		t.Fatalf("watched files %q, want only %s", r.files, file)
	}

	r.Check()
	if len(applied) != 0 {
		t.Fatal("applied keys although nothing changed")
	}
	// Step 1 of a rotation: a second key.
	if err := atomicfile.Write(file, formatGossipKeyFile([][]byte{a, b}), 0o600); err != nil {
		t.Fatal(err)
	}
	bumpMtime(t, file, 1)
	r.Check()
	if len(applied) != 1 || len(applied[0]) != 3 || !bytes.Equal(applied[0][0], a) || !bytes.Equal(applied[0][1], b) || !bytes.Equal(applied[0][2], inline) {
		t.Fatalf("applied %d times; last %v", len(applied), applied)
	}
	if !strings.Contains(logs.String(), "gossip keys reloaded") || !strings.Contains(logs.String(), GossipKeyID(a)) {
		t.Errorf("log:\n%s", logs.String())
	}

	// A broken file: an error, the keys stay, and it is not retried until
	// the file changes again.
	if err := os.WriteFile(file, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bumpMtime(t, file, 2)
	r.Check()
	r.Check()
	if len(applied) != 1 || !strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("a broken file: applied %d times; log:\n%s", len(applied), logs.String())
	}
	// A node that refuses the keys keeps its own and says so.
	if err := atomicfile.Write(file, formatGossipKeyFile([][]byte{b}), 0o600); err != nil {
		t.Fatal(err)
	}
	bumpMtime(t, file, 3)
	failApply = true
	r.Check()
	if !bytes.Equal(r.keys[0], a) || !strings.Contains(logs.String(), "cannot change the gossip keys") {
		t.Fatalf("after a refused change the reloader holds %v; log:\n%s", GossipKeyIDs(r.keys), logs.String())
	}
	// Fixed: promoted.
	failApply = false
	if err := atomicfile.Write(file, formatGossipKeyFile([][]byte{b, a}), 0o600); err != nil {
		t.Fatal(err)
	}
	bumpMtime(t, file, 4)
	r.Check()
	if len(applied) != 2 || !bytes.Equal(applied[1][0], b) {
		t.Fatalf("promotion not applied: %d", len(applied))
	}
}

package pki

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestRotateGossipKey(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gossip.key")
	step := func(s GossipKeyStep) func(io.Writer) error {
		return func(out io.Writer) error { return RotateGossipKey(dir, s, out) }
	}
	runStep(t, true, step(GossipKeyPromote)) // no file yet
	runStep(t, false, step(GossipKeyAdd))    // a first key
	first := mustKeys(t, file, 1)
	runStep(t, true, step(GossipKeyDropOld)) // nothing to drop

	out := runStep(t, false, step(GossipKeyAdd))
	if !strings.Contains(out, "step 1 of 3") || !strings.Contains(out, GossipKeyID(first[0])) {
		t.Errorf("add output:\n%s", out)
	}
	added := mustKeys(t, file, 2)
	if !bytes.Equal(added[0], first[0]) {
		t.Fatal("adding a key changed the key in use")
	}
	runStep(t, false, step(GossipKeyPromote))
	promoted := mustKeys(t, file, 2)
	if !bytes.Equal(promoted[0], added[1]) || !bytes.Equal(promoted[1], added[0]) {
		t.Fatal("--promote did not put the new key first and keep the old one")
	}
	runStep(t, false, step(GossipKeyDropOld))
	if final := mustKeys(t, file, 1); !bytes.Equal(final[0], added[1]) {
		t.Fatal("--drop-old did not keep the new key alone")
	}
}

func mustKeys(t *testing.T, file string, n int) [][]byte {
	t.Helper()
	keys, err := decodeGossipKeyValue(file)
	if err != nil || len(keys) != n {
		t.Fatalf("%s: %d keys (%v), want %d", file, len(keys), err, n)
	}
	return keys
}

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestCertsGossipKeyRotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gossip.key")
	runCertsCmd(t, exitFailure, "gossip-key", "--dir", dir, "--promote") // no file yet
	runCertsCmd(t, exitOK, "gossip-key", "--dir", dir)                   // a first key
	first := mustKeys(t, file, 1)
	runCertsCmd(t, exitFailure, "gossip-key", "--dir", dir, "--drop-old") // nothing to drop

	out := runCertsCmd(t, exitOK, "gossip-key", "--dir", dir)
	if !strings.Contains(out, "step 1 of 3") || !strings.Contains(out, gossipKeyID(first[0])) {
		t.Errorf("add output:\n%s", out)
	}
	added := mustKeys(t, file, 2)
	if !bytes.Equal(added[0], first[0]) {
		t.Fatal("adding a key changed the key in use")
	}
	runCertsCmd(t, exitUsage, "gossip-key", "--dir", dir, "--promote", "--drop-old")

	runCertsCmd(t, exitOK, "gossip-key", "--dir", dir, "--promote")
	promoted := mustKeys(t, file, 2)
	if !bytes.Equal(promoted[0], added[1]) || !bytes.Equal(promoted[1], added[0]) {
		t.Fatal("--promote did not put the new key first and keep the old one")
	}
	runCertsCmd(t, exitOK, "gossip-key", "--dir", dir, "--drop-old")
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

package pki

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func randomKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, gossipKeyLen)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

func TestDecodeGossipKeys(t *testing.T) {
	dir := t.TempDir()
	a, b, c := randomKey(t), randomKey(t), randomKey(t)
	two := writeTemp(t, dir, "two.key", "# rotation under way\n"+b64(b)+"\r\n\n"+b64(c)+"\n")
	keys, err := DecodeGossipKeys([]string{b64(a), two, b64(c)})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || !bytes.Equal(keys[0], a) || !bytes.Equal(keys[1], b) || !bytes.Equal(keys[2], c) {
		t.Fatalf("got %d keys %v, want a, b, c once each in order", len(keys), GossipKeyIDs(keys))
	}
	if keys, err := DecodeGossipKeys(nil); err != nil || len(keys) != 0 {
		t.Errorf("no values: %v %v", keys, err)
	}
	for name, c := range map[string]struct{ content, want string }{
		"empty":      {"\n# nothing\n", "no key in the file"},
		"short":      {b64(a) + "\n" + b64([]byte("short")) + "\n", "line 2: the key is 5 bytes"},
		"not base64": {"!!!\n", "line 1: not base64"},
	} {
		_, err := DecodeGossipKeys([]string{writeTemp(t, dir, name, c.content)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
	if _, err := DecodeGossipKeys([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing file was accepted")
	}
	if !isInlineGossipKey(b64(a)) || isInlineGossipKey(two) {
		t.Error("isInlineGossipKey")
	}
	if id := GossipKeyID(a); len(id) != 8 || strings.Contains(b64(a), id) {
		t.Errorf("key id %q", id)
	}
}

func writeTemp(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

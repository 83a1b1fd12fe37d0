package idtoken

import (
	"crypto/sha256"
	"os"
	"testing"
	"time"
)

// TestNewTokenHashes checks that a Token carries its text's SHA-256.
func TestNewTokenHashes(t *testing.T) {
	for _, text := range []string{"", "s3cret", hs(claimsAt("u", t0))} {
		tok := NewToken(text)
		if tok.String() != text || tok.Sum() != sha256.Sum256([]byte(text)) {
			t.Errorf("NewToken(%q) = %q with a wrong digest", text, tok.String())
		}
	}
}

// TestCachedOnlyVerified checks that Cached answers only for tokens
// VerifyToken accepted, until they expire, without checking a signature.
func TestCachedOnlyVerified(t *testing.T) {
	clk := newClock()
	v := allAlgs(t, func(c *Config) { c.Now = clk.Now; c.Leeway = time.Second })
	tok := NewToken(rs("", claimsAt("u", t0), rsaKeys()[0]))
	if _, ok := v.Cached(tok); ok {
		t.Fatal("a token never verified is cached")
	}
	bad := NewToken(flipSig(tok.String()))
	if _, err := v.VerifyToken(bad); err == nil {
		t.Fatal("bad token verified")
	}
	if _, ok := v.Cached(bad); ok {
		t.Fatal("a refused token is cached")
	}
	if _, err := v.VerifyToken(tok); err != nil {
		t.Fatal(err)
	}
	checks := v.sigChecks.Load()
	id, ok := v.Cached(tok)
	if !ok || id.Auth["uid"] != "u" {
		t.Fatalf("Cached after VerifyToken: %+v, %v", id, ok)
	}
	id.Expires = time.Time{} // a caller's copy: the cache keeps its own
	if again, _ := v.Cached(tok); again.Expires.IsZero() {
		t.Fatal("a caller changed the cached identity")
	}
	if n := v.sigChecks.Load(); n != checks {
		t.Errorf("Cached checked %d signatures", n-checks)
	}
	clk.Advance(time.Hour + 2*time.Second) // past exp and the leeway
	if _, ok := v.Cached(tok); ok {
		t.Fatal("an expired token is cached")
	}
}

// TestCachedForgetsRemovedKeys checks that a key file that changed clears
// what Cached answers, as it does for VerifyToken.
func TestCachedForgetsRemovedKeys(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	path := writeFile(t, dir, "keys.pem", pkixPEM(&rsaKeys()[0].PublicKey))
	v := newVerifier(t, Config{KeyFiles: []string{path}, Now: clk.Now})
	tok := NewToken(rs("", claimsAt("u", t0), rsaKeys()[0]))
	if _, err := v.VerifyToken(tok); err != nil {
		t.Fatal(err)
	}
	// Replaced by a rename, as key rotation jobs do.
	if err := os.Rename(writeFile(t, dir, "keys.pem.tmp", pkixPEM(&rsaKeys()[1].PublicKey)), path); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // past the files' recheck interval
	if _, ok := v.Cached(tok); ok {
		t.Fatal("a token signed with a removed key is still cached")
	}
}

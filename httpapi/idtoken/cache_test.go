package idtoken

import (
	"fmt"
	"testing"
	"time"
)

func TestCacheHit(t *testing.T) {
	v := allAlgs(t, nil)
	tok := rs("", claimsAt("u", t0), rsaKeys()[0])
	first, err := v.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		id, err := v.Verify(tok)
		if err != nil {
			t.Fatal(err)
		}
		if id.Auth["uid"] != "u" || !id.Expires.Equal(first.Expires) {
			t.Fatalf("cached identity %+v", id)
		}
	}
	if n := v.sigChecks.Load(); n != 1 {
		t.Errorf("%d signature checks for one token, want 1", n)
	}
	// Failures are not cached.
	bad := flipSig(tok)
	for range 2 {
		if _, err := v.Verify(bad); err == nil {
			t.Fatal("bad token verified")
		}
	}
	if n := v.sigChecks.Load(); n != 3 {
		t.Errorf("%d signature checks, want 3", n)
	}
}

func TestCacheRespectsExp(t *testing.T) {
	clk := newClock()
	v := allAlgs(t, func(c *Config) { c.Now = clk.Now; c.Leeway = 5 * time.Second })
	tok := hs(map[string]any{"sub": "u", "iat": t0.Unix(), "exp": t0.Add(10 * time.Second).Unix()})
	if _, err := v.Verify(tok); err != nil {
		t.Fatal(err)
	}
	clk.Advance(14 * time.Second) // exp + 4 s: inside the leeway
	if _, err := v.Verify(tok); err != nil {
		t.Fatal(err)
	}
	if n := v.sigChecks.Load(); n != 1 {
		t.Errorf("%d signature checks, want 1", n)
	}
	clk.Advance(2 * time.Second) // exp + 6 s
	_, err := v.Verify(tok)
	wantErr(t, err, ErrExpired)
}

func TestCacheBounded(t *testing.T) {
	v := allAlgs(t, func(c *Config) { c.CacheSize = 3 })
	toks := make([]string, 5)
	for i := range toks {
		toks[i] = hs(claimsAt(fmt.Sprint("u", i), t0))
		if _, err := v.Verify(toks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.cache.len(); n != 3 {
		t.Fatalf("cache holds %d, want 3", n)
	}
	before := v.sigChecks.Load()
	for _, i := range []int{2, 3, 4} { // the newest three
		if _, err := v.Verify(toks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.sigChecks.Load() - before; n != 0 {
		t.Errorf("%d re-verifications of cached tokens", n)
	}
	if _, err := v.Verify(toks[0]); err != nil { // evicted first
		t.Fatal(err)
	}
	if n := v.sigChecks.Load() - before; n != 1 {
		t.Errorf("evicted token: %d signature checks, want 1", n)
	}
	if n := v.cache.len(); n != 3 {
		t.Fatalf("cache holds %d, want 3", n)
	}

	// Many more tokens than slots, some repeated, never exceed the bound.
	for i := range 50 {
		if _, err := v.Verify(toks[i%5]); err != nil {
			t.Fatal(err)
		}
		if n := v.cache.len(); n > 3 {
			t.Fatalf("cache holds %d", n)
		}
	}
}

func TestCacheDisabled(t *testing.T) {
	v := allAlgs(t, func(c *Config) { c.CacheSize = -1 })
	tok := hs(claimsAt("u", t0))
	for range 3 {
		if _, err := v.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.sigChecks.Load(); n != 3 {
		t.Errorf("%d signature checks, want 3", n)
	}
}

// TestCacheStaleGeneration: a verification that began before a key
// reload must not be cached after it.
func TestCacheStaleGeneration(t *testing.T) {
	c := newCache(4)
	id := &Identity{Auth: map[string]any{"uid": "u"}}
	c.reset(1)
	c.add([32]byte{1}, id, time.Time{}, 0)
	if _, ok := c.get([32]byte{1}, t0); ok {
		t.Fatal("stale-generation entry cached")
	}
	c.add([32]byte{1}, id, time.Time{}, 1)
	if _, ok := c.get([32]byte{1}, t0); !ok {
		t.Fatal("current-generation entry not cached")
	}
	c.reset(2)
	if _, ok := c.get([32]byte{1}, t0); ok || c.len() != 0 {
		t.Fatal("reset kept an entry")
	}
}

// TestCachedIdentityIsACopy: callers may change their Identity struct
// (not its maps) without affecting the cache.
func TestCachedIdentityIsACopy(t *testing.T) {
	v := allAlgs(t, nil)
	tok := hs(claimsAt("u", t0))
	a, err := v.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	a.Expires = time.Time{}
	a.Auth = nil
	b, err := v.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if b.Expires.IsZero() || b.Auth == nil {
		t.Errorf("cached identity changed through a returned copy: %+v", b)
	}
}

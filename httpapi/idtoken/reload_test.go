package idtoken

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestKeyFileRotation(t *testing.T) {
	r := rsaKeys()
	clk := newClock()
	dir := t.TempDir()
	path := writeFile(t, dir, "keys.pem", pkixPEM(&r[0].PublicKey))
	mtime := time.Unix(1_600_000_000, 0)
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, Config{KeyFiles: []string{path}, Now: clk.Now})
	claims := claimsAt("u", t0) // valid for the hour the clock moves in
	oldTok, newTok := rs("", claims, r[0]), rs("", claims, r[1])
	if _, err := v.Verify(oldTok); err != nil {
		t.Fatal(err)
	}
	checks := v.sigChecks.Load()

	// Rotate: same size (same key length), new content, new mtime.
	if err := os.WriteFile(path, pkixPEM(&r[1].PublicKey), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime = mtime.Add(time.Minute)
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}

	// Within the second the file is not looked at: the cached old token
	// still verifies, the new one does not.
	clk.Advance(500 * time.Millisecond)
	if _, err := v.Verify(oldTok); err != nil {
		t.Fatalf("old token before the recheck: %v", err)
	}
	if v.sigChecks.Load() != checks {
		t.Fatal("cached token re-verified")
	}
	if _, err := v.Verify(newTok); err == nil {
		t.Fatal("new token verified before the recheck")
	}

	clk.Advance(time.Second)
	if _, err := v.Verify(newTok); err != nil {
		t.Fatalf("new token after rotation: %v", err)
	}
	// The old key is gone, and so is its cached verification.
	_, err := v.Verify(oldTok)
	wantErr(t, err, ErrMalformed)

	// Touching the file without changing the keys keeps the cache.
	checks = v.sigChecks.Load()
	mtime = mtime.Add(time.Minute)
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if _, err := v.Verify(newTok); err != nil {
		t.Fatal(err)
	}
	if v.sigChecks.Load() != checks {
		t.Error("an unchanged key set cleared the cache")
	}

	// A broken file keeps the previous keys; Verify stays quiet and
	// Reload reports it.
	if err := os.WriteFile(path, []byte("-----BEGIN PUBLIC KEY-----\ntruncated"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if _, err := v.Verify(rs("", claimsAt("other", t0), r[1])); err != nil {
		t.Fatalf("after a bad rewrite: %v", err)
	}
	if err := v.Reload(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Reload = %v, want an error naming the file", err)
	}

	// A missing file too.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if _, err := v.Verify(rs("", claimsAt("third", t0), r[1])); err != nil {
		t.Fatalf("after removal: %v", err)
	}
	if err := v.Reload(); err == nil {
		t.Error("Reload of a missing file succeeded")
	}

	// Restored by a rename, with an older mtime than before (as cp -p or
	// a ConfigMap update can produce): the changed file identity counts.
	tmp := writeFile(t, dir, "keys.pem.tmp", pkixPEM(&r[2].PublicKey))
	old := time.Unix(1_500_000_000, 0)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if _, err := v.Verify(rs("", claims, r[2])); err != nil {
		t.Fatalf("after rename: %v", err)
	}
	if err := v.Reload(); err != nil {
		t.Fatal(err)
	}
}

// TestReloadRace runs verifications against rotations for the race
// detector.
func TestReloadRace(t *testing.T) {
	r := rsaKeys()
	clk := newClock()
	dir := t.TempDir()
	path := writeFile(t, dir, "keys.pem", append(pkixPEM(&r[0].PublicKey), pkixPEM(&r[1].PublicKey)...))
	v := newVerifier(t, Config{KeyFiles: []string{path}, Now: clk.Now, HS256Secrets: [][]byte{testSecret}, CacheSize: 8})
	toks := []string{
		rs("", claimsAt("a", t0), r[0]),
		rs("", claimsAt("b", t0), r[0]),
		hs(claimsAt("c", t0)),
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := v.Verify(toks[i%len(toks)]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 20 {
		// Key 0 stays; key 1 comes and goes.
		data := pkixPEM(&r[0].PublicKey)
		if i%2 == 0 {
			data = append(data, pkixPEM(&r[1].PublicKey)...)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		if i%5 == 0 {
			if err := v.Reload(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
}

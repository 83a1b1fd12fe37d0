package idtoken

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a Listener that remembers what it heard.
type recorder struct {
	mu       sync.Mutex
	changes  int
	failures []string
}

func (r *recorder) listener() Listener {
	return Listener{
		KeysChanged: func() { r.mu.Lock(); r.changes++; r.mu.Unlock() },
		KeyFileFailed: func(err error) {
			r.mu.Lock()
			r.failures = append(r.failures, err.Error())
			r.mu.Unlock()
		},
	}
}

// take returns and forgets what was heard.
func (r *recorder) take() (changes int, failures []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changes, failures = r.changes, r.failures
	r.changes, r.failures = 0, nil
	return changes, failures
}

// TestTrustsFollowsTheKeyFile: an identity verified with a key stops
// being trusted once the key leaves the file, and the listeners hear of
// the change through Check, without any token being verified.
func TestTrustsFollowsTheKeyFile(t *testing.T) {
	r := rsaKeys()
	clk := newClock()
	path := writeFile(t, t.TempDir(), "keys.json", mustJSON(map[string]any{"keys": []any{
		jwkRSAJSON("a", &r[0].PublicKey), jwkRSAJSON("b", &r[1].PublicKey),
	}}))
	v := newVerifier(t, Config{KeyFiles: []string{path}, HS256Secrets: [][]byte{testSecret}, Now: clk.Now})
	var heard recorder
	stop := v.Subscribe(heard.listener())
	defer stop()

	idA, err := v.Verify(rs("a", claimsAt("alice", t0), r[0]))
	if err != nil {
		t.Fatal(err)
	}
	idB, err := v.Verify(rs("b", claimsAt("bob", t0), r[1]))
	if err != nil {
		t.Fatal(err)
	}
	idH, err := v.Verify(hs(claimsAt("carol", t0)))
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range map[string]*Identity{"a": idA, "b": idB, "HS256": idH} {
		if !v.Trusts(id) {
			t.Fatalf("%s: not trusted right after verification", name)
		}
	}
	if v.Trusts(nil) || v.Trusts(&Identity{Auth: map[string]any{"uid": "forged"}}) {
		t.Fatal("an identity Verify did not make is trusted")
	}

	// Key a is withdrawn. Nothing happens within the second.
	if err := os.WriteFile(path, mustJSON(map[string]any{"keys": []any{jwkRSAJSON("b", &r[1].PublicKey)}}), 0o600); err != nil {
		t.Fatal(err)
	}
	bumpMtime(t, path)
	v.Check()
	if c, _ := heard.take(); c != 0 || !v.Trusts(idA) {
		t.Fatalf("looked at the file within the second: %d changes", c)
	}
	clk.Advance(2 * time.Second)
	v.Check()
	if c, f := heard.take(); c != 1 || len(f) != 0 {
		t.Fatalf("heard %d changes and failures %q, want one change", c, f)
	}
	if v.Trusts(idA) {
		t.Error("an identity of the withdrawn key is still trusted")
	}
	if !v.Trusts(idB) || !v.Trusts(idH) {
		t.Error("an identity of a key still in force is no longer trusted")
	}
	_, err = v.Verify(rs("a", claimsAt("alice", t0), r[0]))
	wantErr(t, err, ErrMalformed)

	// The same key under another kid is another key.
	if err := os.WriteFile(path, mustJSON(map[string]any{"keys": []any{jwkRSAJSON("b2", &r[1].PublicKey)}}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Reload(); err != nil {
		t.Fatal(err)
	}
	if v.Trusts(idB) {
		t.Error("trusted after its key's kid changed")
	}
	if c, _ := heard.take(); c != 1 {
		t.Errorf("Reload: heard %d changes, want 1", c)
	}

	// Once unsubscribed, a listener hears nothing.
	stop()
	if err := os.WriteFile(path, mustJSON(map[string]any{"keys": []any{jwkRSAJSON("b", &r[1].PublicKey)}}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Reload(); err != nil {
		t.Fatal(err)
	}
	if c, _ := heard.take(); c != 0 {
		t.Errorf("an unsubscribed listener heard %d changes", c)
	}
}

// bumpMtime moves path's modification time forward, so that a rewrite of
// the same size within the file system's time granularity is seen.
func bumpMtime(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	m := fi.ModTime().Add(time.Minute)
	if err := os.Chtimes(path, m, m); err != nil {
		t.Fatal(err)
	}
}

// TestBrokenKeyFileKeepsKeysLoudly: a key file that is emptied,
// truncated or deleted keeps the keys last loaded from it (a cron job's
// half-written download must not lock every user out), and each such
// failure is reported once to the listeners, naming the file and the
// keys kept.
func TestBrokenKeyFileKeepsKeysLoudly(t *testing.T) {
	r := rsaKeys()
	good := append(pkixPEM(&r[0].PublicKey), pkixPEM(&r[1].PublicKey)...)
	for name, breakIt := range map[string]func(path string) error{
		"emptied":   func(p string) error { return os.WriteFile(p, nil, 0o600) },
		"truncated": func(p string) error { return os.WriteFile(p, good[:len(good)-40], 0o600) },
		"cut at a block": func(p string) error {
			return os.WriteFile(p, good[:len(pkixPEM(&r[0].PublicKey))+30], 0o600)
		},
		"deleted": os.Remove,
	} {
		t.Run(name, func(t *testing.T) {
			clk := newClock()
			path := writeFile(t, t.TempDir(), "keys.pem", good)
			v := newVerifier(t, Config{KeyFiles: []string{path}, Now: clk.Now})
			var heard recorder
			defer v.Subscribe(heard.listener())()
			id, err := v.Verify(rs("", claimsAt("u", t0), r[1]))
			if err != nil {
				t.Fatal(err)
			}
			if err := breakIt(path); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				clk.Advance(2 * time.Second)
				v.Check()
			}
			c, f := heard.take()
			if c != 0 || len(f) != 1 {
				t.Fatalf("heard %d changes and failures %q, want exactly one failure", c, f)
			}
			if !strings.Contains(f[0], path) || !strings.Contains(f[0], "2 key(s) last loaded from it stay trusted") {
				t.Errorf("failure %q does not name the file and the keys kept", f[0])
			}
			if !v.Trusts(id) {
				t.Error("the last good keys were dropped")
			}
			if _, err := v.Verify(rs("", claimsAt("v", t0), r[1])); err != nil {
				t.Errorf("a token of a kept key: %v", err)
			}
			// An explicit Reload reports it again.
			if err := v.Reload(); err == nil {
				t.Error("Reload of a broken file succeeded")
			}
			if _, f := heard.take(); len(f) != 1 {
				t.Errorf("Reload: listeners heard %d failures, want 1", len(f))
			}

			// Repaired with one key only: the other stops working.
			if err := os.WriteFile(path, pkixPEM(&r[0].PublicKey), 0o600); err != nil {
				t.Fatal(err)
			}
			bumpMtime(t, path)
			clk.Advance(2 * time.Second)
			v.Check()
			if c, f := heard.take(); c != 1 || len(f) != 0 {
				t.Fatalf("after the repair: %d changes, failures %q", c, f)
			}
			if v.Trusts(id) {
				t.Error("the key left out of the repaired file is still trusted")
			}
		})
	}
}

// TestEmptyJWKSWithdrawsEveryKey: {"keys":[]} is a valid file that
// trusts no key, the way to withdraw them all without a restart.
func TestEmptyJWKSWithdrawsEveryKey(t *testing.T) {
	r := rsaKeys()
	clk := newClock()
	path := writeFile(t, t.TempDir(), "keys.json", mustJSON(map[string]any{"keys": []any{jwkRSAJSON("a", &r[0].PublicKey)}}))
	v := newVerifier(t, Config{KeyFiles: []string{path}, Now: clk.Now})
	id, err := v.Verify(rs("a", claimsAt("u", t0), r[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"keys": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Reload(); err != nil {
		t.Fatalf("Reload of an empty JWKS: %v", err)
	}
	if v.Trusts(id) {
		t.Error("trusted after every key was withdrawn")
	}
	_, err = v.Verify(rs("a", claimsAt("u", t0), r[0]))
	wantErr(t, err, ErrMalformed)
	// A node may also start with it.
	if _, err := New(Config{KeyFiles: []string{path}}); err != nil {
		t.Errorf("New with an empty JWKS: %v", err)
	}
}

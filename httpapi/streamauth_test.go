package httpapi

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbordb/arbor/httpapi/idtoken"
	"github.com/arbordb/arbor/httpapi/idtoken/idtokentest"
)

// RSA key generation is slow under -race: the tests share two keys.
var streamAuthKeys = sync.OnceValue(func() [2]*rsa.PrivateKey {
	var keys [2]*rsa.PrivateKey
	for i := range keys {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	return keys
})

// publicPEM is the PEM of keys' public halves.
func publicPEM(t *testing.T, keys ...*rsa.PrivateKey) []byte {
	t.Helper()
	var out []byte
	for _, k := range keys {
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)
	}
	return out
}

// keyFileHarness is a harness whose server verifies RS256 ID tokens with
// the keys of a file the test rewrites, on the real clock (a stream's
// expiry timer runs on it), under ownDataRules.
func keyFileHarness(t *testing.T) (h *harness, v *idtoken.Verifier, keyFile string) {
	t.Helper()
	keys := streamAuthKeys()
	keyFile = filepath.Join(t.TempDir(), "keys.pem")
	if err := os.WriteFile(keyFile, publicPEM(t, keys[0], keys[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := idtoken.New(idtoken.Config{KeyFiles: []string{keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, nil, func(c *Config) { c.Tokens = v; c.Now = time.Now })
	h.run([]step{{name: "rules", req: req{method: "PUT", path: "/.settings/rules.json", body: str(ownDataRules)}, status: 200,
		body: `{"status":"ok"}`}})
	return h, v, keyFile
}

// firebaseToken is an ID token for uid signed with key.
func firebaseToken(t *testing.T, key *rsa.PrivateKey, uid string) string {
	t.Helper()
	tok, err := idtokentest.FirebaseRS256(key, "proj", uid, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestStreamEndsWhenItsKeyIsWithdrawn: a key removed from the key file
// stops working everywhere. Open streams authenticated with it get
// auth_revoked and close, as soon as the verifier sees the file change;
// streams of other keys and of admins go on.
func TestStreamEndsWhenItsKeyIsWithdrawn(t *testing.T) {
	h, v, keyFile := keyFileHarness(t)
	keys := streamAuthKeys()
	alice, bob := firebaseToken(t, keys[0], "alice"), firebaseToken(t, keys[1], "bob")
	sa := openStreamAs(t, h, "/users/alice.json", alice, nil)
	sa.want(`put {"path":"/","data":null}`)
	sb := openStreamAs(t, h, "/users/bob.json", bob, nil)
	sb.want(`put {"path":"/","data":null}`)
	admin := openStream(t, h, "/users.json")
	admin.want(`put {"path":"/","data":null}`)

	if err := os.WriteFile(keyFile, publicPEM(t, keys[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Reload(); err != nil {
		t.Fatal(err)
	}
	sa.want(`auth_revoked "credential is no longer valid"`, "closed")

	// The others are still served.
	h.do(req{method: "PUT", path: "/users/bob/name.json", body: str(`"Bo"`)})
	sb.want(`put {"path":"/name","data":"Bo"}`)
	admin.want(`put {"path":"/bob/name","data":"Bo"}`)
	// And the withdrawn key opens nothing new.
	r := h.do(req{method: "GET", path: "/users/alice.json", anon: true, headers: map[string]string{"Authorization": "Bearer " + alice}})
	if r.status != http.StatusUnauthorized || r.body != errBody(msgBadToken) {
		t.Errorf("a request with the withdrawn key: %d %s", r.status, r.body)
	}
}

// TestStreamCredentialValid checks the stream's question directly: false
// only for an ID token whose key has left the key file.
func TestStreamCredentialValid(t *testing.T) {
	h, v, keyFile := keyFileHarness(t)
	keys := streamAuthKeys()
	asRequest := func(query string) *request {
		t.Helper()
		hr := httptest.NewRequest("GET", "/x.json?"+query, nil)
		id, err := h.s.authenticate(hr, hr.URL.Query())
		if err != nil {
			t.Fatalf("authenticate %q: %v", query, err)
		}
		return &request{id: id}
	}
	alice := asRequest("auth=" + firebaseToken(t, keys[0], "alice"))
	bob := asRequest("auth=" + firebaseToken(t, keys[1], "bob"))
	admin := asRequest("auth=" + adminSecret)
	override := asRequest("auth=" + adminSecret + `&auth_variable_override={"uid":"x"}`)
	anonymous := asRequest("")
	for name, rq := range map[string]*request{"alice": alice, "bob": bob, "admin": admin, "override": override, "anonymous": anonymous} {
		if !h.s.streamCredentialValid(rq) {
			t.Errorf("%s: not valid before any change", name)
		}
	}
	if err := os.WriteFile(keyFile, publicPEM(t, keys[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Reload(); err != nil {
		t.Fatal(err)
	}
	if h.s.streamCredentialValid(alice) {
		t.Error("alice's key was withdrawn, but her credential is still valid")
	}
	for name, rq := range map[string]*request{"bob": bob, "admin": admin, "override": override, "anonymous": anonymous} {
		if !h.s.streamCredentialValid(rq) {
			t.Errorf("%s: no longer valid after another key left", name)
		}
	}
}

// TestKeyFileFailureIsLoud: a key file emptied while the node runs keeps
// its last good keys, and says so at ERROR and in
// arbor_jwt_key_reload_errors_total.
func TestKeyFileFailureIsLoud(t *testing.T) {
	h, v, keyFile := keyFileHarness(t)
	keys := streamAuthKeys()
	if err := os.WriteFile(keyFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Reload(); err == nil {
		t.Fatal("Reload of an empty key file succeeded")
	}
	m := h.do(req{method: "GET", path: "/metrics"})
	if !strings.Contains(m.body, "arbor_jwt_key_reload_errors_total 1\n") {
		t.Errorf("metrics lack the reload error:\n%s", m.body)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, keyFile) || !strings.Contains(logs, "stay trusted") {
		t.Errorf("no ERROR naming the file and the kept keys in the log:\n%s", logs)
	}
	r := h.do(req{method: "GET", path: "/users/alice.json", anon: true,
		headers: map[string]string{"Authorization": "Bearer " + firebaseToken(t, keys[0], "alice")}})
	if r.status != http.StatusOK {
		t.Errorf("a token of a kept key: %d %s", r.status, r.body)
	}
}

// TestKeyFileBrokenBeforeTheServer: a key file that broke after the
// verifier loaded it but before the server subscribed is still reported.
func TestKeyFileBrokenBeforeTheServer(t *testing.T) {
	keys := streamAuthKeys()
	keyFile := filepath.Join(t.TempDir(), "keys.pem")
	if err := os.WriteFile(keyFile, publicPEM(t, keys[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := idtoken.New(idtoken.Config{KeyFiles: []string{keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	v.Check() // within the second: nothing looked at yet
	h := newHarness(t, nil, func(c *Config) { c.Tokens = v })
	if m := h.do(req{method: "GET", path: "/metrics"}); !strings.Contains(m.body, "arbor_jwt_key_reload_errors_total 1\n") {
		t.Errorf("the missing key file is not counted:\n%s", m.body)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, keyFile) {
		t.Errorf("no ERROR naming the missing key file:\n%s", logs)
	}
}

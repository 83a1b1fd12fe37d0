package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/httpapi/idtoken/idtokentest"
)

// jwtKeyNode starts a node that verifies the Firebase ID tokens of project
// "proj" with the keys of a file the test rewrites, under e2eRules, and
// returns it with the file and two signing keys, both in the file.
func jwtKeyNode(t *testing.T) (n *Node, keyFile string, keys [2]*rsa.PrivateKey) {
	t.Helper()
	for i := range keys {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	keyFile = filepath.Join(t.TempDir(), "keys.pem")
	writeKeyFile(t, keyFile, publicKeysPEM(t, keys[0], keys[1]))
	n = StartReadyNode(t, Options{Args: []string{"--jwt-public-key", keyFile, "--firebase-project", "proj"}})
	mustStatus(t, "set rules", n.Do(t, "PUT", "/.settings/rules.json", e2eRules), 200)
	return n, keyFile, keys
}

func publicKeysPEM(t *testing.T, keys ...*rsa.PrivateKey) []byte {
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

// writeKeyFile replaces path atomically, as a careful operator's rollout
// does, except when data is nil: then the file is emptied in place.
func writeKeyFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if data == nil {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func firebaseToken(t *testing.T, key *rsa.PrivateKey, uid string) string {
	t.Helper()
	tok, err := idtokentest.FirebaseRS256(key, "proj", uid, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestJWTKeyFileChanges checks --jwt-public-key while a node runs: an
// emptied file keeps its last keys and says so (ERROR log, metric); a key
// removed from the file stops working.
func TestJWTKeyFileChanges(t *testing.T) {
	n, keyFile, keys := jwtKeyNode(t)
	alice, bob := firebaseToken(t, keys[0], "alice"), firebaseToken(t, keys[1], "bob")
	mustStatus(t, "alice reads", n.DoAs(t, alice, "GET", "/users/alice.json", ""), 200)
	mustStatus(t, "bob reads", n.DoAs(t, bob, "GET", "/users/bob.json", ""), 200)

	writeKeyFile(t, keyFile, nil)
	poll(t, 15*time.Second, "the emptied key file is counted", func() bool {
		return strings.Contains(n.Do(t, "GET", "/metrics", "").Body, "arbor_jwt_key_reload_errors_total 1\n")
	})
	if logs := n.Logs(); !strings.Contains(logs, "ID-token key file unusable") || !strings.Contains(logs, "stay trusted") {
		t.Errorf("no ERROR about the emptied key file in the log:\n%s", logs)
	}
	mustStatus(t, "alice reads with the kept keys", n.DoAs(t, alice, "GET", "/users/alice.json", ""), 200)

	writeKeyFile(t, keyFile, publicKeysPEM(t, keys[1]))
	poll(t, 15*time.Second, "alice's key stops working", func() bool {
		return n.DoAs(t, alice, "GET", "/users/alice.json", "").Status == 401
	})
	wantError(t, "alice's withdrawn key", n.DoAs(t, alice, "GET", "/users/alice.json", ""), 401, "Could not parse auth token.")
	mustStatus(t, "bob still reads", n.DoAs(t, bob, "GET", "/users/bob.json", ""), 200)
	if m := n.Do(t, "GET", "/metrics", "").Body; !strings.Contains(m, "arbor_jwt_key_reload_errors_total 1\n") {
		t.Error("a good key file was counted as an error")
	}
}

// TestJWTKeyWithdrawalEndsStreams: a stream authenticated with a key that
// leaves the key file ends with auth_revoked, without any other request
// reaching the node meanwhile.
func TestJWTKeyWithdrawalEndsStreams(t *testing.T) {
	n, keyFile, keys := jwtKeyNode(t)
	alice := firebaseToken(t, keys[0], "alice")
	frames := openEventStream(t, n, "/users/alice.json?auth="+alice)
	if f := <-frames; f.Event != "put" {
		t.Fatalf("first frame %+v", f)
	}
	writeKeyFile(t, keyFile, []byte(`{"keys": []}`))
	waitFrame(t, frames, "auth_revoked", `"credential is no longer valid"`)
}

package idtokentest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbordb/arbor/httpapi/idtoken"
)

// TestFirebaseRS256Verifies: the verifier configured as --firebase-project
// would be accepts the token and names its user.
func TestFirebaseRS256Verifies(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := FirebaseRS256(key, "proj", "alice", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	v, err := idtoken.New(idtoken.Config{KeyFiles: []string{file}, Audiences: []string{"proj"}, Issuers: []string{"https://securetoken.google.com/proj"}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if id.Auth["uid"] != "alice" {
		t.Fatalf("auth %v", id.Auth)
	}
}

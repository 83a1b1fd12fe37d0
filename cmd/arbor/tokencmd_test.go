package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeKeyPair writes key's private half (PKCS#8) and public half (PKIX)
// as PEM files and returns their paths.
func writeKeyPair(t *testing.T, dir, name string, key crypto.Signer) (private, public string) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	private, public = filepath.Join(dir, name+"-key.pem"), filepath.Join(dir, name+".pem")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		t.Fatal(err)
	}
	return private, public
}

// TestTokenVerifiesWithServeKeys: a token from `arbor token` passes the
// verifier `arbor serve` builds from the matching flags, for HS256, RS256
// and ES256, with iat, exp and the extra claims in auth.
func TestTokenVerifiesWithServeKeys(t *testing.T) {
	dir := t.TempDir()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaPriv, rsaPub := writeKeyPair(t, dir, "rsa", rsaKey)
	ecPriv, ecPub := writeKeyPair(t, dir, "ec", ecKey)
	const secret = "a-secret-of-32-characters-long.."
	for _, c := range []struct {
		name      string
		tokenArgs []string
		env       map[string]string
		serveArgs []string
		alg       string
	}{
		{"hs256", []string{"--jwt-hs256-secret", secret}, nil, []string{"--jwt-hs256-secret", secret}, "HS256"},
		{"hs256 from the environment", nil, map[string]string{"ARBOR_JWT_HS256_SECRET": secret}, []string{"--jwt-hs256-secret", secret}, "HS256"},
		{"rs256", []string{"--jwt-private-key", rsaPriv}, nil, []string{"--jwt-public-key", rsaPub}, "RS256"},
		{"es256 firebase", []string{"--jwt-private-key", ecPriv, "--firebase-project", "proj"}, nil, []string{"--jwt-public-key", ecPub, "--firebase-project", "proj"}, "ES256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			args := append([]string{"--uid", "alice", "--claims", `{"admin":true}`, "--expires", "30m"}, c.tokenArgs...)
			getenv := func(k string) string { return c.env[k] }
			if code := runToken(args, getenv, &stdout, &stderr); code != exitOK {
				t.Fatalf("arbor token: exit %d: %s", code, stderr.String())
			}
			tok := strings.TrimSpace(stdout.String())
			cfg, _, err := parse(t, nil, c.serveArgs...)
			if err != nil {
				t.Fatal(err)
			}
			v, err := cfg.tokenVerifier()
			if err != nil {
				t.Fatal(err)
			}
			id, err := v.Verify(tok)
			if err != nil {
				t.Fatalf("the node refuses the token: %v", err)
			}
			claims := id.Auth["token"].(map[string]any)
			if id.Auth["uid"] != "alice" || claims["admin"] != true {
				t.Errorf("auth %v", id.Auth)
			}
			iat, _ := claims["iat"].(float64)
			exp, _ := claims["exp"].(float64)
			if iat == 0 || exp-iat != 30*60 {
				t.Errorf("iat %v, exp %v: want both, 30 minutes apart", claims["iat"], claims["exp"])
			}
			header, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
			var h map[string]string
			if err := json.Unmarshal(header, &h); err != nil || h["alg"] != c.alg {
				t.Errorf("header %s, want alg %s", header, c.alg)
			}
		})
	}
}

// TestTokenRefusals: what cannot make a token a node accepts is refused
// with the flag named.
func TestTokenRefusals(t *testing.T) {
	dir := t.TempDir()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384Priv, _ := writeKeyPair(t, dir, "p384", p384)
	const secret = "a-secret-of-32-characters-long.."
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--jwt-hs256-secret", secret}, "--uid is required"},
		{[]string{"--uid", "alice"}, "no key"},
		{[]string{"--uid", "alice", "--jwt-hs256-secret", "short"}, "--jwt-hs256-secret: must be at least 16 bytes"},
		{[]string{"--uid", "alice", "--jwt-hs256-secret", secret, "--expires", "0s"}, "--expires 0s"},
		{[]string{"--uid", "alice", "--jwt-hs256-secret", secret, "--claims", `{"sub":"bob"}`}, `"sub" is set by the other flags`},
		{[]string{"--uid", "alice", "--jwt-private-key", p384Priv}, "ES256 needs P-256"},
		{[]string{"--uid", "alice", "--jwt-private-key", filepath.Join(dir, "missing.pem")}, "--jwt-private-key"},
	} {
		var stdout, stderr strings.Builder
		code := runToken(c.args, func(string) string { return "" }, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), c.want) || stdout.Len() != 0 {
			t.Errorf("arbor token %q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, stdout.String(), stderr.String(), exitUsage, c.want)
		}
	}
}

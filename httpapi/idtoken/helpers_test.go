package idtoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// RSA key generation is slow under -race, so the tests share a few keys.
var (
	rsaKeys = sync.OnceValue(func() []*rsa.PrivateKey {
		keys := make([]*rsa.PrivateKey, 3)
		for i := range keys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			keys[i] = k
		}
		return keys
	})
	ecKeys = sync.OnceValue(func() []*ecdsa.PrivateKey {
		keys := make([]*ecdsa.PrivateKey, 2)
		for i := range keys {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				panic(err)
			}
			keys[i] = k
		}
		return keys
	})
)

var testSecret = []byte("0123456789abcdef0123456789abcdef-test-secret")

// t0 is the tests' fixed "now".
var t0 = time.Unix(1_700_000_000, 0)

// clock is a settable Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// sign makes a compact JWS. key is []byte (HS256), *rsa.PrivateKey
// (RS256) or *ecdsa.PrivateKey (ES256); the header's alg is whatever hdr
// says, so tests can lie about it.
func sign(hdr map[string]any, claims any, key any) string {
	var payload []byte
	switch c := claims.(type) {
	case []byte:
		payload = c
	case string:
		payload = []byte(c)
	default:
		payload = mustJSON(c)
	}
	input := enc(mustJSON(hdr)) + "." + enc(payload)
	return input + "." + enc(rawSign(input, key))
}

func rawSign(input string, key any) []byte {
	digest := sha256.Sum256([]byte(input))
	switch k := key.(type) {
	case nil:
		return nil
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write([]byte(input))
		return m.Sum(nil)
	case *rsa.PrivateKey:
		sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
		if err != nil {
			panic(err)
		}
		return sig
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			panic(err)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return sig
	}
	panic("unknown key type")
}

func hs(claims any) string {
	return sign(map[string]any{"alg": "HS256", "typ": "JWT"}, claims, testSecret)
}

func rs(kid string, claims any, k *rsa.PrivateKey) string {
	h := map[string]any{"alg": "RS256", "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	return sign(h, claims, k)
}

func es(kid string, claims any, k *ecdsa.PrivateKey) string {
	h := map[string]any{"alg": "ES256", "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	return sign(h, claims, k)
}

// claimsAt returns ordinary claims for uid, issued at now and valid for
// an hour.
func claimsAt(uid string, now time.Time) map[string]any {
	return map[string]any{"sub": uid, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func pkixPEM(pub any) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func certPEM(priv crypto.Signer) []byte {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "securetoken.system.gserviceaccount.com"},
		NotBefore:    t0.Add(-24 * time.Hour),
		// Already expired on purpose: validity dates must not matter.
		NotAfter: t0.Add(-time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func jwkRSAJSON(kid string, pub *rsa.PublicKey) map[string]any {
	return map[string]any{
		"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": enc(pub.N.Bytes()), "e": enc(big.NewInt(int64(pub.E)).Bytes()),
	}
}

func jwkECJSON(kid string, pub *ecdsa.PublicKey) map[string]any {
	raw, err := pub.Bytes() // 0x04 || X || Y
	if err != nil {
		panic(err)
	}
	return map[string]any{
		"kty": "EC", "kid": kid, "crv": "P-256",
		"x": enc(raw[1:33]), "y": enc(raw[33:]),
	}
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newVerifier(t testing.TB, cfg Config) *Verifier {
	t.Helper()
	v, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

// wantErr checks that err wraps exactly the sentinel want.
func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", want)
	}
	other := ErrExpired
	if want == ErrExpired {
		other = ErrMalformed
	}
	if !errors.Is(err, want) || errors.Is(err, other) {
		t.Fatalf("error %q: want it to wrap only %v", err, want)
	}
}

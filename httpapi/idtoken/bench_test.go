package idtoken

import (
	"fmt"
	"testing"
	"time"
)

func benchVerifier(b *testing.B, cacheSize int) *Verifier {
	now := time.Now()
	dir := b.TempDir()
	v, err := New(Config{
		HS256Secrets: [][]byte{testSecret},
		KeyFiles:     []string{writeFile(b, dir, "x509.json", mustJSON(map[string]string{"k1": string(certPEM(rsaKeys()[0]))}))},
		Audiences:    []string{"proj"},
		Issuers:      []string{"https://securetoken.google.com/proj"},
		Now:          func() time.Time { return now },
		CacheSize:    cacheSize,
	})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// firebaseClaims is a realistically sized Firebase ID token payload.
func firebaseClaims(i int) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": "https://securetoken.google.com/proj", "aud": "proj",
		"auth_time": now.Unix(), "user_id": fmt.Sprint("user", i), "sub": fmt.Sprint("user", i),
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"email": "someone@example.com", "email_verified": true,
		"firebase": map[string]any{"identities": map[string]any{"email": []any{"someone@example.com"}}, "sign_in_provider": "password"},
	}
}

func benchVerify(b *testing.B, v *Verifier, tok string) {
	if _, err := v.Verify(tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyRS256Cached(b *testing.B) {
	benchVerify(b, benchVerifier(b, 0), rs("k1", firebaseClaims(0), rsaKeys()[0]))
}

func BenchmarkVerifyRS256Uncached(b *testing.B) {
	benchVerify(b, benchVerifier(b, -1), rs("k1", firebaseClaims(0), rsaKeys()[0]))
}

func BenchmarkVerifyHS256Cached(b *testing.B) {
	benchVerify(b, benchVerifier(b, 0), hs(firebaseClaims(0)))
}

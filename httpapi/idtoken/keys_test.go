package idtoken

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func TestPEMSeveralBlocks(t *testing.T) {
	r, e := rsaKeys(), ecKeys()
	var file bytes.Buffer
	file.WriteString("Comments around blocks are ignored, as openssl writes them.\n")
	file.Write(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&r[0].PublicKey)}))
	file.Write(certPEM(r[1]))
	file.Write(pkixPEM(&e[0].PublicKey))
	file.Write(certPEM(e[1]))
	file.Write(pkixPEM(&r[2].PublicKey))
	v := newVerifier(t, Config{
		KeyFiles: []string{writeFile(t, t.TempDir(), "keys.pem", file.Bytes())},
		Now:      func() time.Time { return t0 },
	})
	c := claimsAt("u", t0)
	for name, tok := range map[string]string{
		"RSA PUBLIC KEY":   rs("", c, r[0]),
		"RSA CERTIFICATE":  rs("", c, r[1]),
		"EC PUBLIC KEY":    es("", c, e[0]),
		"EC CERTIFICATE":   es("", c, e[1]),
		"RSA PKIX":         rs("", c, r[2]),
		"RSA PKIX, kid":    rs("some-kid", c, r[2]),
		"EC PKIX, kid set": es("x", c, e[0]),
	} {
		if _, err := v.Verify(tok); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := len(v.keys.Load().keys); n != 5 {
		t.Errorf("%d keys loaded, want 5", n)
	}
}

func TestJWKS(t *testing.T) {
	r, e := rsaKeys(), ecKeys()
	jwks := mustJSON(map[string]any{"keys": []any{
		jwkRSAJSON("r0", &r[0].PublicKey),
		// Keys this package cannot use are skipped, not refused.
		map[string]any{"kty": "oct", "kid": "sym", "k": enc(testSecret)},
		map[string]any{"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
		map[string]any{"kty": "RSA", "kid": "ps", "alg": "PS256", "n": "AQAB", "e": "AQAB"},
		map[string]any{"kty": "EC", "kid": "p384", "crv": "P-384", "x": "AA", "y": "AA"},
		map[string]any{"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": "AA"},
		jwkECJSON("e0", &e[0].PublicKey),
		// No kid: tried for every token.
		jwkRSAJSON("", &r[1].PublicKey),
	}})
	v := newVerifier(t, Config{
		KeyFiles: []string{writeFile(t, t.TempDir(), "jwks.json", jwks)},
		Now:      func() time.Time { return t0 },
	})
	c := claimsAt("u", t0)
	for name, tok := range map[string]string{
		"r0":           rs("r0", c, r[0]),
		"e0":           es("e0", c, e[0]),
		"no-kid key":   rs("r0", c, r[1]),
		"no-kid key 2": rs("", c, r[1]),
	} {
		if _, err := v.Verify(tok); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The "oct" key must not have become an HMAC secret.
	_, err := v.Verify(sign(map[string]any{"alg": "HS256", "kid": "sym"}, c, testSecret))
	wantErr(t, err, ErrMalformed)
	if n := len(v.keys.Load().keys); n != 3 {
		t.Errorf("%d keys loaded, want 3", n)
	}

	// Padded base64 in n and e is tolerated.
	padded := jwkRSAJSON("p", &r[2].PublicKey)
	padded["n"] = padded["n"].(string) + strings.Repeat("=", (4-len(padded["n"].(string))%4)%4)
	padded["e"] = "AQAB"
	pv := newVerifier(t, Config{
		KeyFiles: []string{writeFile(t, t.TempDir(), "jwks.json", mustJSON(map[string]any{"keys": []any{padded}}))},
		Now:      func() time.Time { return t0 },
	})
	if _, err := pv.Verify(rs("p", c, r[2])); err != nil {
		t.Error(err)
	}
}

func TestX509JSON(t *testing.T) {
	r, e := rsaKeys(), ecKeys()
	file := mustJSON(map[string]string{
		"a1": string(certPEM(r[0])),
		"b2": string(certPEM(e[0])),
	})
	v := newVerifier(t, Config{
		KeyFiles: []string{writeFile(t, t.TempDir(), "x509.json", file)},
		Now:      func() time.Time { return t0 },
	})
	c := claimsAt("u", t0)
	if _, err := v.Verify(rs("a1", c, r[0])); err != nil {
		t.Error(err)
	}
	if _, err := v.Verify(es("b2", c, e[0])); err != nil {
		t.Error(err)
	}
	_, err := v.Verify(rs("b2", c, r[0]))
	wantErr(t, err, ErrMalformed)
	_, err = v.Verify(rs("c3", c, r[0]))
	wantErr(t, err, ErrMalformed)
}

func TestBadKeyFiles(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(ecKeys()[0])
	if err != nil {
		t.Fatal(err)
	}
	good := pkixPEM(&rsaKeys()[0].PublicKey)
	cases := map[string][]byte{
		"empty":            nil,
		"blank":            []byte(" \n\t"),
		"garbage":          []byte("not a key at all"),
		"small RSA":        pkixPEM(&small.PublicKey),
		"small RSA cert":   certPEM(small),
		"P-384":            pkixPEM(&p384.PublicKey),
		"private key":      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}),
		"good then bad":    append(append([]byte{}, good...), pkixPEM(&small.PublicKey)...),
		"corrupt block":    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("junk")}),
		"bad JSON":         []byte(`{"keys": [`),
		"empty JSON":       []byte(`{}`),
		"keys not array":   []byte(`{"keys": {}}`),
		"no usable JWK":    []byte(`{"keys": [{"kty":"oct","k":"AAAA"}]}`),
		"JWK without kty":  []byte(`{"keys": [{"n":"AQAB","e":"AQAB"}]}`),
		"JWK bad n":        []byte(`{"keys": [{"kty":"RSA","n":"!!","e":"AQAB"}]}`),
		"JWK small n":      []byte(`{"keys": [{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`),
		"JWK even e":       mustJSON(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "n": enc(rsaKeys()[0].N.Bytes()), "e": "AQAA"}}}),
		"JWK huge e":       mustJSON(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "n": enc(rsaKeys()[0].N.Bytes()), "e": "AQAAAAAB"}}}),
		"JWK EC off curve": []byte(`{"keys": [{"kty":"EC","crv":"P-256","x":"` + enc(make([]byte, 32)) + `","y":"` + enc(make([]byte, 32)) + `"}]}`),
		"JWK EC short x":   []byte(`{"keys": [{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}]}`),
		"JWK not object":   []byte(`{"keys": [5]}`),
		"x509 not string":  []byte(`{"a": 5}`),
		"x509 not PEM":     []byte(`{"a": "hello"}`),
		"x509 public key":  mustJSON(map[string]string{"a": string(good)}),
		"x509 two certs":   mustJSON(map[string]string{"a": string(certPEM(rsaKeys()[0])) + string(certPEM(rsaKeys()[1]))}),
		"x509 empty kid":   mustJSON(map[string]string{"": string(certPEM(rsaKeys()[0]))}),
		"x509 small cert":  mustJSON(map[string]string{"a": string(certPEM(small))}),
		"JSON array":       []byte(`[{"kty":"RSA"}]`),
		"over 4 MiB":       append(bytes.Repeat([]byte("\n"), 4<<20), good...),
	}
	dir := t.TempDir()
	for name, data := range cases {
		path := writeFile(t, dir, "f", data)
		v, err := New(Config{KeyFiles: []string{path}})
		if err == nil {
			t.Errorf("%s: New succeeded with %d keys", name, len(v.keys.Load().keys))
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
}

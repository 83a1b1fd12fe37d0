package idtoken

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// fuzzSecret is fixed so that the committed seed corpus (testdata/fuzz)
// holds HS256 tokens that verify, which lets mutations reach the claims
// code.
var fuzzSecret = []byte("idtoken fuzz secret, 32+ bytes long")

// FuzzVerify feeds arbitrary strings to Verify, which must neither panic
// nor break its error contract. Because mutations of a signed token almost
// always break the signature, each input is also used as the payload of a
// token signed with fuzzSecret, so the claims and auth code see arbitrary
// JSON too.
func FuzzVerify(f *testing.F) {
	dir := f.TempDir()
	v, err := New(Config{
		HS256Secrets: [][]byte{fuzzSecret},
		KeyFiles: []string{
			writeFile(f, dir, "rsa.pem", pkixPEM(&rsaKeys()[0].PublicKey)),
			writeFile(f, dir, "jwks.json", mustJSON(map[string]any{"keys": []any{jwkECJSON("e", &ecKeys()[0].PublicKey)}})),
		},
		Audiences: []string{"proj"},
		Leeway:    time.Second,
		Now:       func() time.Time { return t0 },
		CacheSize: 64,
	})
	if err != nil {
		f.Fatal(err)
	}
	// Seeds that depend on this run's random keys; the fixed ones are in
	// testdata/fuzz/FuzzVerify.
	c := claimsAt("u", t0)
	c["aud"] = "proj"
	f.Add(rs("", c, rsaKeys()[0]))
	f.Add(es("e", c, ecKeys()[0]))

	f.Fuzz(func(t *testing.T, s string) {
		check(t, v, s)
		check(t, v, sign(map[string]any{"alg": "HS256"}, s, fuzzSecret))
		_ = LooksLikeJWT(s)
	})
}

func check(t *testing.T, v *Verifier, tok string) {
	id, err := v.Verify(tok)
	if err != nil {
		if errors.Is(err, ErrMalformed) == errors.Is(err, ErrExpired) {
			t.Fatalf("error %q wraps neither or both sentinels", err)
		}
		return
	}
	if id == nil || id.Auth == nil {
		t.Fatal("nil identity without an error")
	}
	if _, ok := id.Auth["token"].(map[string]any); !ok {
		t.Fatalf("auth without token: %v", id.Auth)
	}
	if !LooksLikeJWT(tok) {
		t.Fatalf("verified token %q does not look like a JWT", tok)
	}
}

// TestFuzzSeedsVerify keeps the committed corpus meaningful: its valid
// seeds must still verify, or fuzzing would start from rejected inputs
// only.
func TestFuzzSeedsVerify(t *testing.T) {
	v, err := New(Config{HS256Secrets: [][]byte{fuzzSecret}, Audiences: []string{"proj"}, Leeway: time.Second, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range fuzzSeeds() {
		want := fmt.Sprintf("go test fuzz v1\nstring(%s)\n", strconv.Quote(seed.token))
		got, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzVerify", "seed-"+seed.name))
		if err != nil || string(got) != want {
			t.Errorf("seed %s: committed file is missing or stale (regenerate with IDTOKEN_WRITE_SEEDS=1): %v", seed.name, err)
		}
		_, err = v.Verify(seed.token)
		if (err == nil) != seed.valid {
			t.Errorf("seed %s: err = %v, want valid=%v", seed.name, err, seed.valid)
		}
	}
}

type fuzzSeed struct {
	name  string
	token string
	valid bool
}

// fuzzSeeds are the committed corpus's contents; TestWriteFuzzSeeds
// regenerates the files from them.
func fuzzSeeds() []fuzzSeed {
	hsTok := func(claims string) string {
		return sign(map[string]any{"alg": "HS256", "typ": "JWT"}, claims, fuzzSecret)
	}
	raw := func(header, payload, sig string) string {
		b := base64.RawURLEncoding
		return b.EncodeToString([]byte(header)) + "." + b.EncodeToString([]byte(payload)) + "." + sig
	}
	return []fuzzSeed{
		{"hs256", hsTok(`{"sub":"u","aud":"proj","iat":1700000000,"exp":1700003600}`), true},
		{"hs256-firebase", hsTok(`{"iss":"https://securetoken.google.com/proj","aud":"proj","auth_time":1699990000,"user_id":"Xy","sub":"Xy","iat":1699999000,"exp":1700002600,"email":"a@b.c","email_verified":true,"firebase":{"identities":{"email":["a@b.c"]},"sign_in_provider":"password"}}`), true},
		{"hs256-aud-array", hsTok(`{"user_id":"u","aud":["x","proj"],"iat":1699999000,"exp":1700000000.5}`), true},
		{"legacy", hsTok(`{"v":0,"iat":1700000000,"exp":1700003600,"aud":"proj","d":{"uid":"l","n":[1,{"a":null}]}}`), true},
		{"no-exp", hsTok(`{"sub":"u","aud":"proj","iat":1700000000}`), false},
		{"no-iat", hsTok(`{"sub":"u","aud":"proj","exp":1700003600}`), false},
		{"long-lived", hsTok(`{"sub":"u","aud":"proj","iat":1700000000,"exp":1700003601}`), false},
		{"legacy-bad-d", hsTok(`{"v":0,"aud":"proj","d":[]}`), false},
		{"expired", hsTok(`{"sub":"u","aud":"proj","exp":1}`), false},
		{"nbf-future", hsTok(`{"sub":"u","aud":"proj","nbf":1e12}`), false},
		{"wrong-aud", hsTok(`{"sub":"u","aud":"other"}`), false},
		{"payload-array", hsTok(`[{"sub":"u"}]`), false},
		{"none", raw(`{"alg":"none"}`, `{"sub":"u","aud":"proj"}`, ""), false},
		{"rs256-kid", raw(`{"alg":"RS256","kid":"k1"}`, `{"sub":"u"}`, "AAAA"), false},
		{"es256", raw(`{"alg":"ES256"}`, `{"sub":"u"}`, base64.RawURLEncoding.EncodeToString(make([]byte, 64))), false},
		{"crit", raw(`{"alg":"HS256","crit":["x"]}`, `{}`, ""), false},
		{"garbage", "not.a.jwt!", false},
		{"dots", "..", false},
	}
}

// TestWriteFuzzSeeds rewrites testdata/fuzz/FuzzVerify from fuzzSeeds
// when IDTOKEN_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("IDTOKEN_WRITE_SEEDS") != "1" {
		t.Skip("set IDTOKEN_WRITE_SEEDS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzVerify")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range fuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\nstring(%s)\n", strconv.Quote(s.token))
		if err := os.WriteFile(filepath.Join(dir, "seed-"+s.name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package idtoken

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// allAlgs returns a verifier trusting testSecret, RSA key 0 and EC key 0
// (PEM files), with the clock at t0.
func allAlgs(t testing.TB, mod func(*Config)) *Verifier {
	dir := t.TempDir()
	cfg := Config{
		HS256Secrets: [][]byte{testSecret},
		KeyFiles: []string{
			writeFile(t, dir, "rsa.pem", pkixPEM(&rsaKeys()[0].PublicKey)),
			writeFile(t, dir, "ec.pem", pkixPEM(&ecKeys()[0].PublicKey)),
		},
		Now: func() time.Time { return t0 },
	}
	if mod != nil {
		mod(&cfg)
	}
	return newVerifier(t, cfg)
}

func TestEachAlgorithm(t *testing.T) {
	v := allAlgs(t, nil)
	claims := claimsAt("alice", t0)
	for name, tok := range map[string]string{
		"HS256": hs(claims),
		"RS256": rs("", claims, rsaKeys()[0]),
		"ES256": es("", claims, ecKeys()[0]),
	} {
		t.Run(name, func(t *testing.T) {
			id, err := v.Verify(tok)
			if err != nil {
				t.Fatal(err)
			}
			if id.Auth["uid"] != "alice" || id.Auth["provider"] != "custom" {
				t.Errorf("auth = %v", id.Auth)
			}
			if !id.Expires.Equal(t0.Add(time.Hour)) {
				t.Errorf("Expires = %v", id.Expires)
			}
			if !LooksLikeJWT(tok) {
				t.Error("LooksLikeJWT = false")
			}
		})
	}
}

func TestBadSignature(t *testing.T) {
	v := allAlgs(t, nil)
	claims := claimsAt("alice", t0)
	for name, tok := range map[string]string{
		"HS256 other secret": sign(map[string]any{"alg": "HS256"}, claims, []byte("another secret of enough length!!")),
		"RS256 other key":    rs("", claims, rsaKeys()[1]),
		"ES256 other key":    es("", claims, ecKeys()[1]),
		"HS256 flipped":      flipSig(hs(claims)),
		"RS256 flipped":      flipSig(rs("", claims, rsaKeys()[0])),
		"ES256 flipped":      flipSig(es("", claims, ecKeys()[0])),
		"ES256 short sig":    es("", claims, ecKeys()[0])[:len(es("", claims, ecKeys()[0]))-4],
		"payload swapped":    swapPayload(rs("", claims, rsaKeys()[0]), claimsAt("mallory", t0)),
		// An RS256 signature presented as ES256 and vice versa.
		"RS256 as ES256": relabel(rs("", claims, rsaKeys()[0]), "ES256"),
		"ES256 as RS256": relabel(es("", claims, ecKeys()[0]), "RS256"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(tok)
			wantErr(t, err, ErrMalformed)
		})
	}
}

func flipSig(tok string) string {
	i := strings.LastIndexByte(tok, '.')
	sig := []byte(tok[i+1:])
	if sig[0] == 'A' {
		sig[0] = 'B'
	} else {
		sig[0] = 'A'
	}
	return tok[:i+1] + string(sig)
}

func swapPayload(tok string, claims any) string {
	parts := strings.Split(tok, ".")
	return parts[0] + "." + enc(mustJSON(claims)) + "." + parts[2]
}

func relabel(tok, alg string) string {
	parts := strings.Split(tok, ".")
	return enc(mustJSON(map[string]any{"alg": alg})) + "." + parts[1] + "." + parts[2]
}

// TestAlgConfusion: the classic attack signs an HS256 token with the
// server's RSA public key (which is public) as the HMAC secret.
func TestAlgConfusion(t *testing.T) {
	pub := &rsaKeys()[0].PublicKey
	dir := t.TempDir()
	pemBytes := pkixPEM(pub)
	path := writeFile(t, dir, "rsa.pem", pemBytes)
	claims := claimsAt("admin", t0)
	der := func() []byte { b, _ := json.Marshal(pub); return b }()
	forged := []string{
		sign(map[string]any{"alg": "HS256"}, claims, pemBytes),
		sign(map[string]any{"alg": "HS256"}, claims, []byte(strings.TrimSpace(string(pemBytes)))),
		sign(map[string]any{"alg": "HS256"}, claims, pub.N.Bytes()),
		sign(map[string]any{"alg": "HS256"}, claims, der),
	}
	for _, secrets := range [][][]byte{nil, {testSecret}} {
		v := newVerifier(t, Config{KeyFiles: []string{path}, HS256Secrets: secrets, Now: func() time.Time { return t0 }})
		for i, tok := range forged {
			if _, err := v.Verify(tok); err == nil {
				t.Fatalf("forged token %d (secrets %d) verified", i, len(secrets))
			} else {
				wantErr(t, err, ErrMalformed)
			}
		}
	}
}

func TestUnsignedAndOtherAlgs(t *testing.T) {
	v := allAlgs(t, nil)
	claims := claimsAt("alice", t0)
	payload := enc(mustJSON(claims))
	for _, tok := range []string{
		enc([]byte(`{"alg":"none"}`)) + "." + payload + ".",
		enc([]byte(`{"alg":"none"}`)) + "." + payload + "." + enc(rawSign("x", testSecret)),
		enc([]byte(`{"alg":"None"}`)) + "." + payload + ".",
		enc([]byte(`{"alg":"NONE"}`)) + "." + payload + ".",
		enc([]byte(`{}`)) + "." + payload + ".",
		enc([]byte(`{"alg":""}`)) + "." + payload + ".",
		enc([]byte(`{"alg":null}`)) + "." + payload + ".",
		sign(map[string]any{"alg": "hs256"}, claims, testSecret),
		sign(map[string]any{"alg": "HS512"}, claims, testSecret),
		sign(map[string]any{"alg": "PS256"}, claims, rsaKeys()[0]),
		sign(map[string]any{"alg": "ES384"}, claims, ecKeys()[0]),
		sign(map[string]any{"alg": "HS256", "crit": []string{"exp"}, "exp": 1}, claims, testSecret),
		sign(map[string]any{"alg": 256}, claims, testSecret),
		// Member names are exact: "ALG" is not "alg".
		sign(map[string]any{"ALG": "HS256"}, claims, testSecret),
		sign(map[string]any{"alg": "none", "Alg": "HS256"}, claims, testSecret),
		sign(map[string]any{"alg": "HS256", "kid": 5}, claims, testSecret),
	} {
		_, err := v.Verify(tok)
		wantErr(t, err, ErrMalformed)
	}
}

func TestKid(t *testing.T) {
	r := rsaKeys()
	e := ecKeys()
	dir := t.TempDir()
	jwks := mustJSON(map[string]any{"keys": []any{
		jwkRSAJSON("a", &r[0].PublicKey),
		jwkRSAJSON("b", &r[1].PublicKey),
		jwkECJSON("e", &e[0].PublicKey),
	}})
	v := newVerifier(t, Config{
		KeyFiles: []string{writeFile(t, dir, "jwks.json", jwks)},
		Now:      func() time.Time { return t0 },
	})
	c := claimsAt("u", t0)
	ok := map[string]string{
		"kid b, key b":   rs("b", c, r[1]),
		"kid a, key a":   rs("a", c, r[0]),
		"no kid, key b":  rs("", c, r[1]),
		"kid e, EC key":  es("e", c, e[0]),
		"no kid, EC key": es("", c, e[0]),
	}
	for name, tok := range ok {
		if _, err := v.Verify(tok); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]string{
		"kid a, key b":       rs("a", c, r[1]),
		"unknown kid":        rs("zzz", c, r[0]),
		"RSA kid for EC":     es("a", c, e[0]),
		"EC kid for RSA":     rs("e", c, r[0]),
		"no kid, absent key": rs("", c, r[2]),
	}
	for name, tok := range bad {
		_, err := v.Verify(tok)
		if err == nil {
			t.Errorf("%s: verified", name)
			continue
		}
		wantErr(t, err, ErrMalformed)
	}

	// Keys without ids (PEM) are tried whatever the kid says, since the
	// file cannot say which key is which.
	pv := newVerifier(t, Config{
		KeyFiles: []string{writeFile(t, dir, "k.pem", pkixPEM(&r[2].PublicKey))},
		Now:      func() time.Time { return t0 },
	})
	if _, err := pv.Verify(rs("whatever", c, r[2])); err != nil {
		t.Errorf("PEM key with kid header: %v", err)
	}
}

func TestTimes(t *testing.T) {
	v := allAlgs(t, nil) // leeway defaults to one minute
	sec := func(d time.Duration) float64 { return float64(t0.Add(d).UnixNano()) / 1e9 }
	// times are the claims of a token valid from t0 - 10 min for an hour,
	// with the given claims set (nil: removed).
	times := func(set map[string]any) map[string]any {
		c := map[string]any{"sub": "u", "iat": sec(-10 * time.Minute), "exp": sec(50 * time.Minute)}
		for k, v := range set {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	cases := []struct {
		name   string
		claims map[string]any
		want   error
	}{
		{"ordinary", times(nil), nil},
		{"no exp", times(map[string]any{"exp": nil}), ErrMalformed},
		{"no iat", times(map[string]any{"iat": nil}), ErrMalformed},
		{"neither", map[string]any{"sub": "u"}, ErrMalformed},
		{"exp within leeway", times(map[string]any{"exp": sec(-59 * time.Second)}), nil},
		{"exp beyond leeway", times(map[string]any{"exp": sec(-61 * time.Second)}), ErrExpired},
		{"exp long ago", times(map[string]any{"exp": 1, "iat": 0}), ErrExpired},
		{"exp fractional", times(map[string]any{"exp": sec(-60500 * time.Millisecond)}), ErrExpired},
		{"exp huge", times(map[string]any{"exp": 1e300}), ErrMalformed},
		{"exp not a number", times(map[string]any{"exp": "9999999999"}), ErrMalformed},
		{"nbf within leeway", times(map[string]any{"nbf": sec(59 * time.Second)}), nil},
		{"nbf future", times(map[string]any{"nbf": sec(61 * time.Second)}), ErrMalformed},
		{"iat within leeway", times(map[string]any{"iat": sec(59 * time.Second)}), nil},
		{"iat beyond leeway", times(map[string]any{"iat": sec(61 * time.Second)}), ErrMalformed},
		{"iat future", times(map[string]any{"iat": sec(2 * time.Hour), "exp": sec(3 * time.Hour)}), ErrMalformed},
		{"iat not a number", times(map[string]any{"iat": true}), ErrMalformed},
		{"lifetime one hour", times(map[string]any{"iat": sec(-time.Hour), "exp": sec(0)}), nil},
		{"lifetime a second over", times(map[string]any{"iat": sec(-time.Hour - time.Second), "exp": sec(0)}), ErrMalformed},
		{"lifetime a day", times(map[string]any{"iat": sec(-time.Hour), "exp": sec(23 * time.Hour)}), ErrMalformed},
		{"exp before iat", times(map[string]any{"iat": sec(-time.Minute), "exp": sec(-2 * time.Hour)}), ErrExpired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := v.Verify(hs(c.claims))
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if exp := c.claims["exp"].(float64); !id.Expires.Equal(unixTime(exp)) {
					t.Errorf("Expires = %v, want %v", id.Expires, unixTime(exp))
				}
				return
			}
			wantErr(t, err, c.want)
		})
	}

	// A fractional exp is kept to the nanosecond (within float precision).
	id, err := v.Verify(hs(map[string]any{"sub": "u", "iat": t0.Unix(), "exp": 1700000100.25}))
	if err != nil {
		t.Fatal(err)
	}
	if d := id.Expires.Sub(time.Unix(1700000100, 250_000_000)); d > time.Microsecond || d < -time.Microsecond {
		t.Errorf("Expires = %v", id.Expires)
	}

	// A configured leeway replaces the minute.
	strict := allAlgs(t, func(c *Config) { c.Leeway = time.Second })
	_, err = strict.Verify(hs(times(map[string]any{"exp": sec(-2 * time.Second)})))
	wantErr(t, err, ErrExpired)
	_, err = strict.Verify(hs(times(map[string]any{"iat": sec(2 * time.Second)})))
	wantErr(t, err, ErrMalformed)

	// A configured lifetime replaces the hour.
	day := allAlgs(t, func(c *Config) { c.MaxLifetime = 24 * time.Hour })
	if _, err := day.Verify(hs(times(map[string]any{"iat": sec(-time.Hour), "exp": sec(23 * time.Hour)}))); err != nil {
		t.Fatalf("a day-long token with a one-day limit: %v", err)
	}
	_, err = day.Verify(hs(times(map[string]any{"iat": sec(-time.Hour), "exp": sec(23*time.Hour + time.Second)})))
	wantErr(t, err, ErrMalformed)
}

func TestAudienceAndIssuer(t *testing.T) {
	v := allAlgs(t, func(c *Config) {
		c.Audiences = []string{"proj-a", "proj-b"}
		c.Issuers = []string{"https://securetoken.google.com/proj-a"}
	})
	iss := "https://securetoken.google.com/proj-a"
	cases := []struct {
		name string
		aud  any
		iss  any
		ok   bool
	}{
		{"match", "proj-a", iss, true},
		{"second audience", "proj-b", iss, true},
		{"aud array", []any{"x", "proj-b"}, iss, true},
		{"wrong aud", "proj-c", iss, false},
		{"aud array without match", []any{"x", "y"}, iss, false},
		{"aud array with non-string", []any{1, "proj-a"}, iss, false},
		{"aud number", 5, iss, false},
		{"no aud", nil, iss, false},
		{"wrong iss", "proj-a", "https://securetoken.google.com/proj-b", false},
		{"iss array", "proj-a", []any{iss}, false},
		{"no iss", "proj-a", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claims := claimsAt("u", t0)
			if c.aud != nil {
				claims["aud"] = c.aud
			}
			if c.iss != nil {
				claims["iss"] = c.iss
			}
			_, err := v.Verify(rs("", claims, rsaKeys()[0]))
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, ErrMalformed)
		})
	}

	// Unconfigured, aud and iss are not looked at.
	open := allAlgs(t, nil)
	claims := claimsAt("u", t0)
	claims["aud"], claims["iss"] = 5, []any{}
	if _, err := open.Verify(hs(claims)); err != nil {
		t.Fatal(err)
	}
}

// TestFirebaseIDToken builds a token shaped like a real Firebase
// Authentication ID token, signed with a certificate from x509 JSON.
func TestFirebaseIDToken(t *testing.T) {
	const project = "my-project"
	k := rsaKeys()[1]
	dir := t.TempDir()
	x509JSON := mustJSON(map[string]string{
		"kid-other": string(certPEM(rsaKeys()[2])),
		"kid-1":     string(certPEM(k)),
	})
	v := newVerifier(t, Config{
		KeyFiles:  []string{writeFile(t, dir, "securetoken.json", x509JSON)},
		Audiences: []string{project},
		Issuers:   []string{"https://securetoken.google.com/" + project},
		Now:       func() time.Time { return t0 },
	})
	claims := map[string]any{
		"iss":            "https://securetoken.google.com/" + project,
		"aud":            project,
		"auth_time":      t0.Add(-time.Hour).Unix(),
		"user_id":        "Xy12",
		"sub":            "Xy12",
		"iat":            t0.Add(-time.Minute).Unix(),
		"exp":            t0.Add(59 * time.Minute).Unix(),
		"email":          "ada@example.com",
		"email_verified": true,
		"firebase": map[string]any{
			"identities":       map[string]any{"email": []any{"ada@example.com"}},
			"sign_in_provider": "password",
		},
	}
	id, err := v.Verify(rs("kid-1", claims, k))
	if err != nil {
		t.Fatal(err)
	}
	// The claims as the JSON decoder sees them: numbers are float64.
	var wantClaims map[string]any
	if err := json.Unmarshal(mustJSON(claims), &wantClaims); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"uid": "Xy12", "provider": "password", "token": wantClaims}
	if !reflect.DeepEqual(id.Auth, want) {
		t.Errorf("auth =\n%v\nwant\n%v", id.Auth, want)
	}
	tok := id.Auth["token"].(map[string]any)
	if tok["email_verified"] != true || tok["email"] != "ada@example.com" {
		t.Errorf("token = %v", tok)
	}

	// Signed by the other certificate's key but naming kid-1.
	_, err = v.Verify(rs("kid-1", claims, rsaKeys()[2]))
	wantErr(t, err, ErrMalformed)
	// Without a kid every certificate is tried.
	if _, err := v.Verify(rs("", claims, rsaKeys()[2])); err != nil {
		t.Error(err)
	}
}

func TestSubject(t *testing.T) {
	v := allAlgs(t, nil)
	cases := []struct {
		name   string
		claims map[string]any
		uid    string // "" means refused
	}{
		{"sub", map[string]any{"sub": "a"}, "a"},
		{"user_id only", map[string]any{"user_id": "b"}, "b"},
		{"sub wins", map[string]any{"sub": "a", "user_id": "b"}, "a"},
		{"neither", map[string]any{"name": "x"}, ""},
		{"sub number", map[string]any{"sub": 5, "user_id": "b"}, ""},
		{"sub empty", map[string]any{"sub": ""}, ""},
		{"sub null", map[string]any{"sub": nil}, ""},
		{"user_id object", map[string]any{"user_id": map[string]any{}}, ""},
		{"provider not a string", map[string]any{"sub": "a", "firebase": map[string]any{"sign_in_provider": 3}}, "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claims := claimsAt("", t0)
			delete(claims, "sub")
			for k, val := range c.claims {
				claims[k] = val
			}
			id, err := v.Verify(rs("", claims, rsaKeys()[0]))
			if c.uid == "" {
				wantErr(t, err, ErrMalformed)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Auth["uid"] != c.uid || id.Auth["provider"] != "custom" {
				t.Errorf("auth = %v", id.Auth)
			}
		})
	}
}

func TestLegacyToken(t *testing.T) {
	v := allAlgs(t, nil)
	claims := map[string]any{
		"v": 0, "iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix(),
		"d": map[string]any{"uid": "legacy-1", "team": "blue", "level": 3},
	}
	id, err := v.Verify(hs(claims))
	if err != nil {
		t.Fatal(err)
	}
	if id.Auth["uid"] != "legacy-1" || id.Auth["team"] != "blue" || id.Auth["level"] != 3.0 {
		t.Errorf("auth = %v", id.Auth)
	}
	if _, has := id.Auth["provider"]; has {
		t.Error("legacy auth has a provider")
	}
	tok, _ := id.Auth["token"].(map[string]any)
	if tok["v"] != 0.0 || tok["d"] == nil {
		t.Errorf("auth.token = %v", tok)
	}
	// The value must not contain itself, or rendering it would never end.
	if _, err := json.Marshal(id.Auth); err != nil {
		t.Fatal(err)
	}
	if !id.Expires.Equal(t0.Add(time.Hour)) {
		t.Errorf("Expires = %v", id.Expires)
	}

	for name, d := range map[string]any{
		"no uid":        map[string]any{"team": "blue"},
		"uid number":    map[string]any{"uid": 7},
		"d not object":  "legacy-1",
		"d null":        nil,
		"d array":       []any{"uid"},
		"uid is object": map[string]any{"uid": map[string]any{}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(hs(map[string]any{"v": 0, "iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix(), "d": d}))
			wantErr(t, err, ErrMalformed)
		})
	}

	// A legacy token expires like any other.
	_, err = v.Verify(hs(map[string]any{"v": 0, "iat": t0.Add(-2 * time.Hour).Unix(), "exp": t0.Add(-time.Hour).Unix(), "d": map[string]any{"uid": "x"}}))
	wantErr(t, err, ErrExpired)
	// And, like any other, it needs exp: the generator's tokens without
	// one would never expire.
	_, err = v.Verify(hs(map[string]any{"v": 0, "iat": t0.Unix(), "d": map[string]any{"uid": "x"}}))
	wantErr(t, err, ErrMalformed)

	// Only HS256 tokens are legacy tokens; an RS256 token needs a sub.
	_, err = v.Verify(rs("", claims, rsaKeys()[0]))
	wantErr(t, err, ErrMalformed)
}

func TestMalformedInput(t *testing.T) {
	v := allAlgs(t, nil)
	good := hs(claimsAt("u", t0))
	parts := strings.Split(good, ".")
	for name, tok := range map[string]string{
		"empty":             "",
		"one segment":       "abc",
		"two segments":      parts[0] + "." + parts[1],
		"four segments":     good + ".x",
		"bad base64 header": "!!!." + parts[1] + "." + parts[2],
		"padded header":     parts[0] + "==." + parts[1] + "." + parts[2],
		"sig with +":        good[:len(good)-1] + "+",
		"header not JSON":   enc([]byte("hello")) + "." + parts[1] + "." + parts[2],
		"header array":      enc([]byte(`["HS256"]`)) + "." + parts[1] + "." + parts[2],
		"header null":       enc([]byte(`null`)) + "." + parts[1] + "." + parts[2],
		"payload array":     hs([]byte(`[1,2]`)),
		"payload null":      hs([]byte(`null`)),
		"payload string":    hs([]byte(`"sub"`)),
		"payload trailing":  hs([]byte(`{"sub":"u"} {}`)),
		"payload not JSON":  hs([]byte(`{"sub":`)),
		"payload 1e999":     hs([]byte(`{"sub":"u","exp":1e999}`)),
		"too long":          hs(map[string]any{"sub": "u", "pad": strings.Repeat("x", 16<<10)}),
		"whitespace":        " " + good,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(tok)
			wantErr(t, err, ErrMalformed)
		})
	}
	if _, err := v.Verify(good); err != nil {
		t.Fatal(err)
	}
}

func TestEmptyConfig(t *testing.T) {
	v := newVerifier(t, Config{})
	for _, tok := range []string{
		hs(claimsAt("u", time.Now())),
		rs("", claimsAt("u", time.Now()), rsaKeys()[0]),
		es("k", claimsAt("u", time.Now()), ecKeys()[0]),
	} {
		_, err := v.Verify(tok)
		wantErr(t, err, ErrMalformed)
	}
	if err := v.Reload(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"empty secret":   {HS256Secrets: [][]byte{testSecret, {}}},
		"negative":       {Leeway: -time.Second},
		"missing file":   {KeyFiles: []string{"/nonexistent/keys.pem"}},
		"empty path":     {KeyFiles: []string{""}},
		"directory path": {KeyFiles: []string{t.TempDir()}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestSecretRotation(t *testing.T) {
	old := []byte("the old secret, still accepted for a while")
	v := newVerifier(t, Config{HS256Secrets: [][]byte{testSecret, old}, Now: func() time.Time { return t0 }})
	for _, s := range [][]byte{testSecret, old} {
		if _, err := v.Verify(sign(map[string]any{"alg": "HS256"}, claimsAt("u", t0), s)); err != nil {
			t.Fatal(err)
		}
	}
	// The secrets are copied: changing the caller's slice changes nothing.
	old[0] ^= 1
	if _, err := v.Verify(sign(map[string]any{"alg": "HS256"}, claimsAt("v", t0), []byte("the old secret, still accepted for a while"))); err != nil {
		t.Fatal(err)
	}
}

func TestLooksLikeJWT(t *testing.T) {
	for tok, want := range map[string]bool{
		hs(claimsAt("u", t0)): true,
		"eyJh.eyJz.":          true, // unsigned: Verify refuses it with a reason
		"eyJh.eyJz.c2ln":      true,
		"":                    false,
		"..":                  false,
		"a.b":                 false,
		"eyJh..c2ln":          false,
		".eyJz.c2ln":          false,
		"eyJh.eyJz.c2ln.x":    false,
		"eyJh.eyJz.c2l=":      false,
		"eyJh.eyJz.c2l+":      false,
		"eyJh.eyJz.c2ln ":     false,
		"eyJhb.eyJz.c2ln":     false, // 5 chars cannot be base64
		"my-admin-secret":     false,
		"eyJh.eyJz.c2lu\n":    false,
	} {
		if got := LooksLikeJWT(tok); got != want {
			t.Errorf("LooksLikeJWT(%q) = %v, want %v", tok, got, want)
		}
	}
}

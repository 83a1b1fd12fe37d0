package idtoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// maxTokenLen bounds the work an unauthenticated client can cause; real ID
// tokens are around 1 KiB.
const maxTokenLen = 16 << 10

// b64url is strict so that each token has exactly one encoding: a token
// with altered padding bits is a different cache key for the same
// signature, and nothing legitimate produces one.
var b64url = base64.RawURLEncoding.Strict()

// base64URL marks the bytes of the base64url alphabet: a table lookup per
// byte is several times faster than a chain of range tests, and tokens
// are a kilobyte.
var base64URL = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") {
		t[c] = true
	}
	return t
}()

// LooksLikeJWT reports whether token has the shape of a JWS compact
// serialization: three base64url segments joined by dots, the first two
// non-empty. It lets a caller tell a JWT from another kind of credential
// (an admin secret) without decoding anything.
func LooksLikeJWT(token string) bool {
	dots := 0
	segLen := 0
	for i := 0; i < len(token); i++ {
		c := token[i]
		switch {
		case c == '.':
			if segLen == 0 || segLen%4 == 1 {
				return false
			}
			dots++
			segLen = 0
			continue
		case !base64URL[c]:
			return false
		}
		segLen++
	}
	// The signature may be empty: `alg: none` tokens end with an empty one, and they
	// should reach Verify to be refused with a reason.
	return dots == 2 && segLen%4 != 1
}

// header is the JOSE header members that matter here.
type header struct {
	Alg string
	Kid string
}

// parseHeader reads the header with exact member names. Decoding into a
// struct would also accept "ALG" or "Kid" (encoding/json matches field
// names case-insensitively), and a token must mean the same thing here as
// in every other JWT library.
func parseHeader(raw []byte) (header, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return header{}, malformed("header is not a JSON object")
	}
	// crit lists extensions the verifier must understand (RFC 7515
	// §4.1.11); this one understands none.
	if _, ok := fields["crit"]; ok {
		return header{}, malformed("header has crit extensions")
	}
	alg, err := headerString(fields, "alg")
	if err != nil {
		return header{}, err
	}
	kid, err := headerString(fields, "kid")
	if err != nil {
		return header{}, err
	}
	return header{Alg: alg, Kid: kid}, nil
}

// headerString reads an optional string member; null counts as absent.
func headerString(fields map[string]json.RawMessage, name string) (string, error) {
	var s string
	if raw, ok := fields[name]; ok {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", malformed("header %s is not a string", name)
		}
	}
	return s, nil
}

// jws is a token split into its parts; nothing in it is trusted yet.
type jws struct {
	header       header
	signingInput string // "<header>.<payload>", what the signature covers
	payload      []byte
	signature    []byte
}

// parse splits and decodes a compact JWS without checking the signature.
func parse(token string) (*jws, error) {
	h, rest, ok1 := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return nil, malformed("not three dot-separated segments")
	}
	rawHeader, err := b64url.DecodeString(h)
	if err != nil {
		return nil, malformed("header is not base64url: %v", err)
	}
	t := &jws{signingInput: token[:len(h)+1+len(p)]}
	if t.header, err = parseHeader(rawHeader); err != nil {
		return nil, err
	}
	if t.payload, err = b64url.DecodeString(p); err != nil {
		return nil, malformed("payload is not base64url: %v", err)
	}
	if t.signature, err = b64url.DecodeString(s); err != nil {
		return nil, malformed("signature is not base64url: %v", err)
	}
	return t, nil
}

// hs256Signer is the signer of a token verified with an HS256 secret.
const hs256Signer = "HS256"

// checkSignature verifies t with the keys its alg allows and returns the
// signer (hs256Signer, or the identity of the public key that matched).
// Each algorithm draws on its own key type only, so an RSA public key,
// which anyone may know, can never serve as an HMAC secret.
func (v *Verifier) checkSignature(t *jws, ks *keySet) (string, error) {
	v.sigChecks.Add(1)
	switch t.header.Alg {
	case "HS256":
		if len(v.secrets) == 0 {
			return "", malformed("HS256 token, but no HS256 secret is configured")
		}
		for _, secret := range v.secrets {
			mac := hmac.New(sha256.New, secret)
			mac.Write([]byte(t.signingInput))
			if hmac.Equal(mac.Sum(nil), t.signature) {
				return hs256Signer, nil
			}
		}
		return "", malformed("HS256 signature does not match any secret")
	case "RS256":
		keys := ks.candidates(t.header.Kid, true)
		if len(keys) == 0 {
			return "", noKey("RS256", t.header.Kid)
		}
		digest := sha256.Sum256([]byte(t.signingInput))
		for _, k := range keys {
			if rsa.VerifyPKCS1v15(k.rsa, crypto.SHA256, digest[:], t.signature) == nil {
				return k.id, nil
			}
		}
		return "", malformed("RS256 signature does not match %s", keysDesc(len(keys), t.header.Kid))
	case "ES256":
		keys := ks.candidates(t.header.Kid, false)
		if len(keys) == 0 {
			return "", noKey("ES256", t.header.Kid)
		}
		// JWS uses the raw r||s form (RFC 7518 §3.4), not ASN.1.
		if len(t.signature) != 64 {
			return "", malformed("ES256 signature is %d bytes, want 64", len(t.signature))
		}
		r := new(big.Int).SetBytes(t.signature[:32])
		s := new(big.Int).SetBytes(t.signature[32:])
		digest := sha256.Sum256([]byte(t.signingInput))
		for _, k := range keys {
			if ecdsa.Verify(k.ec, digest[:], r, s) {
				return k.id, nil
			}
		}
		return "", malformed("ES256 signature does not match %s", keysDesc(len(keys), t.header.Kid))
	case "none", "":
		return "", malformed("unsigned token (alg %q)", t.header.Alg)
	default:
		return "", malformed("alg %q is not accepted (HS256, RS256, ES256 only)", t.header.Alg)
	}
}

// noKey explains why no key could be tried.
func noKey(alg, kid string) error {
	if kid != "" {
		return malformed("%s token with kid %q, but no such key is configured", alg, kid)
	}
	return malformed("%s token, but no %s key is configured", alg, alg)
}

// keysDesc names the keys a signature was tried against, for the log.
func keysDesc(n int, kid string) string {
	if kid != "" {
		return fmt.Sprintf("the %d key(s) eligible for kid %q", n, kid)
	}
	return fmt.Sprintf("any of %d key(s)", n)
}

package idtoken

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// minRSABits is the smallest RSA modulus accepted: RFC 7518 §3.3 requires
// 2048 bits for RS256, and smaller keys are factorable by a determined
// attacker.
const minRSABits = 2048

// publicKey is one verification key. Exactly one of rsa and ec is set.
type publicKey struct {
	kid string // "" when the source gives no id (PEM, JWKS without kid)
	rsa *rsa.PublicKey
	ec  *ecdsa.PublicKey
	// id is the key's identity (identity), the same for the same key
	// whichever file or reload it comes from.
	id string
}

// keySet is an immutable snapshot of every key from every key file; it is
// replaced as a whole on reload so Verify never sees a half-updated set.
type keySet struct {
	keys []*publicKey
	// ids holds the identity of every key, for Verifier.Trusts.
	ids map[string]struct{}
	// fingerprint identifies the set's contents, so that rewriting a file
	// with the same keys does not throw away the cache.
	fingerprint [32]byte
	// gen increases with every change; a verification that started
	// against an older set must not be cached (see cache.add).
	gen uint64
}

// newKeySet combines the keys of several files.
func newKeySet(files [][]*publicKey, gen uint64) *keySet {
	ks := &keySet{gen: gen, ids: make(map[string]struct{})}
	var ids []string
	for _, f := range files {
		for _, k := range f {
			ks.keys = append(ks.keys, k)
			ks.ids[k.id] = struct{}{}
			ids = append(ids, k.id)
		}
	}
	// Order-independent so that reordering a JWKS is not a change.
	slices.Sort(ids)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	h.Sum(ks.fingerprint[:0])
	return ks
}

// has reports whether the key with identity id is in the set.
func (ks *keySet) has(id string) bool {
	_, ok := ks.ids[id]
	return ok
}

// identity is a canonical encoding of a key and its id.
func identity(kid string, pub any) string {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	return kid + "\x00" + string(sum[:])
}

// candidates lists the keys that may have signed a token with the given
// kid and family (RSA or EC). A kid that matches no identified key still
// leaves the unidentified ones, since a PEM file cannot say which key is
// which.
func (ks *keySet) candidates(kid string, wantRSA bool) []*publicKey {
	var out []*publicKey
	for _, k := range ks.keys {
		if (k.rsa != nil) != wantRSA {
			continue
		}
		if kid != "" && k.kid != "" && k.kid != kid {
			continue
		}
		out = append(out, k)
	}
	return out
}

// parseKeys reads one key file's contents. A JSON object is a JWKS when it
// has "keys" and Google's x509 JSON otherwise; anything else is PEM.
func parseKeys(data []byte) ([]*publicKey, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty key file")
	}
	if trimmed[0] == '{' {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &obj); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		if raw, ok := obj["keys"]; ok {
			return parseJWKS(raw)
		}
		return parseX509JSON(obj)
	}
	return parsePEM(trimmed)
}

// parsePEM accepts every block of a PEM file, refusing any it cannot use:
// an operator who put a private key or a P-384 key there made a mistake
// that should surface at startup, not as every token failing.
func parsePEM(data []byte) ([]*publicKey, error) {
	var keys []*publicKey
	for n := 1; ; n++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			// pem.Decode skips what is not a whole block, so a file cut
			// short would lose its last keys without a word: a cron job
			// caught mid-write must not be taken for a rotation.
			if bytes.Contains(data, []byte("-----BEGIN")) {
				return nil, fmt.Errorf("PEM block %d is incomplete (a truncated file?)", n)
			}
			break
		}
		var pub any
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			pub, err = certificateKey(block.Bytes)
		default:
			return nil, fmt.Errorf("PEM block %d: unsupported type %q", n, block.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %d (%s): %v", n, block.Type, err)
		}
		k, err := usableKey(pub, "")
		if err != nil {
			return nil, fmt.Errorf("PEM block %d (%s): %v", n, block.Type, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM blocks and not JSON")
	}
	return keys, nil
}

// certificateKey returns a certificate's public key. The certificate's
// validity dates are deliberately ignored: Google's x509 JSON certificates
// are only containers for the signing keys (the Firebase Admin SDKs ignore
// the dates too), and the operator controls which ones are trusted.
func certificateKey(der []byte) (any, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return cert.PublicKey, nil
}

// parseX509JSON reads Google's {"<kid>": "<PEM certificate>"} form.
func parseX509JSON(obj map[string]json.RawMessage) ([]*publicKey, error) {
	if len(obj) == 0 {
		return nil, errors.New("x509 JSON: no certificates")
	}
	kids := make([]string, 0, len(obj))
	for kid := range obj {
		kids = append(kids, kid)
	}
	slices.Sort(kids) // deterministic errors and key order
	var keys []*publicKey
	for _, kid := range kids {
		if kid == "" {
			return nil, errors.New("x509 JSON: empty key id")
		}
		var text string
		if err := json.Unmarshal(obj[kid], &text); err != nil {
			return nil, fmt.Errorf("x509 JSON %q: value is not a string (a JWKS needs \"keys\")", kid)
		}
		block, rest := pem.Decode([]byte(text))
		if block == nil || block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("x509 JSON %q: not a PEM certificate", kid)
		}
		if len(bytes.TrimSpace(rest)) != 0 {
			return nil, fmt.Errorf("x509 JSON %q: more than one PEM block", kid)
		}
		pub, err := certificateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("x509 JSON %q: %v", kid, err)
		}
		k, err := usableKey(pub, kid)
		if err != nil {
			return nil, fmt.Errorf("x509 JSON %q: %v", kid, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// jwk holds the members of RFC 7517/7518 keys that matter here.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS reads {"keys":[...]}. Keys this package can never use (other
// algorithms or curves, encryption keys, and "oct" symmetric keys, which
// must not become HMAC secrets) are skipped rather than refused, because
// operators often save a provider's published JWKS unchanged and it may
// list such keys next to the usable ones. A usable-looking key with bad
// material is an error, and so is a list with no usable key; an empty
// list is the one way to say "trust no key from this file", since an
// empty or broken file keeps the keys last loaded from it.
func parseJWKS(raw json.RawMessage) ([]*publicKey, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New(`JWKS: "keys" is not an array`)
	}
	if list == nil {
		return nil, errors.New(`JWKS: "keys" is not an array`)
	}
	keys := []*publicKey{} // not nil: an empty list is a valid file
	for i, item := range list {
		var j jwk
		if err := json.Unmarshal(item, &j); err != nil {
			return nil, fmt.Errorf("JWKS key %d: %v", i, err)
		}
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		var pub any
		var err error
		switch {
		case j.Kty == "":
			return nil, fmt.Errorf("JWKS key %d: no kty", i)
		case j.Kty == "RSA" && (j.Alg == "" || j.Alg == "RS256"):
			pub, err = jwkRSA(j)
		case j.Kty == "EC" && j.Crv == "P-256" && (j.Alg == "" || j.Alg == "ES256"):
			pub, err = jwkEC(j)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d (kid %q): %v", i, j.Kid, err)
		}
		k, err := usableKey(pub, j.Kid)
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d (kid %q): %v", i, j.Kid, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 && len(list) > 0 {
		return nil, errors.New("JWKS: no RS256 or ES256 signing keys")
	}
	return keys, nil
}

// b64 decodes a JWK member; the RFC says unpadded base64url, but padded
// values are common enough in hand-made files to accept.
func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func jwkRSA(j jwk) (*rsa.PublicKey, error) {
	n, err := b64(j.N)
	if err != nil || len(n) == 0 {
		return nil, errors.New("bad n")
	}
	e, err := b64(j.E)
	if err != nil || len(e) == 0 || len(e) > 4 {
		return nil, errors.New("bad e")
	}
	eInt := new(big.Int).SetBytes(e)
	if !eInt.IsInt64() || eInt.Int64() > 1<<31-1 {
		return nil, errors.New("bad e")
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(eInt.Int64())}, nil
}

func jwkEC(j jwk) (*ecdsa.PublicKey, error) {
	x, err1 := b64(j.X)
	y, err2 := b64(j.Y)
	if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
		return nil, errors.New("bad x or y (P-256 coordinates are 32 bytes)")
	}
	point := append(append([]byte{4}, x...), y...)
	return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
}

// usableKey accepts only the key types and sizes this package verifies
// with, so that a weak key is refused when loaded rather than trusted.
func usableKey(pub any, kid string) (*publicKey, error) {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		if p.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("RSA key of %d bits; at least %d required", p.N.BitLen(), minRSABits)
		}
		if p.E < 3 || p.E%2 == 0 {
			return nil, fmt.Errorf("RSA key with invalid exponent %d", p.E)
		}
		return &publicKey{kid: kid, rsa: p, id: identity(kid, p)}, nil
	case *ecdsa.PublicKey:
		if p.Curve != elliptic.P256() {
			return nil, fmt.Errorf("ECDSA key on %s; only P-256 (ES256) is supported", p.Curve.Params().Name)
		}
		return &publicKey{kid: kid, ec: p, id: identity(kid, p)}, nil
	default:
		return nil, fmt.Errorf("unsupported key type %T; only RSA and ECDSA P-256 are supported", pub)
	}
}

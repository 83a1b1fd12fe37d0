package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/arbordb/arbor/cmd/internal/cliflags"
	"github.com/arbordb/arbor/cmd/internal/pki"
)

// defaultTokenLifetime is what `arbor token` gives a token when not told:
// the longest lifetime a node accepts by default.
const defaultTokenLifetime = time.Hour

// tokenFlags are `arbor token`'s settings.
type tokenFlags struct {
	uid        string
	claims     string
	expires    time.Duration
	secret     string
	privateKey string
	kid        string
	audience   string
	issuer     string
	project    string
}

// runToken is `arbor token`: an ID token for development and tests,
// signed with the key a node verifies (the same --jwt-hs256-secret, or the
// private half of a --jwt-public-key), so nobody has to write JWT code to
// try the rules.
func runToken(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var f tokenFlags
	fs := flag.NewFlagSet("arbor token", flag.ContinueOnError)
	fs.StringVar(&f.uid, "uid", "", "the user's `id`: the sub claim, auth.uid in the rules (required)")
	fs.StringVar(&f.claims, "claims", "", "more claims, a JSON `object` such as '{\"admin\":true}': auth.token.admin in the rules")
	fs.DurationVar(&f.expires, "expires", defaultTokenLifetime, "how long the token is valid (exp - iat); a node refuses a token that lives longer than its limit, 1h by default")
	fs.StringVar(&f.secret, "jwt-hs256-secret", "", "sign with HS256 and this `secret`, the node's --jwt-hs256-secret (default $ARBOR_JWT_HS256_SECRET)")
	fs.StringVar(&f.privateKey, "jwt-private-key", "", "sign with this PEM private key `file` instead: RS256 for an RSA key, ES256 for a P-256 key; the node has its public half in --jwt-public-key")
	fs.StringVar(&f.kid, "kid", "", "key `id` for the header, when the node's key file names its keys")
	fs.StringVar(&f.audience, "audience", "", "the aud claim, for a node started with --jwt-audience")
	fs.StringVar(&f.issuer, "issuer", "", "the iss claim, for a node started with --jwt-issuer")
	fs.StringVar(&f.project, "firebase-project", "", "set aud and iss as Firebase Authentication does for this project `id` (a node started with --firebase-project)")
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: arbor token --uid ID [--claims JSON] [--expires 1h] [--jwt-hs256-secret S | --jwt-private-key key.pem]

Prints an ID token for development and tests: sub (the uid), iat and exp,
and the --claims given, signed with the key the node verifies. Send it as
?auth=<token> or Authorization: Bearer <token>.

Flags:
`)
		fs.PrintDefaults()
	}
	pos, code, ok := parseToolFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageMistake(stderr, "arbor token", "unexpected argument %q", pos[0])
	}
	if f.secret == "" && f.privateKey == "" {
		f.secret = getenv("ARBOR_JWT_HS256_SECRET")
	}
	tok, err := f.mint(time.Now())
	if err != nil {
		cliflags.Report(stderr, "arbor token", err)
		return exitUsage
	}
	fmt.Fprintln(stdout, tok)
	return exitOK
}

// mint builds and signs the token the flags describe, issued at now.
func (f *tokenFlags) mint(now time.Time) (string, error) {
	claims, err := f.claimSet(now)
	if err != nil {
		return "", err
	}
	var key crypto.Signer
	alg := "HS256"
	switch {
	case f.secret != "" && f.privateKey != "":
		return "", errors.New("give --jwt-hs256-secret or --jwt-private-key, not both")
	case f.privateKey != "":
		data, err := os.ReadFile(f.privateKey)
		if err != nil {
			return "", fmt.Errorf("--jwt-private-key: %w", err)
		}
		if key, err = pki.ParsePrivateKey(data); err != nil {
			return "", fmt.Errorf("--jwt-private-key %s: %w", f.privateKey, err)
		}
		if alg, err = signingAlg(key); err != nil {
			return "", fmt.Errorf("--jwt-private-key %s: %w", f.privateKey, err)
		}
	case f.secret == "":
		return "", errors.New("no key: give --jwt-hs256-secret (the node's) or --jwt-private-key")
	case len(f.secret) < 16:
		return "", errors.New("--jwt-hs256-secret: must be at least 16 bytes, as a node requires")
	}
	header := map[string]string{"alg": alg, "typ": "JWT"}
	if f.kid != "" {
		header["kid"] = f.kid
	}
	return signJWT(header, claims, []byte(f.secret), key)
}

// claimSet is the payload: the --claims, then sub, iat, exp and the
// audience and issuer, which --claims may not set.
func (f *tokenFlags) claimSet(now time.Time) (map[string]any, error) {
	if f.uid == "" {
		return nil, errors.New("--uid is required: the user the token is for")
	}
	if f.expires <= 0 {
		return nil, fmt.Errorf("--expires %s: must be positive", f.expires)
	}
	claims := map[string]any{}
	if f.claims != "" {
		if err := json.Unmarshal([]byte(f.claims), &claims); err != nil || claims == nil {
			return nil, fmt.Errorf("--claims %q: want a JSON object, such as '{\"admin\":true}'", f.claims)
		}
	}
	aud, iss := f.audience, f.issuer
	if f.project != "" {
		if aud != "" || iss != "" {
			return nil, errors.New("--firebase-project sets the audience and issuer; give it without --audience and --issuer")
		}
		aud, iss = f.project, firebaseIssuer+f.project
	}
	set := map[string]any{"sub": f.uid, "iat": now.Unix(), "exp": now.Add(f.expires).Unix()}
	if aud != "" {
		set["aud"] = aud
	}
	if iss != "" {
		set["iss"] = iss
	}
	for name, v := range set {
		if _, ok := claims[name]; ok {
			return nil, fmt.Errorf("--claims: %q is set by the other flags (--uid, --expires, --audience, --issuer)", name)
		}
		claims[name] = v
	}
	return claims, nil
}

// signingAlg is the JWS algorithm for key: the ones a node verifies.
func signingAlg(key crypto.Signer) (string, error) {
	switch k := key.Public().(type) {
	case *rsa.PublicKey:
		return "RS256", nil
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return "ES256", nil
		}
		return "", fmt.Errorf("an ECDSA key on %s; ES256 needs P-256", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("a %T key; a node verifies RSA (RS256) and P-256 (ES256) keys", key.Public())
}

// signJWT encodes and signs a compact JWS: HS256 with secret, else RS256
// or ES256 with key, as header["alg"] says.
func signJWT(header map[string]string, claims map[string]any, secret []byte, key crypto.Signer) (string, error) {
	enc := base64.RawURLEncoding
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	var sig []byte
	switch header["alg"] {
	case "HS256":
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(input))
		sig = mac.Sum(nil)
	case "RS256":
		digest := sha256.Sum256([]byte(input))
		if sig, err = key.Sign(rand.Reader, digest[:], crypto.SHA256); err != nil {
			return "", fmt.Errorf("sign: %w", err)
		}
	case "ES256":
		digest := sha256.Sum256([]byte(input))
		ec, ok := key.(*ecdsa.PrivateKey)
		if !ok {
			return "", fmt.Errorf("ES256 needs an ECDSA private key, not a %T", key)
		}
		r, s, err := ecdsa.Sign(rand.Reader, ec, digest[:])
		if err != nil {
			return "", fmt.Errorf("sign: %w", err)
		}
		// JWS wants r and s as two 32-byte big-endian numbers (RFC 7518
		// §3.4), not the ASN.1 that crypto.Signer returns.
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	default:
		return "", fmt.Errorf("alg %q", header["alg"])
	}
	return input + "." + enc.EncodeToString(sig), nil
}

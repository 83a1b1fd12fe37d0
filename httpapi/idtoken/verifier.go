package idtoken

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero values of Config.
const (
	defaultLeeway      = time.Minute
	defaultCacheSize   = 10000
	defaultMaxLifetime = time.Hour // what Firebase Authentication issues
)

// Config says which tokens to trust. The zero Config is valid and trusts
// nothing: every JWT is then refused as unverifiable.
type Config struct {
	// HS256Secrets are shared secrets for HS256 tokens, such as the
	// legacy Firebase database secrets; several may be given so a secret
	// can be rotated without a moment where tokens fail.
	HS256Secrets [][]byte

	// KeyFiles hold the RS256/ES256 public keys. Each is PEM (blocks of
	// PUBLIC KEY with RSA or EC P-256, RSA PUBLIC KEY, or CERTIFICATE), a
	// JWKS ({"keys":[...]}), or Google's x509 JSON ({"<kid>": "<PEM
	// certificate>"}, as published for securetoken@system.gserviceaccount.com).
	// Files are re-read when they change; see Verifier.
	KeyFiles []string

	// Audiences, when non-empty, must contain one of the token's aud
	// values. For Firebase ID tokens this is the project id.
	Audiences []string

	// Issuers, when non-empty, must contain the token's iss. For Firebase
	// ID tokens this is https://securetoken.google.com/<project id>.
	Issuers []string

	// Leeway is the clock skew allowed for exp, nbf and iat; 0 means one
	// minute. It must not be negative.
	Leeway time.Duration

	// MaxLifetime is the longest exp - iat accepted; 0 means one hour,
	// the lifetime of a Firebase ID token. A stolen token is worth only
	// as long as it lives, so an issuer of longer-lived tokens must be
	// allowed explicitly. It must not be negative.
	MaxLifetime time.Duration

	// Now returns the current time; nil means time.Now. Tests use it to
	// move the clock.
	Now func() time.Time

	// CacheSize is how many verified tokens are remembered; 0 means
	// 10,000 and a negative value disables the cache.
	CacheSize int
}

// Verifier verifies tokens against a Config. It is safe for concurrent
// use.
//
// Key files are read by New; afterwards Verify and Check re-check them at
// most once per second (by modification time, size and file identity) and
// re-read those that changed. A file that has become unreadable, empty,
// truncated or invalid keeps the keys last loaded from it (a half-written
// file must not lock every user out), and every Listener hears of it
// (Subscribe); Reload also returns such errors.
type Verifier struct {
	secrets     [][]byte
	audiences   []string
	issuers     []string
	leeway      time.Duration
	maxLifetime time.Duration
	now         func() time.Time

	files     []*keyFile
	reloadMu  sync.Mutex   // serializes reads of files
	lastCheck atomic.Int64 // Now().UnixNano() of the last look at the files
	keys      atomic.Pointer[keySet]

	cache *cache

	listeners listeners

	// sigChecks counts signature verifications, so tests can tell a
	// cache hit from a re-verification without timing.
	sigChecks atomic.Int64
}

// Identity is a verified token.
//
// Identities returned for the same token share their Auth map, and the
// maps and slices inside it, through the cache: they are read-only, and a
// caller that needs to change them must copy them first.
type Identity struct {
	// Auth is the rules' `auth` variable: {"uid", "provider", "token"} for
	// a JWT with sub (or user_id), or a legacy token's "d" object with
	// "token" added. "token" holds every claim of the JWT.
	Auth map[string]any

	// Expires is the token's exp (every accepted token has one).
	Expires time.Time

	// AuthJSON is Auth encoded as JSON, made once per verified token:
	// a write carries it in its log entry.
	AuthJSON []byte

	// signer names the key that verified the token (hs256Signer, or a
	// publicKey's identity) for Trusts; "" for an Identity not made by
	// Verify.
	signer string
}

// New checks cfg and loads its key files, failing if any file cannot be
// read or holds no usable key: a broken file at startup is an operator
// mistake worth stopping for.
func New(cfg Config) (*Verifier, error) {
	v := &Verifier{
		audiences:   slices.Clone(cfg.Audiences),
		issuers:     slices.Clone(cfg.Issuers),
		leeway:      cfg.Leeway,
		maxLifetime: cfg.MaxLifetime,
		now:         cfg.Now,
	}
	for i, s := range cfg.HS256Secrets {
		if len(s) == 0 {
			// HMAC with an empty key is a signature anyone can make.
			return nil, fmt.Errorf("idtoken: HS256 secret %d is empty", i)
		}
		v.secrets = append(v.secrets, slices.Clone(s))
	}
	switch {
	case v.leeway < 0:
		return nil, fmt.Errorf("idtoken: negative leeway %v", v.leeway)
	case v.leeway == 0:
		v.leeway = defaultLeeway
	}
	switch {
	case v.maxLifetime < 0:
		return nil, fmt.Errorf("idtoken: negative maximum token lifetime %v", v.maxLifetime)
	case v.maxLifetime == 0:
		v.maxLifetime = defaultMaxLifetime
	}
	if v.now == nil {
		v.now = time.Now
	}
	size := cfg.CacheSize
	if size == 0 {
		size = defaultCacheSize
	}
	v.cache = newCache(size)

	var errs []error
	lists := make([][]*publicKey, 0, len(cfg.KeyFiles))
	for _, path := range cfg.KeyFiles {
		if path == "" {
			return nil, errors.New("idtoken: empty key file path")
		}
		f := &keyFile{path: path}
		if err := f.load(); err != nil {
			errs = append(errs, err)
		}
		v.files = append(v.files, f)
		lists = append(lists, f.keys)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("idtoken: %w", err)
	}
	v.keys.Store(newKeySet(lists, 0))
	v.lastCheck.Store(v.now().UnixNano())
	return v, nil
}

// Verify checks token's signature and claims and returns its identity.
// Every error wraps ErrMalformed or ErrExpired and says what was wrong.
// The returned Identity's Auth is shared with the cache and other callers
// and must not be modified.
func (v *Verifier) Verify(token string) (*Identity, error) {
	return v.VerifyToken(NewToken(token))
}

// VerifyToken is Verify of a token already hashed.
func (v *Verifier) VerifyToken(tok Token) (*Identity, error) {
	token := tok.String()
	if len(token) > maxTokenLen {
		return nil, malformed("token is %d bytes, over the %d limit", len(token), maxTokenLen)
	}
	now := v.now()
	v.maybeReload(now)
	key := tok.Sum()
	if id, ok := v.cache.get(key, now); ok {
		cp := *id
		return &cp, nil
	}
	// Loaded before verifying so that the result is cached only if these
	// keys are still current when it is stored.
	ks := v.keys.Load()
	t, err := parse(token)
	if err != nil {
		return nil, err
	}
	signer, err := v.checkSignature(t, ks)
	if err != nil {
		return nil, err
	}
	claims, err := decodeClaims(t.payload)
	if err != nil {
		return nil, err
	}
	if err := v.checkIssuer(claims); err != nil {
		return nil, err
	}
	if err := v.checkAudience(claims); err != nil {
		return nil, err
	}
	auth, err := authVariable(claims, t.header.Alg)
	if err != nil {
		return nil, err
	}
	expires, err := v.checkTimes(claims, now)
	if err != nil {
		return nil, err
	}
	authJSON, err := json.Marshal(auth)
	if err != nil {
		return nil, malformed("claims cannot be encoded: %v", err)
	}
	id := &Identity{Auth: auth, Expires: expires, AuthJSON: authJSON, signer: signer}
	v.cache.add(key, id, expires.Add(v.leeway), ks.gen)
	cp := *id
	return &cp, nil
}

// Cached returns the identity of a token verified before, still valid and
// verified with the keys in force, without looking at the token itself:
// a busy server sees the same tokens over and over, and even checking a
// kilobyte token's shape costs more than the lookup. ok is false when
// the token must go through VerifyToken.
func (v *Verifier) Cached(tok Token) (id *Identity, ok bool) {
	now := v.now()
	// Key files that changed reset the cache first, as in VerifyToken.
	v.maybeReload(now)
	cached, ok := v.cache.get(tok.Sum(), now)
	if !ok {
		return nil, false
	}
	cp := *cached
	return &cp, true
}

// Trusts reports whether the key that verified id is still trusted: false
// once that key has left the key files (HS256 secrets never change while
// the process runs), and for an Identity that Verify did not make. A
// holder of an identity verified once, such as an open stream, asks it
// when a Listener hears that the keys changed, since a key withdrawn from
// the files must stop working everywhere.
func (v *Verifier) Trusts(id *Identity) bool {
	switch {
	case id == nil || id.signer == "":
		return false
	case id.signer == hs256Signer:
		return len(v.secrets) > 0
	}
	return v.keys.Load().has(id.signer)
}

package httpapi

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
	"github.com/arbordb/arbor/httpapi/idtoken"
)

// SPEC §6's 401 texts for an unusable credential.
const (
	msgBadToken     = "Could not parse auth token."
	msgExpiredToken = "Auth token is expired."
)

// devOwnerToken is the emulator's admin token, accepted with Config.Dev.
const devOwnerToken = "owner"

var (
	errBadToken     = tree.Public(fsm.ErrUnauthenticated, msgBadToken)
	errExpiredToken = tree.Public(fsm.ErrUnauthenticated, msgExpiredToken)
	errPermission   = fsm.ErrDenied
	errOverride     = badRequest("auth_variable_override must be a JSON object or null")
)

// identity is who a request acts as.
type identity struct {
	token string // "" when no credential was given
	admin bool   // an admin secret, acting as itself (rules do not apply)
	// access is what the rules judge: nil for an admin acting as itself.
	access *fsm.Access
	// expires is when a verified ID token stops being valid (zero: never).
	expires time.Time
	// verified is the verified ID token (nil without one), kept so that a
	// stream can ask whether the key that signed it is still trusted.
	verified *idtoken.Identity
}

// authenticate finds the request's credential (?auth=, ?access_token= or
// an Authorization: Bearer header, in that order) and who it makes the
// request: an admin (an admin secret), an admin acting as another `auth`
// (auth_variable_override), a verified ID token's user, or nobody. A
// malformed Authorization header is refused even when another credential
// is present, since the client clearly meant to send one; so is a token
// that is neither an admin secret nor a valid ID token.
func (s *Server) authenticate(r *http.Request, v url.Values) (identity, error) {
	var header string
	if hs := r.Header.Values("Authorization"); len(hs) > 0 {
		if len(hs) > 1 {
			return identity{}, errBadToken
		}
		scheme, token, ok := strings.Cut(strings.TrimSpace(hs[0]), " ")
		token = strings.TrimSpace(token)
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
			return identity{}, errBadToken
		}
		header = token
	}
	token := v.Get("auth")
	if token == "" {
		token = v.Get("access_token")
	}
	if token == "" {
		token = header
	}
	var tok idtoken.Token
	if token != "" {
		tok = idtoken.NewToken(token)
	}
	id := identity{token: token, admin: s.isAdmin(tok)}
	override, hasOverride := v["auth_variable_override"]
	switch {
	case id.admin && hasOverride:
		auth, err := parseOverride(override[0])
		if err != nil {
			return identity{}, err
		}
		id.admin, id.access = false, s.accessAs(auth)
	case id.admin:
	case hasOverride:
		// Only an admin may act as someone else.
		return identity{}, errPermission
	case token == "":
		id.access = s.accessAs(nil)
	default:
		verified, err := s.verifyToken(tok)
		if err != nil {
			return identity{}, err
		}
		id.access, id.expires, id.verified = s.accessAs(verified.Auth), verified.Expires, verified
		id.access.AuthJSON = verified.AuthJSON
	}
	return id, nil
}

// accessAs is the Access of a request acting as auth.
func (s *Server) accessAs(auth any) *fsm.Access {
	return &fsm.Access{Auth: auth, OpenIfUnset: s.cfg.Dev}
}

// verifyToken turns an ID token into its claims' `auth`; anything else
// that is not an admin secret is an unusable credential. A token verified
// before is answered from the verifier's cache first, without scanning
// its kilobyte again.
func (s *Server) verifyToken(tok idtoken.Token) (*idtoken.Identity, error) {
	if s.tokens == nil {
		return nil, errBadToken
	}
	if verified, ok := s.tokens.Cached(tok); ok {
		return verified, nil
	}
	if !idtoken.LooksLikeJWT(tok.String()) {
		return nil, errBadToken
	}
	verified, err := s.tokens.VerifyToken(tok)
	switch {
	case errors.Is(err, idtoken.ErrExpired):
		return nil, errExpiredToken
	case err != nil:
		s.cfg.Logger.Debug("ID token refused", "err", err)
		return nil, errBadToken
	}
	return verified, nil
}

// parseOverride reads auth_variable_override: a JSON object, or null for
// an unauthenticated request.
func parseOverride(text string) (any, error) {
	var auth any
	if err := json.Unmarshal([]byte(text), &auth); err != nil {
		return nil, errOverride
	}
	if _, ok := auth.(map[string]any); !ok && auth != nil {
		return nil, errOverride
	}
	return auth, nil
}

// isAdmin compares tok with every admin secret in constant time; comparing
// hashes keeps the secrets' lengths from leaking too. The zero Token is no
// credential.
func (s *Server) isAdmin(tok idtoken.Token) bool {
	token := tok.String()
	if token == "" {
		return false
	}
	if s.cfg.Dev && token == devOwnerToken {
		return true
	}
	sum := tok.Sum()
	match := 0
	for _, secret := range s.adminHashes {
		match |= subtle.ConstantTimeCompare(sum[:], secret[:])
	}
	return match == 1
}

// readAccess is the Access a read of rq is judged as: the request's, with
// the clock and the query it reads with (nil for an admin).
func (s *Server) readAccess(rq *request) *fsm.Access {
	if rq.id.access == nil {
		return nil
	}
	a := *rq.id.access
	a.Now = s.cfg.Now().UnixMilli()
	if rq.opts != nil {
		a.Query = fsm.RulesQuery(rq.opts.query)
	}
	return &a
}

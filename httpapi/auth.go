package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	"github.com/arbordb/arbor/fsm"
)

// msgBadToken is SPEC §6's 401 text for an unusable credential.
const msgBadToken = "Could not parse auth token."

// devOwnerToken is the emulator's admin token, accepted with Config.Dev.
const devOwnerToken = "owner"

var (
	errBadToken   = fsm.Public(fsm.ErrUnauthenticated, msgBadToken)
	errPermission = fsm.Public(fsm.ErrPermissionDenied, fsm.MsgPermission)
)

// identity is who a request acts as.
type identity struct {
	token string // "" when no credential was given
	admin bool
}

// authenticate finds the request's credential (?auth=, ?access_token= or
// an Authorization: Bearer header, in that order) and whether it is admin.
// A malformed Authorization header is refused even when another
// credential is present, since the client clearly meant to send one.
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
	return identity{token: token, admin: s.isAdmin(token)}, nil
}

// isAdmin compares token with every admin secret in constant time; hashing
// first keeps the secrets' lengths from leaking too.
func (s *Server) isAdmin(token string) bool {
	if token == "" {
		return false
	}
	if s.cfg.Dev && token == devOwnerToken {
		return true
	}
	sum := sha256.Sum256([]byte(token))
	match := 0
	for _, secret := range s.adminHashes {
		match |= subtle.ConstantTimeCompare(sum[:], secret[:])
	}
	return match == 1
}

// authorize decides whether id may use the data API. Until rules exist,
// admins may do everything, and in Dev mode so may everyone.
func (s *Server) authorize(id identity) error {
	if id.admin || s.cfg.Dev {
		return nil
	}
	return errPermission
}

package realtime

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// identity is who a session acts as.
type identity struct {
	admin bool
	// access is who the rules judge (nil for an admin); Now and Query are
	// filled per request.
	access  *fsm.Access
	expires time.Time // the token's expiry (zero: none)
}

// anonymous is an unauthenticated client's identity.
func (s *Server) anonymous() identity {
	return identity{access: &fsm.Access{OpenIfUnset: s.cfg.OpenIfUnset}}
}

// acting is the identity of a non-admin acting as auth.
func (s *Server) acting(auth any, authJSON []byte) identity {
	return identity{access: &fsm.Access{Auth: auth, AuthJSON: authJSON, OpenIfUnset: s.cfg.OpenIfUnset}}
}

// readAccess is who a read is judged as, at now with query q (nil for an
// admin).
func (id identity) readAccess(now time.Time, q *tree.Query) *fsm.Access {
	if id.access == nil {
		return nil
	}
	a := *id.access
	a.Now = now.UnixMilli()
	a.Query = fsm.RulesQuery(q)
	return &a
}

// writeAccess is who a write is judged as (its clock is the command's).
func (id identity) writeAccess() *fsm.Access {
	if id.access == nil {
		return nil
	}
	a := *id.access
	return &a
}

// authBody is the body of auth and gauth.
type authBody struct {
	Cred    string          `json:"cred"`
	AuthVar json.RawMessage `json:"authvar"`
	NoAuth  bool            `json:"noauth"`
}

// errBadOverride is an authvar that is not an object.
var errBadOverride = tree.Public(tree.ErrBadRequest, "authvar must be an object")

// authenticate serves auth (an ID token) and gauth (an admin's
// credential, possibly acting as authvar, or as nobody with noauth). A
// refused credential leaves the connection unauthenticated; every listen
// is judged again as the new identity.
func (s *session) authenticate(rq request, admin bool) {
	var b authBody
	if err := decodeBody(rq, &b); err != nil {
		s.fail(rq, err)
		return
	}
	if admin || s.srv.isAdmin(b.Cred) {
		s.adminAuth(rq, b)
		return
	}
	id, err := s.srv.deps.Tokens.Verify(b.Cred)
	if err != nil {
		s.setIdentity(s.srv.anonymous())
		status, msg := statusInvalidToken, "Invalid token."
		if errors.Is(err, ErrExpiredToken) {
			status, msg = statusExpiredToken, "Auth token is expired."
		}
		s.respond(rq, status, appendString(nil, msg))
		return
	}
	who := s.srv.acting(id.Auth, id.AuthJSON)
	who.expires = id.Expires
	answer, err := json.Marshal(map[string]any{"auth": claimsOrAuth(id), "expires": id.Expires.Unix()})
	if err != nil {
		s.fail(rq, err)
		return
	}
	s.setIdentity(who)
	s.ok(rq, answer)
}

// claimsOrAuth is what the auth answer shows of a token.
func claimsOrAuth(id Identity) map[string]any {
	if id.Claims != nil {
		return id.Claims
	}
	return id.Auth
}

// adminAuth serves an admin credential.
func (s *session) adminAuth(rq request, b authBody) {
	if !s.srv.isAdmin(b.Cred) {
		s.setIdentity(s.srv.anonymous())
		s.respond(rq, statusInvalidToken, appendString(nil, "Invalid token."))
		return
	}
	who := identity{admin: true}
	var auth any
	switch {
	case b.NoAuth:
		who = s.srv.acting(nil, nil)
	case !isNull(b.AuthVar):
		if err := json.Unmarshal(b.AuthVar, &auth); err != nil {
			s.fail(rq, errBadOverride)
			return
		}
		if _, ok := auth.(map[string]any); !ok {
			s.fail(rq, errBadOverride)
			return
		}
		who = s.srv.acting(auth, nil)
	}
	answer, _ := json.Marshal(map[string]any{"auth": auth, "expires": nil}) // decoded JSON always encodes
	s.setIdentity(who)
	s.ok(rq, answer)
}

// unauthenticate serves unauth: the connection is anonymous again.
func (s *session) unauthenticate(rq request) {
	s.setIdentity(s.srv.anonymous())
	s.ok(rq, nil)
}

// setIdentity makes who the session's identity, arms the token's expiry
// and judges every listen again.
func (s *session) setIdentity(who identity) {
	s.who = who
	if s.expiry != nil {
		s.expiry.Stop()
		s.expiry = nil
	}
	if !who.expires.IsZero() {
		s.expiryGen++
		gen := s.expiryGen
		s.expiry = time.AfterFunc(max(who.expires.Sub(s.srv.cfg.Now()), 0), func() {
			s.expiredGen.Store(gen)
			s.kick()
		})
	}
	s.reauthorize()
}

// tokenExpired tells the client its token expired (it reconnects with a
// fresh one) and goes on as unauthenticated meanwhile.
func (s *session) tokenExpired() {
	body := appendString([]byte(`{"s":"expired_token","d":`), "Auth token is expired.")
	s.send(appendPush(nil, "ac", append(body, '}')))
	s.setIdentity(s.srv.anonymous())
}

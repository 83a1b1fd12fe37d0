package httpapi

import "github.com/arbordb/arbor/httpapi/idtoken"

// An open stream was authenticated once, when it opened. A key withdrawn
// from the ID-token key files must stop working everywhere, so the
// verifier's key changes make every stream check its credential again, the
// way a rules change judges its reader again (streamhub.go).

// watchKeys subscribes the server to the verifier's key-file events: a
// change of the trusted keys signals every open stream to recheck, and a
// key file found unusable is logged at ERROR and counted, since its last
// good keys stay trusted and the operator must hear of it.
func (s *Server) watchKeys() {
	if s.tokens == nil {
		return
	}
	// Never unsubscribed: the server serves until the process ends.
	s.tokens.Subscribe(idtoken.Listener{KeysChanged: s.keysChanged, KeyFileFailed: s.keyFileFailed})
	// A file that broke between the verifier's start and now was reported
	// to nobody (a node may take long to open its log in between): read
	// the files again so that this server hears of it. The listener has
	// the error already.
	_ = s.tokens.Reload()
}

// keysChanged asks every open stream to check its credential again.
func (s *Server) keysChanged() { s.hub.credentialsChanged() }

// keyFileFailed reports a key file that could not be used.
func (s *Server) keyFileFailed(err error) {
	s.metrics.keyReloadErrors.Inc()
	s.log.Error("ID-token key file unusable; write a valid one ({\"keys\":[]} to trust none)", "err", err)
}

// streamCredentialValid reports whether the credential rq authenticated
// with may still be used: false once the key that signed its ID token
// has left the key files. Admin secrets, auth_variable_override and
// anonymous requests have no key to lose. The token's expiry is the
// stream's own timer.
func (s *Server) streamCredentialValid(rq *request) bool {
	if rq.id.verified == nil {
		return true
	}
	return s.tokens != nil && s.tokens.Trusts(rq.id.verified)
}

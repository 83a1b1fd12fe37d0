package realtime

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Server serves the realtime protocol: one session per WebSocket
// connection at /.ws.
type Server struct {
	cfg         Config
	deps        Deps
	adminHashes [][sha256.Size]byte

	mu       sync.Mutex
	sessions map[*session]struct{}
	closed   bool
	randMu   sync.Mutex
	// stop ends the fence loop (fence.go).
	stop chan struct{}
	// born and ticked time the fence loop: when the server was made, and
	// the time since then of the loop's last tick (nanoseconds).
	born   time.Time
	ticked atomic.Int64
}

// New checks cfg and deps and returns a Server.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.DB == nil || deps.Events == nil || deps.Tokens == nil {
		return nil, errors.New("realtime: DB, Events and Tokens are required")
	}
	s := &Server{cfg: cfg, deps: deps, sessions: map[*session]struct{}{}, stop: make(chan struct{}), born: time.Now()}
	for _, secret := range cfg.AdminSecrets {
		s.adminHashes = append(s.adminHashes, sha256.Sum256([]byte(secret)))
	}
	if cfg.LeaderContact != nil {
		go s.fenceLoop()
	}
	return s, nil
}

// Close level of the connections the server ends itself.
const (
	// closeProtocol: the client broke the protocol (a bad message).
	closeProtocol = websocket.StatusProtocolError
	// closePolicy: a bound was passed, or the client was refused.
	closePolicy = websocket.StatusPolicyViolation
	// closeTooBig: a message over the size limit.
	closeTooBig = websocket.StatusMessageTooBig
)

// ServeHTTP accepts a WebSocket connection at /.ws and serves its session
// until it ends. The query names the protocol version (v=5, required)
// and the database (ns, checked against Config.DatabaseName); the SDKs'
// other parameters (ls, p, ac, r) are accepted and need nothing.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// Origins are not checked: like REST's CORS, the protocol carries its
	// credentials in-band (no cookies), so any web app may connect.
	lw := &leanWriter{ResponseWriter: w}
	conn, err := websocket.Accept(lw, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		s.cfg.Logger.Debug("realtime: upgrade refused", "err", err)
		return // Accept has answered
	}
	// The library's own bound is one frame past ours, so the assembler
	// reports an oversized message with its clear close.
	conn.SetReadLimit(s.cfg.MaxMessageBytes + 1)
	if v := q.Get("v"); v != protocolVersion {
		s.refuse(conn, closeProtocol, fmt.Sprintf("Unsupported protocol version %q: this server speaks version 5", v))
		return
	}
	if ns := q.Get("ns"); s.cfg.DatabaseName != "" && ns != s.cfg.DatabaseName {
		s.refuse(conn, closePolicy, fmt.Sprintf("Database %q not found: this server serves %q (use ?ns=%s in the databaseURL)", ns, s.cfg.DatabaseName, s.cfg.DatabaseName))
		return
	}
	id, err := s.sessionID()
	if err != nil {
		s.cfg.Logger.Error("realtime: session id", "err", err)
		conn.Close(websocket.StatusInternalError, "no session id")
		return
	}
	sess := newSession(s, conn, lw.conn, id, r.Host)
	if !s.track(sess) {
		conn.Close(websocket.StatusGoingAway, "the server is shutting down")
		return
	}
	// The session runs on a goroutine of its own and the handler returns:
	// the request, the router's context and the handler's stack (grown by
	// the TLS handshake) are freed for as long as the connection lasts.
	go s.serve(sess)
}

// serve runs a session; it forgets itself once it ended (loop.go).
func (s *Server) serve(sess *session) { sess.run() }

// protocolVersion is the one version served.
const protocolVersion = "5"

// refuse tells a client why it cannot be served, as a shutdown control
// message (the SDKs log its reason and stop reconnecting, which is right
// for a mistake in their configuration), and closes the connection.
func (s *Server) refuse(conn *websocket.Conn, code websocket.StatusCode, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	_ = conn.Write(ctx, websocket.MessageText, appendControl(nil, "s", appendString(nil, reason)))
	conn.Close(code, closeReason(reason))
}

// closeReason fits a reason into a close frame (123 bytes).
func closeReason(s string) string {
	const maxReason = 123
	if len(s) <= maxReason {
		return s
	}
	s = s[:maxReason]
	for len(s) > 0 && s[len(s)-1]&0xc0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xc0 {
		s = s[:len(s)-1]
	}
	return s
}

// sessionID draws a session's id: 16 random bytes in hex.
func (s *Server) sessionID() (string, error) {
	var b [16]byte
	s.randMu.Lock()
	_, err := io.ReadFull(s.cfg.Rand, b[:])
	s.randMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("realtime: session id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// pushRand draws the 12 random base-64 digits of a push key.
func (s *Server) pushRand() ([12]byte, error) {
	var r [12]byte
	s.randMu.Lock()
	_, err := io.ReadFull(s.cfg.Rand, r[:])
	s.randMu.Unlock()
	for i := range r {
		r[i] &= 63
	}
	return r, err
}

// isAdmin compares cred with every admin secret in constant time (hashes
// keep the secrets' lengths from leaking too).
func (s *Server) isAdmin(cred string) bool {
	if cred == "" {
		return false
	}
	sum := sha256.Sum256([]byte(cred))
	match := 0
	for _, h := range s.adminHashes {
		match |= subtle.ConstantTimeCompare(sum[:], h[:])
	}
	return match == 1
}

// track registers a session; false once the server is closed.
func (s *Server) track(sess *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[sess] = struct{}{}
	if s.cfg.CountSessions != nil {
		s.cfg.CountSessions(1)
	}
	return true
}

func (s *Server) untrack(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sess)
	if s.cfg.CountSessions != nil {
		s.cfg.CountSessions(-1)
	}
}

// Sessions is the number of open connections.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Close ends every session (the node is stopping; the SDKs reconnect,
// to another node if the address leads there) and refuses new ones.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		close(s.stop)
	}
	s.closed = true
	all := make([]*session, 0, len(s.sessions))
	for sess := range s.sessions {
		all = append(all, sess)
	}
	s.mu.Unlock()
	for _, sess := range all {
		sess.end(errShutdown)
	}
}

// errDisconnectsRan ends a session whose onDisconnect operations were run
// by another node: this node had been declared gone (cut off from the
// cluster), so the connection must not outlive them.
var errDisconnectsRan = errors.New("this connection's onDisconnect operations ran while the server was cut off from its cluster; reconnect")

// CloseSession ends the session with id, if it is open, because its
// onDisconnect operations ran elsewhere: the client is told why (a close
// handshake, off the caller's goroutine) and reconnects. It never blocks.
func (s *Server) CloseSession(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sess := range s.sessions {
		if sess.id == id {
			sess.end(errDisconnectsRan) // finish closes with going-away
		}
	}
}

// LongPoll answers /.lp, the long-polling transport this server does not
// have, with a JSON 400 that says how a web app keeps to WebSockets.
func LongPoll() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"Long polling (/.lp) is not supported: connect over WebSockets. In a web app, call forceWebSockets() before using the database, or give a ws:// or wss:// databaseURL."}`+"\n")
	})
}

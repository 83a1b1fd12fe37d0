package realtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/arbordb/arbor/fsm"
)

// Why a session ended; the close frame carries the text.
var (
	errShutdown    = errors.New("the server is shutting down")
	errTooSlow     = errors.New("too slow: the client did not read what was sent to it")
	errWriteFailed = errors.New("writing to the client failed")
	errIdle        = errors.New("idle: no message and no pong within the idle timeout")
)

// session is one connection: a reader goroutine that reads frames and
// queues requests, the session loop that handles requests and listens'
// changes one at a time (so a client's writes are made in the order it
// sent them), and a writer goroutine that drains the outbox.
type session struct {
	srv  *Server
	conn *websocket.Conn
	lean *leanConn // conn's connection
	id   string
	host string
	out  *outbox
	// readerDone is closed when the reader returns: finish waits for it
	// before it closes the connection, which reads the client's answer.
	readerDone chan struct{}

	ctx    context.Context
	cancel context.CancelCauseFunc
	reqs   chan *request // pointers: an idle connection holds MaxPendingRequests words, not requests

	// The loop runs only while it has work (loop.go): running says one
	// does; expiredGen is the generation of an expiry that fired.
	runMu      sync.Mutex
	running    bool
	expiredGen atomic.Int64
	finished   sync.Once

	// ready holds the listens whose feeds have changes; wake is
	// signalled (non-blocking) when one is added.
	readyMu sync.Mutex
	ready   map[*listen]struct{}
	wake    chan struct{}

	// The session loop's own state.
	who         identity
	listens     map[listenKey]*listen
	disconnects map[string]struct{} // paths with onDisconnect operations
	registered  atomic.Bool         // some operation was registered
	cutOff      atomic.Bool         // closed for this node's loss of its cluster (fence.go)
	expiry      *time.Timer         // marks the token expired (expiredGen) when it fires
	expiryGen   int64               // the generation of the armed expiry

	// started and lastHeard (time since started) time the client's
	// silence; idleTimer checks it (keepalive.go).
	started   time.Time
	lastHeard atomic.Int64
	idleTimer atomic.Pointer[time.Timer]
}

func newSession(s *Server, conn *websocket.Conn, lean *leanConn, id, host string) *session {
	sess := &session{
		srv: s, conn: conn, lean: lean, id: id, host: host,
		reqs:        make(chan *request, s.cfg.MaxPendingRequests),
		ready:       map[*listen]struct{}{},
		wake:        make(chan struct{}, 1),
		readerDone:  make(chan struct{}),
		who:         s.anonymous(),
		listens:     map[listenKey]*listen{},
		disconnects: map[string]struct{}{},
		started:     time.Now(),
	}
	sess.out = newOutbox(s.cfg.MaxOutboundBytes, sess.writeMessage, func() { sess.end(errWriteFailed) }, sess.guard)
	sess.ctx, sess.cancel = context.WithCancelCause(context.Background())
	// The session's end ends the reader's wait and a blocked write; the
	// library is given no context of the session's, which would make it
	// close the connection before finish can say why.
	context.AfterFunc(sess.ctx, lean.stopWaiting)
	return sess
}

// run reads the connection until it ends (on the goroutine that serves
// the session); the loop (loop.go) then finishes the session.
func (s *session) run() {
	defer s.kick() // the loop sees the end and finishes the session
	defer close(s.readerDone)
	defer s.guard()
	s.hello()
	s.watchIdle()
	s.readLoop()
}

// errPanic ends a session whose goroutine panicked (a bug).
var errPanic = errors.New("internal error")

// guard is deferred by each of a session's goroutines: a panic there is
// a bug, which is logged and counted and ends this session alone, not
// the node.
func (s *session) guard() {
	if p := recover(); p != nil {
		s.recovered(p)
	}
}

// recovered logs and counts panic p and ends the session.
func (s *session) recovered(p any) {
	s.srv.cfg.Logger.Error("realtime: panic serving a connection", "session", s.id, "panic", p, "stack", string(debug.Stack()))
	if s.srv.cfg.CountPanic != nil {
		s.srv.cfg.CountPanic()
	}
	s.end(errPanic)
}

// writeMessage writes one message to the client, framed. The library
// only gathers each frame (leanConn); endFrame writes it within
// WriteTimeout, so a write blocked on a client that stopped reading ends
// then, or when the session does.
func (s *session) writeMessage(msg []byte) error {
	for _, f := range splitFrames(msg) {
		s.lean.beginFrame(time.Now().Add(s.srv.cfg.WriteTimeout))
		err := s.conn.Write(context.Background(), websocket.MessageText, f)
		if ferr := s.lean.endFrame(); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// hello sends the handshake: server time, version, the host the client
// should come back to and the session id.
func (s *session) hello() {
	d := fmt.Appendf(nil, `{"ts":%d,"v":"5","h":`, s.srv.cfg.Now().UnixMilli())
	d = appendString(d, s.host)
	d = append(d, `,"s":`...)
	d = appendString(d, s.id)
	d = append(d, '}')
	s.send(appendControl(nil, "h", d))
}

// send queues a message for the client; a client too far behind is cut
// off.
func (s *session) send(msg []byte) {
	if !s.out.push(msg) {
		s.end(errTooSlow)
	}
}

// end stops the session for cause (the first cause wins).
func (s *session) end(cause error) {
	if s.cancel != nil {
		s.cancel(cause)
	}
}

// readLoop reads frames until the connection ends: messages are
// assembled and decoded, pings answered here, requests queued for the
// loop (waiting while MaxPendingRequests are queued).
func (s *session) readLoop() {
	defer s.guard()
	a := assembler{limit: s.srv.cfg.MaxMessageBytes}
	for {
		if s.lean.awaitMessage(); s.ctx.Err() != nil {
			return // the session ended while the connection was idle
		}
		typ, data, err := s.conn.Read(context.Background())
		s.heard()
		switch {
		case errors.Is(err, websocket.ErrMessageTooBig):
			s.closeWith(closeTooBig, fmt.Errorf("%w: over %d bytes", errTooBig, s.srv.cfg.MaxMessageBytes))
			return
		case err != nil:
			s.end(err)
			return
		case typ != websocket.MessageText:
			s.closeWith(websocket.StatusUnsupportedData, errors.New("binary frames are not part of the protocol"))
			return
		}
		msg, err := a.add(data)
		var over *oversizedError
		if errors.As(err, &over) {
			if id, ok := requestNumber(over.head); ok {
				msg, err = nil, nil
				select {
				case s.reqs <- &request{id: id, tooBig: true}:
					s.kick()
				case <-s.ctx.Done():
					return
				}
			}
		}
		if err != nil {
			s.closeWith(closeTooBig, err)
			return
		}
		if msg == nil {
			continue
		}
		m, err := decodeMessage(msg)
		if err != nil {
			s.closeWith(closeProtocol, err)
			return
		}
		if m.control != "" {
			if m.control == "p" {
				s.send(appendControl(nil, "o", []byte("{}")))
			}
			continue // other control messages from clients need nothing
		}
		select {
		case s.reqs <- &m.req:
			s.kick()
		case <-s.ctx.Done():
			return
		}
	}
}

// closeWith tells the client why it is cut off and ends the session. Only
// the reader calls it; others end the session with a cause that finish
// tells the client.
func (s *session) closeWith(code websocket.StatusCode, err error) {
	s.srv.cfg.Logger.Debug("realtime: closing a connection", "session", s.id, "err", err)
	s.conn.Close(code, closeReason(err.Error()))
	s.end(err)
}

// finish releases what the session holds once it ended: its feeds, the
// connection, and then runs its onDisconnect operations.
func (s *session) finish() {
	for _, l := range s.listens {
		l.close()
	}
	if s.expiry != nil {
		s.expiry.Stop()
	}
	s.idleTimer.Load().Stop()
	select {
	case <-s.readerDone:
	case <-time.After(s.srv.cfg.WriteTimeout): // not seen; the close below ends it
	}
	cause := context.Cause(s.ctx)
	switch {
	case errors.Is(cause, errShutdown), errors.Is(cause, errCutOff), errors.Is(cause, errDisconnectsRan):
		s.conn.Close(websocket.StatusGoingAway, closeReason(cause.Error()))
	case errors.Is(cause, errTooSlow), errors.Is(cause, errIdle):
		s.conn.Close(closePolicy, closeReason(cause.Error()))
	default:
		s.conn.CloseNow()
	}
	if s.registered.Load() && s.srv.deps.Disconnects != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.srv.cfg.RequestTimeout)
		defer cancel()
		s.srv.deps.Disconnects.End(ctx, s.id)
	}
}

// requestContext bounds the handling of one request.
func (s *session) requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, s.srv.cfg.RequestTimeout)
}

// respond answers request rq (nothing when it asked for no answer).
func (s *session) respond(rq request, status string, data []byte) {
	if rq.id == nil {
		return
	}
	s.send(appendResponse(nil, rq.id, status, data))
}

// fail answers rq with err's status and message.
func (s *session) fail(rq request, err error) {
	status, msg := statusOf(err)
	switch {
	case status != statusUnavailable:
	case s.ctx.Err() != nil: // the client left while it was served: nothing went wrong
		s.srv.cfg.Logger.Debug("realtime: request ended with its connection", "session", s.id, "action", rq.action, "err", err)
	default:
		s.srv.cfg.Logger.Warn("realtime: request failed", "session", s.id, "action", rq.action, "err", err)
	}
	s.respond(rq, status, appendString(nil, msg))
}

// ok answers rq with status ok and data (nil: "").
func (s *session) ok(rq request, data []byte) { s.respond(rq, statusOK, data) }

// denied reports whether err is the rules' refusal.
func denied(err error) bool { return errors.Is(err, fsm.ErrPermissionDenied) }

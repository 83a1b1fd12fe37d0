package main

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// tlsListener performs the TLS handshake of every connection itself, each
// in a goroutine of its own as net/http would, and only then hands the
// connection to the server: an HTTP/2 connection as the *tls.Conn that
// net/http serves HTTP/2 on, any other as an http1Conn, whose Write turns
// the plain-text answers net/http writes by itself into SPEC §6 JSON
// (goanswers.go). net/http's own TLS listener cannot do this: it has to
// see a *tls.Conn to negotiate HTTP/2, and below one only ciphertext
// passes.
type tlsListener struct {
	inner   net.Listener
	config  *tls.Config
	timeout time.Duration         // for the handshake, as net/http's TLS handshake timeout
	logf    func(string, ...any)  // the server's error log
	ready   chan accepted         // handshaken connections and accept errors, for Accept
	done    chan struct{}         // closed by Close
	once    sync.Once             // guards close(done)
	mu      sync.Mutex            // guards pending and closed
	pending map[net.Conn]struct{} // connections in their handshake
	closed  bool                  // Close was called: new connections are closed at once
	gate    *handshakeGate        // the handshakes computing at once (tlsgate.go)
}

// accepted is what Accept returns.
type accepted struct {
	conn net.Conn
	err  error
}

// newTLSListener accepts connections from inner and serves them TLS with
// config, which must offer "h2" and "http/1.1" (in that order) to
// negotiate HTTP/2. A handshake not done within timeout is abandoned.
func newTLSListener(inner net.Listener, config *tls.Config, timeout time.Duration, logf func(string, ...any)) *tlsListener {
	l := &tlsListener{
		inner:   inner,
		config:  config,
		timeout: timeout,
		logf:    logf,
		ready:   make(chan accepted),
		done:    make(chan struct{}),
		pending: map[net.Conn]struct{}{},
	}
	l.gate = newHandshakeGate()
	l.config.GetConfigForClient = l.takeSlot
	go l.acceptLoop()
	return l
}

// takeSlot runs once a client's hello is read: the handshake waits for a
// slot of the gate before the server computes its share.
func (l *tlsListener) takeSlot(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	gc, ok := hello.Conn.(*gatedConn)
	if !ok {
		return nil, nil
	}
	leave, err := l.gate.enter(hello.Context())
	if err != nil {
		return nil, err
	}
	gc.hold(leave)
	return nil, nil
}

// acceptLoop accepts until the listener is closed. An accept error is
// handed to the server's Accept, which backs off on a temporary one (too
// many open files) before asking again, and stops on any other.
func (l *tlsListener) acceptLoop() {
	for {
		raw, err := l.inner.Accept()
		if err != nil {
			select {
			case l.ready <- accepted{err: err}:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go l.handshake(raw)
	}
}

// handshake runs raw's TLS handshake and hands the result to Accept.
func (l *tlsListener) handshake(raw net.Conn) {
	if !l.track(raw) {
		raw.Close()
		return
	}
	gc := &gatedConn{Conn: raw}
	tc := tls.Server(gc, l.config)
	_ = raw.SetDeadline(time.Now().Add(l.timeout))
	err := tc.Handshake()
	gc.release()
	_ = raw.SetDeadline(time.Time{})
	l.untrack(raw)
	if err != nil {
		select {
		case <-l.done: // closed by Close: nothing to tell
			raw.Close()
			return
		default:
		}
		reason := err.Error()
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && recordLooksLikeHTTP(re.RecordHeader) {
			// Plain HTTP sent to the HTTPS port: the answer net/http gives
			// (SPEC §7), byte for byte.
			_, _ = io.WriteString(re.Conn, plainHTTPAnswer)
			reason = "client sent an HTTP request to an HTTPS server"
		}
		l.logf("http: TLS handshake error from %s: %s", raw.RemoteAddr(), reason)
		raw.Close()
		return
	}
	var c net.Conn = tc
	if tc.ConnectionState().NegotiatedProtocol != "h2" {
		c = &http1Conn{Conn: tc}
	}
	select {
	case l.ready <- accepted{conn: c}:
	case <-l.done:
		c.Close()
	}
}

// track records raw as in its handshake, unless the listener is closed.
func (l *tlsListener) track(raw net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.pending[raw] = struct{}{}
	return true
}

func (l *tlsListener) untrack(raw net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, raw)
}

// Accept implements net.Listener: the next handshaken connection.
func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case a := <-l.ready:
		return a.conn, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener. Connections still in their handshake
// are closed: the server does not know of them yet, so its Shutdown
// would not.
func (l *tlsListener) Close() error {
	err := l.inner.Close()
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closed = true
		for c := range l.pending {
			c.Close()
		}
	})
	return err
}

// Addr implements net.Listener.
func (l *tlsListener) Addr() net.Addr { return l.inner.Addr() }

// plainHTTPAnswer is net/http's answer to plain HTTP on a TLS port.
const plainHTTPAnswer = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"

// recordLooksLikeHTTP reports whether a TLS record header is the start of
// a plain HTTP request (net/http's own test).
func recordLooksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

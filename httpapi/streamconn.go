package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// Detached HTTP/1.1 streams. An HTTP/1.1 stream has a connection to itself
// for as long as it lasts, and while a handler runs net/http keeps for it
// the handler's goroutine (with every frame below the handler on its
// stack), a goroutine reading in the background, a 4 KB read buffer, a
// 4 KB and a 2 KB write buffer and the parsed request. Once its first
// frames are out, such a stream takes its connection over (a hijack) and
// runs on a goroutine of its own, writing the rest of the chunked body
// itself, with one more goroutine that notices when the client closes the
// connection: net/http's goroutine, buffers and request are freed, which
// is most of what an idle HTTP/1.1 stream costs (docs/PERFORMANCE.md).
// HTTP/2 streams share their connection and stay with net/http.

// detachedGrace bounds how long CloseStreams waits for detached streams to
// send what was queued before the end; their connections are closed then.
const detachedGrace = 2 * time.Second

// lastChunk ends a chunked body.
const lastChunk = "0\r\n\r\n"

// detachedStreams are the streams running on connections taken over.
type detachedStreams struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool          // CloseStreams was called: no stream detaches any more
	empty  chan struct{} // closed when the last one ends after CloseStreams
}

// detach takes an HTTP/1.1 stream's connection over once its first frames
// are sent (c.Writer has flushed them) and reports whether it did. It
// does not for other protocols (HTTP/1.0 has no chunked body), a request
// with a body (its bytes would read as the client's), a writer that
// cannot be hijacked, or once CloseStreams was called: the stream then
// runs on the handler's goroutine.
func (l *streamLoop) detach(c *gin.Context) bool {
	r := c.Request
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Body != http.NoBody {
		return false
	}
	d := &l.s.hub.detached
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	// Gin refuses a hijack once a body was written; net/http's own
	// response below it does not.
	var w http.ResponseWriter = c.Writer
	if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		w = u.Unwrap()
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	if d.conns == nil {
		d.conns = map[net.Conn]struct{}{}
	}
	d.conns[conn] = struct{}{}
	// The request's context ends when the handler returns; the stream's
	// own keeps its values and ends when the client goes.
	l.ctx, l.stop = context.WithCancel(context.WithoutCancel(l.ctx))
	l.conn, l.w, l.rc = conn, nil, nil
	l.sub.cut.Store(func() { _ = conn.SetWriteDeadline(time.Now()) })
	return true
}

// serveDetached runs a detached stream to its end, then ends its body and
// closes its connection. A panic is logged; it cannot reach the
// handler's recovery any more, and must not take the node down.
func (l *streamLoop) serveDetached() {
	defer l.s.hub.detached.remove(l.conn)
	defer l.conn.Close()
	defer func() {
		if p := recover(); p != nil {
			l.s.metrics.panics.Inc()
			l.s.log.Error("panic serving a stream", "path", l.rq.nodePath().String(), "panic", p, "stack", string(debug.Stack()))
		}
	}()
	defer l.stop()
	go l.watch()
	l.run()
	_, _ = io.WriteString(l.conn, lastChunk)
}

// watch ends the stream when its client closes the connection, or sends
// anything on it: nothing is expected while a stream lasts.
func (l *streamLoop) watch() {
	var b [1]byte
	_, _ = l.conn.Read(b[:])
	l.stop()
}

// writeChunk sends b as one chunk of the body: in one write when small,
// else without copying it.
func (l *streamLoop) writeChunk(b []byte) error {
	const small = 4 << 10
	size := 16
	if len(b) <= small {
		size += len(b)
	}
	buf := strconv.AppendInt(make([]byte, 0, size), int64(len(b)), 16)
	buf = append(buf, "\r\n"...)
	if len(b) <= small {
		_, err := l.conn.Write(append(append(buf, b...), "\r\n"...))
		return err
	}
	if _, err := l.conn.Write(buf); err != nil {
		return err
	}
	if _, err := l.conn.Write(b); err != nil {
		return err
	}
	_, err := io.WriteString(l.conn, "\r\n")
	return err
}

// remove forgets a detached stream that ended.
func (d *detachedStreams) remove(conn net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.conns, conn)
	if d.empty != nil && len(d.conns) == 0 {
		close(d.empty)
		d.empty = nil
	}
}

// closeAll stops streams from detaching and waits up to grace for the
// detached ones to end (their subscriptions are ended already), then
// closes the connections of those still writing.
func (d *detachedStreams) closeAll(grace time.Duration) {
	d.mu.Lock()
	d.closed = true
	if len(d.conns) == 0 {
		d.mu.Unlock()
		return
	}
	if d.empty == nil {
		d.empty = make(chan struct{})
	}
	empty := d.empty
	d.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-empty:
		return
	case <-t.C:
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for conn := range d.conns {
		conn.Close()
	}
}

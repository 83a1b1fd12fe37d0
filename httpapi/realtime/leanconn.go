package realtime

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// What an idle connection holds is what a node with many clients pays for
// each: net/http hands a hijacked connection 4 KB read and write buffers,
// and a reader blocked in the TLS layer keeps the stack that deep reads
// grew. A leanConn holds neither while idle:
//   - the WebSocket library reads through a small buffer (the TLS layer
//     already holds the record it decrypted, so a small buffer costs no
//     system call);
//   - the library writes a frame into a 16-byte buffer over the leanConn,
//     which gathers the frame in a pooled buffer between beginFrame and
//     endFrame and writes it as one TLS record;
//   - before each message the reader waits for the socket to become
//     readable, outside the library and the TLS layer, so the parked
//     reader is shallow and the collector shrinks its stack.

// Buffer sizes of a hijacked realtime connection.
const (
	leanReadBuffer  = 256 // frame headers and small messages
	leanWriteBuffer = 16  // only a frame header's way into the leanConn
)

// leanWriter is the ResponseWriter handed to the WebSocket library: its
// Hijack gives the connection as a leanConn with small buffers.
type leanWriter struct {
	http.ResponseWriter
	conn *leanConn // set by Hijack
}

// WriteHeaderNow passes the library's flush of the 101 answer on to a
// router's writer that defers its header (Gin's).
func (w *leanWriter) WriteHeaderNow() {
	if f, ok := w.ResponseWriter.(interface{ WriteHeaderNow() }); ok {
		f.WriteHeaderNow()
	}
}

// Unwrap gives http.ResponseController the router's writer.
func (w *leanWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack implements http.Hijacker.
func (w *leanWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("realtime: the connection cannot be taken over")
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	lc := &leanConn{Conn: c, raw: rawConnOf(c)}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		lc.pending = append([]byte(nil), b...) // what the client sent right after its request
	}
	lc.br = bufio.NewReaderSize(lc, leanReadBuffer)
	w.conn = lc
	return lc, bufio.NewReadWriter(lc.br, bufio.NewWriterSize(lc, leanWriteBuffer)), nil
}

// leanConn is a hijacked connection that holds no buffer while idle.
type leanConn struct {
	net.Conn
	pending []byte          // read past the upgrade request, or by probe; given first
	br      *bufio.Reader   // the library's reader over this connection
	raw     syscall.RawConn // the socket, to wait on; nil: reads wait in the TLS layer

	// stopped is set once the session ended (stopWaiting); writing while
	// endFrame writes.
	stopped atomic.Bool
	writing atomic.Bool

	mu       sync.Mutex
	gather   bool    // between beginFrame and endFrame
	frame    *[]byte // the frame gathered, from framePool
	deadline time.Time
}

// framePool holds the buffers frames are gathered in: a frame is at most
// maxFrameBytes of text behind a header of at most 10 bytes.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, maxFrameBytes+16); return &b }}

// Read implements net.Conn.
func (c *leanConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		if c.pending = c.pending[n:]; len(c.pending) == 0 {
			c.pending = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// awaitMessage returns once a read would not block: at once when the
// read buffer, the TLS layer or pending hold something, else when the
// socket is readable or closed, or once stopWaiting was called. The
// session's reader calls it before each message, so that an idle reader
// parks with a shallow stack.
func (c *leanConn) awaitMessage() {
	if c.raw == nil || c.br.Buffered() > 0 || len(c.pending) > 0 || !c.probe() {
		return
	}
	_ = c.raw.Read(readable) // an error (closed, or stopWaiting's deadline) is the next read's to report
}

// probe reads what the TLS layer holds into pending, without waiting: an
// expired deadline lets it answer only from its buffers, and a read that
// timed out leaves its state as it was. It reports whether the reader
// must wait for the socket.
func (c *leanConn) probe() bool {
	if c.Conn.SetReadDeadline(aLongTimeAgo) != nil {
		return false
	}
	var b [64]byte
	n, err := c.Conn.Read(b[:])
	_ = c.Conn.SetReadDeadline(time.Time{})
	if n > 0 {
		c.pending = append([]byte(nil), b[:n]...)
	}
	// stopWaiting stores stopped before its deadline, which the line
	// above may have undone: then the reader must not wait.
	return n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && !c.stopped.Load()
}

// stopWaiting is called once the session ended: the reader's wait or
// read ends at once (an expired deadline), and so does a write blocked on
// a client that stopped reading; the library's close may still write.
func (c *leanConn) stopWaiting() {
	c.stopped.Store(true)
	_ = c.Conn.SetReadDeadline(aLongTimeAgo)
	if c.writing.Load() {
		_ = c.Conn.SetWriteDeadline(aLongTimeAgo)
	}
}

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// errSessionEnded refuses a frame written after the session ended.
var errSessionEnded = errors.New("realtime: the session ended")

// Write implements net.Conn: between beginFrame and endFrame it gathers.
func (c *leanConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gather {
		*c.frame = append(*c.frame, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// beginFrame starts gathering the library's writes, which endFrame
// writes by the deadline.
func (c *leanConn) beginFrame(deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gather, c.deadline = true, deadline
	c.frame = framePool.Get().(*[]byte)
}

// endFrame writes what was gathered since beginFrame, in one write.
func (c *leanConn) endFrame() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gather {
		return nil
	}
	b := c.frame
	c.gather, c.frame = false, nil
	defer func() {
		if cap(*b) <= 2*(maxFrameBytes+16) {
			*b = (*b)[:0]
			framePool.Put(b)
		}
	}()
	if len(*b) == 0 {
		return nil
	}
	// writing is stored before the deadline and stopped read after it, so
	// a stopWaiting meanwhile either sees the write or is seen here.
	c.writing.Store(true)
	defer c.writing.Store(false)
	err := c.Conn.SetWriteDeadline(c.deadline)
	if c.stopped.Load() {
		return errSessionEnded
	}
	if err == nil {
		_, err = c.Conn.Write(*b)
		// The deadline bounds this write alone: the library's own writes
		// (a close frame) may follow long after.
		_ = c.Conn.SetWriteDeadline(time.Time{})
	}
	return err
}

// netConner is a connection wrapped around another (crypto/tls's, and
// the server's own wrappers).
type netConner interface{ NetConn() net.Conn }

// rawConnOf finds the socket under c's wrappers; nil when there is none
// or the platform cannot wait on it.
func rawConnOf(c net.Conn) syscall.RawConn {
	if !canWaitReadable {
		return nil
	}
	for range 8 {
		if sc, ok := c.(syscall.Conn); ok {
			raw, err := sc.SyscallConn()
			if err != nil {
				return nil
			}
			return raw
		}
		w, ok := c.(netConner)
		if !ok {
			return nil
		}
		c = w.NetConn()
	}
	return nil
}

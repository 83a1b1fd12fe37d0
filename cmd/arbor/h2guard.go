package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Over HTTP/2, two kinds of request never reach a handler: a header list
// over the advertised SETTINGS_MAX_HEADER_LIST_SIZE gets the HTTP/2
// server's own HTML 431, and a connection-specific header its text 400,
// each written by a handler of its own that nothing can replace. The
// answer cannot be rewritten on its way out either: its headers are HPACK,
// coded against a table the server and client share. So an h2Guard sits
// between the client and the server and decodes every request's header
// block in step with the server (HPACK decoding is deterministic: a second
// decoder fed the same blocks holds the same table). It passes every frame
// on, except the header block of a request the server would answer itself:
// that one the server never sees, the guard answers it with SPEC §6 JSON,
// says GOAWAY and ends the connection — the server's table would no longer
// match the client's, and a client that ignores the advertised limit gets
// no more than one answer per connection (HTTP/1 closes it too).

// The HTTP/2 settings the guard must agree on with the server.
const (
	// h2HeaderTableSize is the server's HPACK decoding table
	// (SETTINGS_HEADER_TABLE_SIZE, HPACK's default).
	h2HeaderTableSize = 4096
	// h2MaxReadFrameSize is the largest frame the server accepts
	// (SETTINGS_MAX_FRAME_SIZE); the guard holds at most one header frame.
	h2MaxReadFrameSize = 1 << 20
	// h2HeaderListLimit is the server's SETTINGS_MAX_HEADER_LIST_SIZE:
	// x/net/http2 pads MaxHeaderBytes with 32 bytes for each of 10 fields.
	h2HeaderListLimit = maxHeaderBytes + 10*32
	// h2AnswerWait bounds how long a refused request waits for the
	// server to finish the frame it is writing before the answer goes out.
	h2AnswerWait = 2 * time.Second
	// h2Linger is how long, after its answer, the guard reads what the
	// client still sends before it closes, so that closing does not reset
	// the connection before the client has read the answer.
	h2Linger = 500 * time.Millisecond
)

// HTTP/2 frame types and flags the guard reads (RFC 9113 §6).
const (
	h2FrameHeaderLen     = 9
	h2FrameHeaders       = 0x1
	h2FrameContinuation  = 0x9
	h2FlagEndHeaders     = 0x4
	h2FlagPadded         = 0x8
	h2FlagPriority       = 0x20
	h2PriorityFieldBytes = 5
)

// h2Guarded puts HTTP/2 connections behind an h2Guard (false only in a
// benchmark, to weigh the guard).
var h2Guarded = true

// serveHTTP2Guarded sets srv up to serve HTTP/2 with golang.org/x/net/http2
// (net/http's own copy of it cannot be given another connection than the
// *tls.Conn), each connection behind an h2Guard.
func serveHTTP2Guarded(srv *http.Server) error {
	h2 := &http2.Server{MaxDecoderHeaderTableSize: h2HeaderTableSize, MaxReadFrameSize: h2MaxReadFrameSize}
	if err := http2.ConfigureServer(srv, h2); err != nil {
		return fmt.Errorf("set up HTTP/2: %w", err)
	}
	srv.TLSNextProto[http2.NextProtoTLS] = func(hs *http.Server, c *tls.Conn, h http.Handler) {
		// net/http passes its per-connection context on the handler, as it
		// does to its own HTTP/2 server.
		var ctx context.Context
		if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
			ctx = bc.BaseContext()
		}
		var conn net.Conn = c
		if h2Guarded {
			conn = newH2Guard(c, h2HeaderListLimit)
		}
		h2.ServeConn(conn, &http2.ServeConnOpts{Context: ctx, Handler: h, BaseConfig: hs})
	}
	return nil
}

// h2Guard is an HTTP/2 connection, as its server reads and writes it. The
// read side is used by the server's one frame-reading goroutine; the write
// side may be called from any goroutine.
type h2Guard struct {
	h2Conn
	limit int // the header list size over which a request is refused

	// Read side.
	rbuf      []byte // what was read from the connection
	readyBuf  []byte // holds ready
	ready     []byte // bytes passed on, not yet read by the server
	readErr   error  // returned once ready is empty
	refused   bool   // a request was refused: reads end once ready is read
	preface   int    // bytes of the client preface still to pass
	hdr       [h2FrameHeaderLen]byte
	hdrN      int    // bytes of hdr read
	left      int    // payload bytes of the current frame still to come
	holding   bool   // the current frame is a header frame, held until whole
	held      []byte // that frame so far
	dec       *hpack.Decoder
	inBlock   bool   // a header block is being read
	block     uint32 // its stream
	stream    uint32 // the same if it opens a request, else 0 (trailers)
	maxStream uint32 // the highest stream a request opened
	listSize  int    // its decoded size so far (name + value + 32 per field)
	teFields  int
	connHdr   string // a connection-specific header it carries
	tooLarge  bool   // it passed the limit
	dropping  bool   // everything from the refused block on is dropped
	lost      bool   // the guard lost track (a block the server cannot decode either): pass all

	// Write side.
	wmu      sync.Mutex
	whdr     [h2FrameHeaderLen]byte
	whdrN    int
	wleft    int
	wInBlock bool          // the server's header block is not finished
	wFrames  int           // frames the server began (its SETTINGS comes first)
	answer   []byte        // frames waiting for the next frame boundary
	answered chan struct{} // closed when the answer went out, or will not
	dead     bool          // the server's writes are dropped
	sent     bool          // the answer went out
}

// h2Conn is what the guard needs of a *tls.Conn: the server takes the
// connection's TLS state from it.
type h2Conn interface {
	net.Conn
	ConnectionState() tls.ConnectionState
	CloseWrite() error
}

func newH2Guard(c h2Conn, limit int) *h2Guard {
	g := &h2Guard{
		h2Conn:   c,
		limit:    limit,
		rbuf:     make([]byte, 32<<10),
		preface:  len(http2.ClientPreface),
		answered: make(chan struct{}),
	}
	g.dec = hpack.NewDecoder(h2HeaderTableSize, g.field)
	g.dec.SetMaxStringLength(limit) // as the server's decoder
	return g
}

// Read implements net.Conn for the server.
func (g *h2Guard) Read(p []byte) (int, error) {
	for len(g.ready) == 0 {
		if g.refused {
			g.awaitAnswer()
			return 0, io.EOF
		}
		if g.readErr != nil {
			return 0, g.readErr
		}
		n, err := g.h2Conn.Read(g.rbuf)
		g.readyBuf = g.scan(g.rbuf[:n], g.readyBuf[:0])
		g.ready = g.readyBuf
		if err != nil {
			g.readErr = err
		}
	}
	n := copy(p, g.ready)
	g.ready = g.ready[n:]
	return n, nil
}

// scan follows the frames in b and appends to out what the server may
// read.
func (g *h2Guard) scan(b, out []byte) []byte {
	for len(b) > 0 && !g.refused {
		switch {
		case g.lost:
			if g.dropping {
				return out
			}
			return append(out, b...)
		case g.preface > 0:
			k := min(g.preface, len(b))
			out, b, g.preface = append(out, b[:k]...), b[k:], g.preface-k
		case g.hdrN < h2FrameHeaderLen:
			k := copy(g.hdr[g.hdrN:], b)
			g.hdrN, b = g.hdrN+k, b[k:]
			if g.hdrN < h2FrameHeaderLen {
				continue
			}
			g.left = int(g.hdr[0])<<16 | int(g.hdr[1])<<8 | int(g.hdr[2])
			t := g.hdr[3]
			g.holding = t == h2FrameHeaders || t == h2FrameContinuation
			if g.holding && g.left > h2MaxReadFrameSize { // the server ends the connection over it
				g.held = append(g.held[:0], g.hdr[:]...)
				g.hdrN, g.holding = 0, false
				out = g.loseTrack(out)
				continue
			}
			if g.holding {
				g.held = append(g.held[:0], g.hdr[:]...)
			} else if !g.dropping {
				out = append(out, g.hdr[:]...)
			}
			if g.left == 0 {
				out = g.endFrame(out)
			}
		default:
			k := min(g.left, len(b))
			if g.holding {
				g.held = append(g.held, b[:k]...)
			} else if !g.dropping {
				out = append(out, b[:k]...)
			}
			g.left, b = g.left-k, b[k:]
			if g.left == 0 {
				out = g.endFrame(out)
			}
		}
	}
	return out
}

// endFrame is called at the end of each frame; a header frame held is
// decoded, then passed on, or not.
func (g *h2Guard) endFrame(out []byte) []byte {
	g.hdrN = 0
	if !g.holding {
		return out
	}
	g.holding = false
	f := g.held
	flags, stream := f[4], binary.BigEndian.Uint32(f[5:9])&(1<<31-1)
	frag := f[h2FrameHeaderLen:]
	switch {
	case f[3] == h2FrameHeaders && !g.inBlock:
		if flags&h2FlagPadded != 0 {
			if len(frag) < 1 || int(frag[0]) >= len(frag) {
				return g.loseTrack(out)
			}
			frag = frag[1 : len(frag)-int(frag[0])]
		}
		if flags&h2FlagPriority != 0 {
			if len(frag) < h2PriorityFieldBytes {
				return g.loseTrack(out)
			}
			frag = frag[h2PriorityFieldBytes:]
		}
		g.inBlock, g.block, g.stream = true, stream, 0
		if stream%2 == 1 && stream > g.maxStream { // else trailers, or an error the server reports
			g.stream, g.maxStream = stream, stream
		}
		g.listSize, g.teFields, g.connHdr, g.tooLarge = 0, 0, "", false
	case f[3] == h2FrameContinuation && g.inBlock && stream == g.block:
	default:
		return g.loseTrack(out) // the server ends the connection over this frame
	}
	if g.dropping {
		// The rest of a refused block is not decoded: the connection ends
		// after it, and the decoder may have stopped midway.
	} else if _, err := g.dec.Write(frag); err != nil {
		if !errors.Is(err, hpack.ErrStringLength) || g.stream == 0 {
			return g.loseTrack(out) // trailers: the server ends the connection over it
		}
		g.tooLarge = true
	}
	if g.tooLarge && g.stream != 0 {
		g.dropping = true // the server sees none of this block, nor what follows
	}
	if flags&h2FlagEndHeaders != 0 {
		g.inBlock = false
		if err := g.dec.Close(); err != nil && !g.dropping {
			return g.loseTrack(out)
		}
		if g.stream != 0 {
			switch {
			case g.tooLarge:
				g.refuse(http.StatusRequestHeaderFieldsTooLarge, msgHeadersTooLarge)
			case g.connHdr != "":
				g.refuse(http.StatusBadRequest, fmt.Sprintf("Bad request: header %q is not valid in HTTP/2", g.connHdr))
			case g.teFields > 1:
				g.refuse(http.StatusBadRequest, `Bad request: header "te" may only be "trailers" in HTTP/2`)
			}
		}
	}
	if g.dropping {
		return out
	}
	return append(out, f...)
}

// loseTrack passes the held frame and everything after it as it is: the
// frame is one the server refuses too (ending the connection).
func (g *h2Guard) loseTrack(out []byte) []byte {
	g.lost = true
	if g.dropping {
		return out
	}
	return append(out, g.held...)
}

// field is the decoder's emit function: it sizes the block as the server
// does and looks for the headers HTTP/2 forbids in a request.
func (g *h2Guard) field(f hpack.HeaderField) {
	g.listSize += int(f.Size())
	if g.listSize > g.limit {
		g.tooLarge = true
	}
	switch f.Name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		if g.connHdr == "" {
			g.connHdr = f.Name
		}
	case "te":
		g.teFields++
		if f.Value != "trailers" && f.Value != "" {
			g.teFields++ // counts as invalid, as a second TE does
		}
	}
}

// refuse answers the request on g.stream with status and msg, then
// GOAWAY, as soon as the server is between two frames (Write), and ends
// the server's reads once it has read what came before the refused block.
func (g *h2Guard) refuse(status int, msg string) {
	g.dropping, g.refused = true, true
	g.wmu.Lock()
	g.answer = h2Answer(g.stream, status, msg, time.Now())
	g.wmu.Unlock()
	_, _ = g.Write(nil) // the answer goes out now if the server is between frames
}

// awaitAnswer waits for the answer to go out, or gives it up: the server
// may be writing its first frame still, which needs what came before the
// refused block (its preface, for one) to be read.
func (g *h2Guard) awaitAnswer() {
	select {
	case <-g.answered:
	case <-time.After(h2AnswerWait):
		g.wmu.Lock()
		if !g.dead {
			g.dead = true // the server never finished its frame: no answer
			close(g.answered)
		}
		g.wmu.Unlock()
	}
}

// Write implements net.Conn for the server. Until an answer waits, it
// follows the frames written; then it writes up to the next frame
// boundary, the answer, and drops the rest, as it does all later writes.
func (g *h2Guard) Write(p []byte) (int, error) {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if g.dead {
		return len(p), nil
	}
	n := g.writeScan(p, g.answer != nil)
	if n < 0 {
		return g.h2Conn.Write(p)
	}
	if n > 0 {
		if _, err := g.h2Conn.Write(p[:n]); err != nil {
			return 0, err
		}
	}
	_, err := g.h2Conn.Write(g.answer)
	g.dead, g.sent = true, err == nil
	close(g.answered)
	return len(p), nil
}

// writeScan follows the frames in p. With stop, it returns the offset of
// the first point in p at which another frame may be written (p may end
// there), or -1; without, -1.
func (g *h2Guard) writeScan(p []byte, stop bool) int {
	for i := 0; ; {
		if stop && g.whdrN == 0 && g.wleft == 0 && !g.wInBlock && g.wFrames > 0 {
			return i
		}
		if i == len(p) {
			return -1
		}
		if g.wleft > 0 {
			k := min(g.wleft, len(p)-i)
			g.wleft, i = g.wleft-k, i+k
			continue
		}
		k := copy(g.whdr[g.whdrN:], p[i:])
		g.whdrN, i = g.whdrN+k, i+k
		if g.whdrN == h2FrameHeaderLen {
			g.whdrN, g.wFrames = 0, g.wFrames+1
			g.wleft = int(g.whdr[0])<<16 | int(g.whdr[1])<<8 | int(g.whdr[2])
			switch g.whdr[3] {
			case h2FrameHeaders, h2FrameContinuation, 0x5: // 0x5: PUSH_PROMISE
				g.wInBlock = g.whdr[4]&h2FlagEndHeaders == 0
			}
		}
	}
}

// Close implements net.Conn. After an answer it closes the writing half,
// and reads what the client still sends for a moment, so that its answer
// is read before the connection goes.
func (g *h2Guard) Close() error {
	g.wmu.Lock()
	sent := g.sent
	g.wmu.Unlock()
	if sent {
		_ = g.h2Conn.CloseWrite()
		_ = g.h2Conn.SetReadDeadline(time.Now().Add(h2Linger))
		_, _ = io.CopyN(io.Discard, g.h2Conn, 1<<20)
	}
	return g.h2Conn.Close()
}

// h2Answer is an HTTP/2 answer on stream with status and SPEC §6's JSON
// body for msg, with the API's headers (SPEC §7), and a GOAWAY after it.
// Its header fields are never indexed: they leave the client's HPACK table
// as the server's encoder believes it is.
func h2Answer(stream uint32, status int, msg string, now time.Time) []byte {
	body := errorJSON(msg)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	fields := append([][2]string{{":status", strconv.Itoa(status)}}, apiAnswerHeaders...)
	fields = append(fields, [2]string{"content-length", strconv.Itoa(len(body))}, [2]string{"date", now.UTC().Format(http.TimeFormat)})
	for _, f := range fields {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1], Sensitive: true}) // writes to a buffer
	}
	var out bytes.Buffer
	fr := http2.NewFramer(&out, nil)
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block.Bytes(), EndHeaders: true})
	_ = fr.WriteData(stream, true, body)
	_ = fr.WriteGoAway(stream, http2.ErrCodeNo, []byte(msg))
	return out.Bytes()
}

var _ net.Conn = (*h2Guard)(nil)

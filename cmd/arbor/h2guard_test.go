package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestHTTP2HeadAnswersAreJSON: the requests net/http's HTTP/2 server would
// answer itself (HTML 431, text 400, or no answer but a GOAWAY) get SPEC
// §6 JSON from the guard, then a GOAWAY; the others reach the handler.
func TestHTTP2HeadAnswersAreJSON(t *testing.T) {
	s := startTestServer(t)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1"}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+s.addr+"/x.json", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 2<<20))
	// Go's client refuses to send it once it has the server's settings,
	// and sends it when it has not yet: either way no answer but JSON.
	if resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != 431 || compactJSON(t, string(body)) != `{"error":"Request header fields too large"}` {
			t.Errorf("a 2 MiB header from Go's HTTP/2 client: %s %d %q", resp.Proto, resp.StatusCode, body)
		}
	}

	quarter := strings.Repeat("a", 300_000)
	tooLarge := `{"error":"Request header fields too large"}`
	for _, c := range []struct {
		name   string
		fields [][2]string
		status string
		body   string // the JSON body, compacted
	}{
		// Go's own answer: HTML 431.
		{"4 fields of 300 kB: over the limit in the last frame", [][2]string{{"x-a", quarter}, {"x-b", quarter}, {"x-c", quarter}, {"x-d", quarter}}, "431", tooLarge},
		// Go's own answer: none, GOAWAY PROTOCOL_ERROR.
		{"5 fields of 300 kB: over the limit before the last frame", [][2]string{{"x-a", quarter}, {"x-b", quarter}, {"x-c", quarter}, {"x-d", quarter}, {"x-e", quarter}}, "431", tooLarge},
		// Go's own answer: none, GOAWAY COMPRESSION_ERROR.
		{"one field of 2 MiB", [][2]string{{"x-big", strings.Repeat("a", 2<<20)}}, "431", tooLarge},
		// Go's own answer: text 400.
		{"a connection header", [][2]string{{"connection", "close"}}, "400", `{"error":"Bad request: header \"connection\" is not valid in HTTP/2"}`},
		{"an upgrade header", [][2]string{{"upgrade", "websocket"}}, "400", `{"error":"Bad request: header \"upgrade\" is not valid in HTTP/2"}`},
		{"TE other than trailers", [][2]string{{"te", "gzip"}}, "400", `{"error":"Bad request: header \"te\" may only be \"trailers\" in HTTP/2"}`},
		{"TE twice", [][2]string{{"te", "trailers"}, {"te", "trailers"}}, "400", `{"error":"Bad request: header \"te\" may only be \"trailers\" in HTTP/2"}`},
		{"TE trailers", [][2]string{{"te", "trailers"}}, "200", `{"ok":true,"proto":"HTTP/2.0","tls":true}`},
		{"a small header", [][2]string{{"x-small", "a"}}, "200", `{"ok":true,"proto":"HTTP/2.0","tls":true}`},
	} {
		cl := h2Dial(t, s)
		a := cl.request(t, 1, cl.block(cl.pseudo(), c.fields...), h2Frames{})
		if a.status != c.status || compactJSON(t, a.body) != c.body {
			t.Errorf("%s: %s %q, want %s %s", c.name, a.status, a.body, c.status, c.body)
		}
		if c.status != "200" {
			if a.ctype != "application/json; charset=utf-8" || a.header["cache-control"] != "no-cache" || a.header["access-control-allow-origin"] != "*" || a.header["date"] == "" {
				t.Errorf("%s: headers %v", c.name, a.header)
			}
			if !cl.goAwayThenEOF(t) {
				t.Errorf("%s: the connection did not end with a GOAWAY", c.name)
			}
		}
	}
}

// TestH2GuardFollowsTheTable: the guard decodes every header block in
// step with the server, over a connection's whole life: requests whose
// fields are indexed in the HPACK table, in padded and prioritized frames
// and split into CONTINUATION frames, and trailers over the limit, reach
// the server; a small block
// made only of references to a 3 kB entry of the table still passes the
// limit once decoded, and is refused.
func TestH2GuardFollowsTheTable(t *testing.T) {
	s := startTestServer(t)
	c := h2Dial(t, s)
	entry := [2]string{"x-entry", strings.Repeat("e", 3000)}
	for i := range 40 {
		id := uint32(2*i + 1)
		fields := [][2]string{{"x-count", strings.Repeat("c", i%7)}, {"user-agent", "guard-test"}}
		if i%3 == 0 {
			fields = append(fields, entry) // indexed after its first time
		}
		frames := h2Frames{pad: uint8(i % 5), priority: i%2 == 0, split: 1 + i%4}
		if a := c.request(t, id, c.block(c.pseudo(), fields...), frames); a.status != "200" {
			t.Fatalf("request %d: %s %q", i, a.status, a.body)
		}
	}
	// Trailers over the limit are the server's to deal with (it keeps what
	// fits and goes on): the guard passes them and keeps decoding.
	big := strings.Repeat("t", 600_000)
	request := c.block(c.pseudo(), [2]string{"x-with", "trailers"})
	trailers := c.block(nil, [2]string{"x-t1", big}, [2]string{"x-t2", big})
	if a := c.request(t, 81, request, h2Frames{trailers: trailers}); a.status != "200" {
		t.Fatalf("a request with 1.2 MB of trailers: %s %q", a.status, a.body)
	}
	if a := c.request(t, 83, c.block(c.pseudo(), [2]string{"x-after", "trailers"}, entry), h2Frames{}); a.status != "200" {
		t.Fatalf("the request after the trailers: %s %q", a.status, a.body)
	}
	refs := make([][2]string, 400) // 400 × 3,032 bytes decoded: over 1 MiB
	for i := range refs {
		refs[i] = entry
	}
	block := c.block(c.pseudo(), refs...)
	if len(block) > 8<<10 {
		t.Fatalf("the block of references takes %d bytes: the entry was not indexed", len(block))
	}
	if a := c.request(t, 85, block, h2Frames{}); a.status != "431" || compactJSON(t, a.body) != `{"error":"Request header fields too large"}` {
		t.Errorf("a %d-byte block of references decoding to over 1 MiB: %s %q", len(block), a.status, a.body)
	}
	if !c.goAwayThenEOF(t) {
		t.Error("the connection did not end with a GOAWAY")
	}
}

// TestH2GuardAnswersBetweenFrames: an answer waits for the frame the server
// is writing, and for the rest of its header block, and nothing the server
// writes after the answer is sent.
func TestH2GuardAnswersBetweenFrames(t *testing.T) {
	var out bytes.Buffer
	g := newH2Guard(&recordingConn{w: &out}, h2HeaderListLimit)
	frame := func(typ, flags byte, payload int) []byte {
		var b bytes.Buffer
		_ = http2.NewFramer(&b, nil).WriteRawFrame(http2.FrameType(typ), http2.Flags(flags), 1, make([]byte, payload))
		return b.Bytes()
	}
	settings := frame(0x4, 0, 0)
	headers := frame(h2FrameHeaders, 0, 10) // its block goes on
	cont := frame(h2FrameContinuation, h2FlagEndHeaders, 10)
	data := frame(0x0, 0, 100)
	mustWrite := func(p []byte) {
		if n, err := g.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d %v", n, err)
		}
	}
	mustWrite(settings)
	mustWrite(headers[:5])
	g.wmu.Lock()
	g.answer = []byte("ANSWER")
	g.wmu.Unlock()
	mustWrite(headers[5:])
	mustWrite(cont[:12])
	mustWrite(append(cont[12:], data[:50]...)) // the boundary after the block's end
	mustWrite(data[50:])
	want := append(append(append(append([]byte{}, settings...), headers...), cont...), "ANSWER"...)
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("written:\n%q\nwant:\n%q", out.Bytes(), want)
	}
	select {
	case <-g.answered:
	default:
		t.Error("answered is not closed")
	}
}

// recordingConn is an h2Conn that records what is written to it.
type recordingConn struct {
	net.Conn
	w io.Writer
}

func (c *recordingConn) Write(p []byte) (int, error)          { return c.w.Write(p) }
func (c *recordingConn) ConnectionState() tls.ConnectionState { return tls.ConnectionState{} }
func (c *recordingConn) CloseWrite() error                    { return nil }

// h2Client is a raw HTTP/2 connection with one HPACK encoder, whose table
// lives as long as the connection.
type h2Client struct {
	cn     *tls.Conn
	fr     *http2.Framer
	enc    *hpack.Encoder
	encBuf bytes.Buffer
	wmu    sync.Mutex // the framer's writes
}

func h2Dial(t *testing.T, s *testServer) *h2Client {
	t.Helper()
	c := &h2Client{cn: s.dial(t, "h2")}
	_ = c.cn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c.cn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c.fr = http2.NewFramer(c.cn, c.cn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 1 << 20
	c.enc = hpack.NewEncoder(&c.encBuf)
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *h2Client) pseudo() [][2]string {
	return [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", "/x.json"}}
}

// block encodes a header block, with the connection's table.
func (c *h2Client) block(pseudo [][2]string, fields ...[2]string) []byte {
	c.encBuf.Reset()
	for _, f := range append(pseudo, fields...) {
		_ = c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return bytes.Clone(c.encBuf.Bytes())
}

// h2Frames is how a block is framed: split into so many frames (at most
// 16 KiB each), its HEADERS frame padded and with a priority.
type h2Frames struct {
	split    int
	pad      uint8
	priority bool
	trailers []byte // a block sent after the request's, ending the stream
}

// h2Reply is what came back on a stream.
type h2Reply struct {
	status, ctype, body string
	header              map[string]string
}

// request sends block on stream id, in a goroutine (the server may answer
// before the last frame), and reads the answer on that stream.
func (c *h2Client) request(t *testing.T, id uint32, block []byte, f h2Frames) h2Reply {
	t.Helper()
	frame := 16384
	if f.split > 1 {
		frame = max(1, (len(block)+f.split-1)/f.split)
	}
	go func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		b := block
		n := min(len(b), frame)
		p := http2.HeadersFrameParam{StreamID: id, BlockFragment: b[:n], EndStream: f.trailers == nil, EndHeaders: n == len(b), PadLength: f.pad}
		if f.priority {
			p.Priority = http2.PriorityParam{StreamDep: 0, Weight: 200}
		}
		err := c.fr.WriteHeaders(p)
		for b = b[n:]; err == nil && len(b) > 0; b = b[n:] {
			n = min(len(b), frame)
			err = c.fr.WriteContinuation(id, n == len(b), b[:n])
		}
		if b = f.trailers; err == nil && b != nil {
			n = min(len(b), frame)
			err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b[:n], EndStream: true, EndHeaders: n == len(b)})
			for b = b[n:]; err == nil && len(b) > 0; b = b[n:] {
				n = min(len(b), frame)
				err = c.fr.WriteContinuation(id, n == len(b), b[:n])
			}
		}
	}()
	var r h2Reply
	for {
		fr, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("stream %d: no answer: %v", id, err)
		}
		switch fr := fr.(type) {
		case *http2.MetaHeadersFrame:
			if fr.StreamID != id {
				continue
			}
			r.status = fr.PseudoValue("status")
			r.header = map[string]string{}
			for _, hf := range fr.RegularFields() {
				r.header[hf.Name] = hf.Value
			}
			r.ctype = r.header["content-type"]
			if fr.StreamEnded() {
				return r
			}
		case *http2.DataFrame:
			if fr.StreamID != id {
				continue
			}
			r.body += string(fr.Data())
			if fr.StreamEnded() {
				return r
			}
		case *http2.GoAwayFrame:
			t.Fatalf("stream %d: GOAWAY %v %q before the answer", id, fr.ErrCode, fr.DebugData())
		case *http2.SettingsFrame:
			if !fr.IsAck() {
				c.wmu.Lock()
				_ = c.fr.WriteSettingsAck()
				c.wmu.Unlock()
			}
		}
	}
}

// goAwayThenEOF reports whether the server said GOAWAY and closed the
// connection.
func (c *h2Client) goAwayThenEOF(t *testing.T) bool {
	t.Helper()
	sawGoAway := false
	for {
		fr, err := c.fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Logf("after the answer: %v", err)
			}
			return sawGoAway
		}
		if g, ok := fr.(*http2.GoAwayFrame); ok && g.ErrCode == http2.ErrCodeNo {
			sawGoAway = true
		}
	}
}

// compactJSON is s without insignificant spaces, or s if it is not JSON.
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	var v any
	if json.Unmarshal(b.Bytes(), &v) == nil {
		out, _ := json.Marshal(v) // sorted keys
		return string(out)
	}
	return b.String()
}

// BenchmarkHTTP2Requests weighs the guard: small GETs over HTTP/2 from
// parallel clients on one connection each, with the guard and without.
func BenchmarkHTTP2Requests(b *testing.B) {
	for _, guarded := range []bool{true, false} {
		name := map[bool]string{true: "guarded", false: "unguarded"}[guarded]
		b.Run(name, func(b *testing.B) {
			h2Guarded = guarded
			defer func() { h2Guarded = true }()
			t := &testing.T{}
			s := startTestServer(t)
			defer s.srv.shutdown(context.Background())
			url := "https://" + s.addr + "/x.json"
			b.RunParallel(func(pb *testing.PB) {
				tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1"}, ForceAttemptHTTP2: true}
				defer tr.CloseIdleConnections()
				client := &http.Client{Transport: tr}
				for pb.Next() {
					req, _ := http.NewRequest("GET", url, nil)
					req.Header.Set("Authorization", "Bearer "+strings.Repeat("t", 900)) // an ID token's size
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}

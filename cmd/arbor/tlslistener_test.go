package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestBothProtocolsServed: HTTP/2 is still negotiated (and HTTP/1.1 when
// a client offers only that), and requests carry their TLS state.
func TestBothProtocolsServed(t *testing.T) {
	s := startTestServer(t)
	for _, c := range []struct {
		h2    bool
		proto string
	}{{true, "HTTP/2.0"}, {false, "HTTP/1.1"}} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1"}, ForceAttemptHTTP2: c.h2}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + s.addr + "/x.json")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf(`{"ok":true,"tls":true,"proto":%q}`, c.proto); resp.Proto != c.proto || string(body) != want {
			t.Errorf("%s answered %q, want %q", resp.Proto, body, want)
		}
	}
}

// TestPlainHTTPGetsGoAnswer: plain HTTP on the HTTPS port gets net/http's
// own 400 (SPEC §7), byte for byte, and the connection is closed.
func TestPlainHTTPGetsGoAnswer(t *testing.T) {
	s := startTestServer(t)
	cn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	_ = cn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(cn, "GET /x.json HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(cn)
	if err != nil || string(got) != plainHTTPAnswer {
		t.Fatalf("plain HTTP answered %q (%v), want %q", got, err, plainHTTPAnswer)
	}
}

// TestHTTP2OversizedHeaders pins what net/http's HTTP/2 server does with a
// header list over its SETTINGS_MAX_HEADER_LIST_SIZE (1 MiB + 320), as
// docs/RELIABILITY.md says: Go's client refuses to send it; a header
// block that passes the limit in its last frame gets Go's own 431 in
// HTML, one that goes on after it ends the connection (GOAWAY
// PROTOCOL_ERROR), and so does a single field over the limit (GOAWAY
// COMPRESSION_ERROR). A header HTTP/2 forbids gets Go's own 400 in text.
func TestHTTP2OversizedHeaders(t *testing.T) {
	s := startTestServer(t)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1"}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+s.addr+"/x.json", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 2<<20))
	if resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("Go's HTTP/2 client sent a 2 MiB header (%s %d)", resp.Proto, resp.StatusCode)
	}

	quarter := strings.Repeat("a", 300_000)
	status, ctype, goAway := h2Request(t, s, [][2]string{{"x-a", quarter}, {"x-b", quarter}, {"x-c", quarter}, {"x-d", quarter}})
	if status != "431" || !strings.HasPrefix(ctype, "text/html") {
		t.Errorf("4 fields of 300 kB: status %q, Content-Type %q, GOAWAY %v; want Go's HTML 431", status, ctype, goAway)
	}
	status, _, goAway = h2Request(t, s, [][2]string{{"x-a", quarter}, {"x-b", quarter}, {"x-c", quarter}, {"x-d", quarter}, {"x-e", quarter}})
	if status != "" || goAway != http2.ErrCodeProtocol {
		t.Errorf("5 fields of 300 kB: status %q, GOAWAY %v; want GOAWAY PROTOCOL_ERROR", status, goAway)
	}
	status, _, goAway = h2Request(t, s, [][2]string{{"x-big", strings.Repeat("a", 2<<20)}})
	if status != "" || goAway != http2.ErrCodeCompression {
		t.Errorf("one field of 2 MiB: status %q, GOAWAY %v; want GOAWAY COMPRESSION_ERROR", status, goAway)
	}
	status, ctype, _ = h2Request(t, s, [][2]string{{"connection", "close"}})
	if status != "400" || !strings.HasPrefix(ctype, "text/plain") {
		t.Errorf("a connection header: status %q, Content-Type %q; want Go's text 400", status, ctype)
	}
	status, ctype, _ = h2Request(t, s, [][2]string{{"x-small", "a"}})
	if status != "200" || ctype != "application/json; charset=utf-8" {
		t.Errorf("a small header: status %q, Content-Type %q", status, ctype)
	}
}

// h2Request sends one GET with the extra header fields over a raw HTTP/2
// connection, as literals in 16 KiB frames, and returns the answer's
// status and Content-Type, or the GOAWAY code that ended the connection.
func h2Request(t *testing.T, s *testServer, fields [][2]string) (status, ctype string, goAway http2.ErrCode) {
	t.Helper()
	cn := s.dial(t, "h2")
	_ = cn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(cn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(cn, cn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range append([][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", "/x.json"}}, fields...) {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	go func() { // the server may answer or hang up before the last frame
		if fr.WriteSettings() != nil {
			return
		}
		b := block.Bytes()
		n := min(len(b), 16384)
		err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:n], EndStream: true, EndHeaders: n == len(b)})
		for b = b[n:]; err == nil && len(b) > 0; b = b[n:] {
			n = min(len(b), 16384)
			err = fr.WriteContinuation(1, n == len(b), b[:n])
		}
	}()
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.Logf("reading frames: %v", err)
			}
			return "", "", goAway
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			return f.PseudoValue("status"), headerValue(f, "content-type"), goAway
		case *http2.GoAwayFrame:
			goAway = f.ErrCode
		}
	}
}

func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, hf := range f.RegularFields() {
		if hf.Name == name {
			return hf.Value
		}
	}
	return ""
}

// TestTLSListenerHandshakes: a connection that never completes its
// handshake is closed after the timeout, and those still in their
// handshake are closed by Close.
func TestTLSListenerHandshakes(t *testing.T) {
	certPEM, keyPEM, err := newSelfSigned([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	listen := func(timeout time.Duration) *tlsListener {
		raw, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := newTLSListener(raw, &tls.Config{Certificates: []tls.Certificate{pair}}, timeout, t.Logf)
		t.Cleanup(func() { l.Close() })
		return l
	}
	closedWithin := func(cn net.Conn, limit time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		_ = cn.SetReadDeadline(start.Add(limit))
		if _, err := cn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the connection was not closed within %s (%v)", limit, err)
		}
		return time.Since(start)
	}
	l := listen(300 * time.Millisecond)
	idle, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if took := closedWithin(idle, 5*time.Second); took < 200*time.Millisecond {
		t.Errorf("an idle connection was closed after %s, before the handshake timeout", took)
	}

	l = listen(time.Minute)
	idle2, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle2.Close()
	deadline := time.Now().Add(5 * time.Second)
	for pending := 0; pending == 0; { // poll: the handshake has started
		if time.Now().After(deadline) {
			t.Fatal("the connection never reached its handshake")
		}
		time.Sleep(time.Millisecond)
		l.mu.Lock()
		pending = len(l.pending)
		l.mu.Unlock()
	}
	l.Close()
	closedWithin(idle2, 5*time.Second)
	if c, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v %v", c, err)
	}
}

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/pki"
)

// testServer is listenHTTPS on 127.0.0.1 with a self-signed certificate
// and a handler that answers {"ok":true} (or, for /plain, a text answer
// that closes the connection, as a handler could), noting whether the
// request came with its TLS state.
type testServer struct {
	addr string
	pool *x509.CertPool
	srv  *httpsServer
}

func startTestServer(t *testing.T) *testServer {
	t.Helper()
	certPEM, keyPEM, err := pki.NewSelfSigned([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	block, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool.AddCert(leaf)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, "handler text")
			return
		}
		if r.URL.Path == "/socket" {
			socketOfHijacked(w)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // to the end of the stream: its trailers too
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, `{"ok":true,"tls":%t,"proto":%q}`, r.TLS != nil, r.Proto)
	})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := listenHTTPS("127.0.0.1:0", filepath.Join(t.TempDir(), "http.addr"), 16, h,
		func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil }, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.shutdown(ctx)
	})
	return &testServer{addr: s.addr, pool: pool, srv: s}
}

// dial opens a TLS connection offering only the given protocols.
func (s *testServer) dial(t *testing.T, protos ...string) *tls.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	cn, err := tls.DialWithDialer(&d, "tcp", s.addr, &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1", NextProtos: protos})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cn.Close() })
	return cn
}

// roundTrip writes req on a fresh HTTP/1.1 connection while reading the
// answer (a client sending a large head may still be writing when the
// server answers) and returns the answer, its body read whole.
func (s *testServer) roundTrip(t *testing.T, req string) (*http.Response, string) {
	t.Helper()
	cn := s.dial(t, "http/1.1")
	_ = cn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(cn, req) }() // fails once the server closes: expected
	resp, err := http.ReadResponse(bufio.NewReader(cn), nil)
	if err != nil {
		t.Fatalf("%.60q: no answer: %v", req, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%.60q: body: %v", req, err)
	}
	return resp, string(body)
}

// TestGoAnswersAreJSON: every answer net/http would write by itself in
// plain text on an HTTP/1 connection is SPEC §6 JSON with the API's
// headers, whatever the size of the head; requests within the limits
// reach the handler with their TLS state.
func TestGoAnswersAreJSON(t *testing.T) {
	s := startTestServer(t)
	big := func(n int) string { return strings.Repeat("a", n) }
	for _, c := range []struct {
		name, req string
		status    int
		msg       string
	}{
		{"head of 2 MiB", "GET /x.json HTTP/1.1\r\nHost: x\r\nX-Big: " + big(2<<20) + "\r\n\r\n", 431, msgHeadersTooLarge},
		{"head of 16 MiB", "GET /x.json HTTP/1.1\r\nHost: x\r\nX-Big: " + big(16<<20) + "\r\n\r\n", 431, msgHeadersTooLarge},
		{"head just over the limit", "GET /x.json HTTP/1.1\r\nHost: x\r\nX-Big: " + big(maxHeaderBytes+4096) + "\r\n\r\n", 431, msgHeadersTooLarge},
		{"many headers", "GET /x.json HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: "+big(1000)+"\r\n", 1100) + "\r\n", 431, msgHeadersTooLarge},
		{"request line too long", "GET /" + big(2<<20) + " HTTP/1.1\r\nHost: x\r\n\r\n", 431, msgHeadersTooLarge},
		{"malformed request line", "GARBAGE\r\n\r\n", 400, msgMalformed},
		{"malformed Host", "GET /x.json HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "Bad request: malformed Host header"},
		{"missing Host", "GET /x.json HTTP/1.1\r\n\r\n", 400, "Bad request: missing required Host header"},
		{"invalid header name", "GET /x.json HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n", 400, "Bad request: invalid header name"},
		{"two Content-Lengths", "PUT /x.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, msgMalformed},
		{"unknown transfer coding", "PUT /x.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, msgTransferCoding},
		{"HTTP/3.0 request line", "GET /x.json HTTP/3.0\r\nHost: x\r\n\r\n", 505, msgHTTPVersion},
		{"unknown expectation", "GET /x.json HTTP/1.1\r\nHost: x\r\nExpect: fries\r\n\r\n", 417, msgExpectation},
		{"HTTP/1.0 unknown expectation", "GET /x.json HTTP/1.0\r\nExpect: fries\r\n\r\n", 417, msgExpectation},
	} {
		resp, body := s.roundTrip(t, c.req)
		want := fmt.Sprintf("{\n  \"error\" : %q\n}\n", c.msg)
		if resp.StatusCode != c.status || body != want {
			t.Errorf("%s: %d %q, want %d %q", c.name, resp.StatusCode, body, c.status, want)
			continue
		}
		for k, v := range map[string]string{
			"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-cache",
			"Access-Control-Allow-Origin": "*", "Content-Length": strconv.Itoa(len(want)),
		} {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %s %q, want %q", c.name, k, got, v)
			}
		}
		if !resp.Close {
			t.Errorf("%s: the connection is kept, want it closed", c.name)
		}
	}

	// Within the limits, the handler answers, with the TLS state.
	for _, n := range []int{maxHeaderBytes - 200, 1000} {
		resp, body := s.roundTrip(t, "GET /x.json HTTP/1.1\r\nHost: x\r\nX-Big: "+big(n)+"\r\n\r\n")
		if resp.StatusCode != 200 || body != `{"ok":true,"tls":true,"proto":"HTTP/1.1"}` {
			t.Errorf("a head of %d bytes: %d %q", n, resp.StatusCode, body)
		}
	}
	// A handler's own plain-text answer that closes the connection passes
	// untouched: net/http always adds a Date header between it and the body.
	resp, body := s.roundTrip(t, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusTeapot || body != "handler text" {
		t.Errorf("a handler's text answer became %d %q", resp.StatusCode, body)
	}
}

// TestJSONAnswerLeavesOtherWritesAlone: only net/http's own answers are
// rewritten, not the heads and bodies of a handler's answers.
func TestJSONAnswerLeavesOtherWritesAlone(t *testing.T) {
	now := time.Now()
	for _, p := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nDate: x\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 100 Continue\r\n\r\n",
		"HTTP/1.1 400 Bad Request\r\nAccess-Control-Allow-Origin: *\r\n\r\n",
		"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 4x1 Nope\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n",
		`"HTTP/1.1 431 Request Header Fields Too Large"`,
		"HTTP/1.1",
		"",
	} {
		if a, ok := jsonAnswer([]byte(p), now); ok {
			t.Errorf("%q rewritten to %q", p, a)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sseServer is a TLS server answering every GET with an SSE stream (a
// `put` of null, then keep-alives) until the client goes away, recording
// what it saw.
type sseServer struct {
	*httptest.Server
	mu    sync.Mutex
	paths map[string]bool
	open  atomic.Int64
	bad   atomic.Int64 // requests without the stream's headers, or over HTTP/2
}

func newSSEServer(t *testing.T, status int) *sseServer {
	s := &sseServer{paths: map[string]bool{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Authorization") != "Bearer s3cret" || r.ProtoMajor != 1 {
			s.bad.Add(1)
		}
		if status != http.StatusOK {
			http.Error(w, `{"error" : "Permission denied"}`, status)
			return
		}
		s.mu.Lock()
		s.paths[r.URL.Path] = true
		s.mu.Unlock()
		s.open.Add(1)
		defer s.open.Add(-1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n")
		w.(http.Flusher).Flush()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				fmt.Fprint(w, "event: keep-alive\ndata: null\n\n")
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sseServer) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

func (s *sseServer) addr() string { return s.Listener.Addr().String() }

func TestPoolOpensHoldsAndCloses(t *testing.T) {
	srv := newSSEServer(t, http.StatusOK)
	// The same server twice: streams alternate between the two addresses.
	p := newPool(srv.tlsConfig(), "s3cret", []string{srv.addr(), srv.addr()}, "/idle", false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 40
	if err := p.open(ctx, n, 8, nil); err != nil {
		t.Fatal(err)
	}
	if got := srv.open.Load(); got != n {
		t.Fatalf("server holds %d streams, want %d", got, n)
	}
	if got := srv.bad.Load(); got != 0 {
		t.Fatalf("%d requests lacked Accept/Authorization or were not HTTP/1.1", got)
	}
	srv.mu.Lock()
	for i := range n {
		if !srv.paths[fmt.Sprintf("/idle/s%d.json", i)] {
			t.Errorf("no stream on /idle/s%d.json", i)
		}
	}
	srv.mu.Unlock()
	// Keep-alives flow for a while; no stream may end on its own.
	time.Sleep(100 * time.Millisecond)
	if e := p.ended.Load(); e != 0 {
		t.Fatalf("%d streams ended early", e)
	}
	p.close()
	deadline := time.Now().Add(5 * time.Second)
	for srv.open.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.open.Load(); got != 0 {
		t.Fatalf("%d streams still open on the server after close", got)
	}
	if e := p.ended.Load(); e != 0 {
		t.Fatalf("closing counted %d streams as ended by the server", e)
	}
}

func TestPoolReportsRefusal(t *testing.T) {
	srv := newSSEServer(t, http.StatusUnauthorized)
	p := newPool(srv.tlsConfig(), "s3cret", []string{srv.addr()}, "/idle", false)
	defer p.close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := p.open(ctx, 5, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("open: %v, want the 401 and its message", err)
	}
}

func TestFirstEvent(t *testing.T) {
	for _, tc := range []struct {
		in, err string
	}{
		{"event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n", ""},
		{"event: keep-alive\ndata: null\n\nevent: put\r\ndata: {}\r\n\r\n", ""},
		{"event: cancel\ndata: too slow\n\n", "the server sent cancel: too slow"},
		{"event: put\ndata: {}\n", "before the first event"},
	} {
		err := firstEvent(newReader(tc.in))
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("firstEvent(%q) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--ca", "ca.pem", "--n", "10", "--addr", "a:1, b:2"}, ""},
		{[]string{"--n", "10"}, "--ca is required"},
		{[]string{"--ca", "x", "--n", "0"}, "want 1 to 100000"},
		{[]string{"--ca", "x", "--addr", " , "}, "names no node"},
		{[]string{"--ca", "x", "--prefix", "idle"}, "must start with /"},
		{[]string{"--ca", "x", "extra"}, "unexpected argument"},
	} {
		cfg, err := parseFlags(tc.args, io.Discard)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseFlags(%q) = %v, want %q", tc.args, err, tc.err)
		}
		if tc.err == "" && (len(cfg.addrs) != 2 || cfg.addrs[1] != "b:2") {
			t.Errorf("parseFlags(%q): addrs %q", tc.args, cfg.addrs)
		}
	}
}

func newReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

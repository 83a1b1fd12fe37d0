package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/pki"
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

// TestHijackedConnectionsReachTheirSocket: the realtime server waits for
// an idle connection's socket to become readable, which it finds through
// the NetConn of each wrapper the listener puts around it.
func TestHijackedConnectionsReachTheirSocket(t *testing.T) {
	s := startTestServer(t)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + s.addr + "/socket")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "socket" {
		t.Fatalf("the hijacked connection's wrappers lead to %q, not to its socket", body)
	}
}

// socketOfHijacked takes the connection over and answers "socket" when
// the NetConn of its wrappers lead to a syscall.Conn, else the type where
// they end.
func socketOfHijacked(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer c.Close()
	found := c
	for range 8 {
		if _, ok := found.(syscall.Conn); ok {
			break
		}
		u, ok := found.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		found = u.NetConn()
	}
	body := "socket"
	if _, ok := found.(syscall.Conn); !ok {
		body = fmt.Sprintf("%T", found)
	}
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
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

// TestTLSListenerHandshakes: a connection that never completes its
// handshake is closed after the timeout, and those still in their
// handshake are closed by Close.
func TestTLSListenerHandshakes(t *testing.T) {
	certPEM, keyPEM, err := pki.NewSelfSigned([]string{"127.0.0.1"}, time.Now())
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

package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// detachedCount is how many streams run on connections taken over.
func (h *harness) detachedCount() int {
	d := &h.s.hub.detached
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

// waitFor polls cond every 10 ms for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDetachedStreamEndsWhenClientGoes: an HTTP/1.1 stream runs on its
// connection, taken over, and ends as soon as its client closes it.
func TestDetachedStreamEndsWhenClientGoes(t *testing.T) {
	h := newHarness(t, nil, nil)
	s := openStream(t, h, "/x.json")
	s.want(`put {"path":"/","data":null}`)
	// It takes its connection over right after its first frame is out.
	waitFor(t, "the stream to detach", func() bool { return h.detachedCount() == 1 })
	h.run([]step{{name: "write", req: req{method: "PUT", path: "/x.json", body: str(`1`)}, status: 200, body: `1`}})
	s.want(`put {"path":"/","data":1}`)
	s.cancel()
	waitFor(t, "the stream to end", func() bool { return h.s.hub.open() == 0 && h.detachedCount() == 0 })
}

// TestDetachedStreamBodyEnds: a detached stream ended by CloseStreams
// ends its chunked body properly: the client reads to a clean EOF.
func TestDetachedStreamBodyEnds(t *testing.T) {
	h := newHarness(t, nil, nil)
	hr, _ := http.NewRequest("GET", h.ts.URL+"/x.json", nil)
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("Authorization", "Bearer "+adminSecret)
	resp, err := h.ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer encoding %q, want chunked", resp.TransferEncoding)
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); line != "event: put\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	waitFor(t, "the stream to detach", func() bool { return h.detachedCount() == 1 })
	done := make(chan struct{})
	go func() { defer close(done); h.s.CloseStreams() }()
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading to the end: %v (after %q)", err, rest)
	}
	if string(rest) != "data: {\"path\":\"/\",\"data\":null}\n\n" {
		t.Fatalf("rest of the body %q", rest)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("CloseStreams did not return")
	}
}

// TestCloseStreamsClosesStuckConnections: a detached stream whose client
// stopped reading, its write blocked, is closed by CloseStreams after
// detachedGrace instead of holding the shutdown.
func TestCloseStreamsClosesStuckConnections(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.StreamBufferBytes = 256 << 20 })
	conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /big.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer "+adminSecret+"\r\n\r\n")
	if line, err := bufio.NewReader(conn).ReadString('\n'); line != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("status line %q, %v", line, err)
	}
	waitFor(t, "the stream to detach", func() bool { return h.detachedCount() == 1 })
	// 24 MB of events that nobody reads: more than loopback buffers hold.
	big := `"` + strings.Repeat("a", 1<<20) + `"`
	for range 24 {
		if r := h.do(req{method: "PUT", path: "/big.json?print=silent", body: &big}); r.status != http.StatusNoContent {
			t.Fatalf("write: %d %s", r.status, r.body)
		}
	}
	start := time.Now()
	h.s.CloseStreams()
	took := time.Since(start)
	t.Logf("CloseStreams took %s", took.Round(time.Millisecond))
	if took > detachedGrace+5*time.Second {
		t.Fatalf("CloseStreams took %s", took)
	}
	waitFor(t, "the stuck stream to end", func() bool { return h.s.hub.open() == 0 && h.detachedCount() == 0 })
}

// TestHTTP10StreamIsNotDetached: HTTP/1.0 has no chunked body, so its
// stream stays with net/http (and its body ends with the connection).
func TestHTTP10StreamIsNotDetached(t *testing.T) {
	h := newHarness(t, nil, nil)
	conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /x.json HTTP/1.0\r\nAccept: text/event-stream\r\nAuthorization: Bearer "+adminSecret+"\r\n\r\n")
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no first frame: %v", err)
		}
		if line == "event: put\n" {
			break
		}
	}
	if n := h.detachedCount(); n != 0 {
		t.Fatalf("%d detached streams, want 0", n)
	}
	if n := h.s.hub.open(); n != 1 {
		t.Fatalf("%d open streams, want 1", n)
	}
}

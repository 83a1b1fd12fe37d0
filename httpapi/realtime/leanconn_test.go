package realtime

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// tlsRig serves r's server over TLS too, as a node does: the reader then
// waits past crypto/tls's buffers (leanConn.probe).
func (r *rig) tlsRig() *httptest.Server {
	r.t.Helper()
	ts := httptest.NewTLSServer(r.srv)
	r.t.Cleanup(ts.Close)
	return ts
}

// dialTLS opens a WebSocket connection to ts, closed when the test ends.
func dialTLS(ctx context.Context, t *testing.T, ts *httptest.Server) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(ts.URL, "https")+"/.ws?v=5&ns=test", &websocket.DialOptions{HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// rawFrame is a masked client text frame (a zero mask key, which leaves
// the payload as it is).
func rawFrame(payload string) []byte {
	f := []byte{0x81}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	default:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	}
	f = append(f, 0, 0, 0, 0)
	return append(f, payload...)
}

// readServerFrame reads one unmasked frame from the server.
func readServerFrame(br *bufio.Reader) (byte, string, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, "", err
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(br, ext[:]); err != nil {
			return 0, "", err
		}
		n = int(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(br, ext[:]); err != nil {
			return 0, "", err
		}
		n = int(binary.BigEndian.Uint64(ext[:]))
	}
	p := make([]byte, n)
	_, err := io.ReadFull(br, p)
	return h[0] & 0x0f, string(p), err
}

// statsRequest is a request the server answers with ok at once, padded
// so that its frame (8 bytes of header and mask) fills the reader's
// buffer exactly (leanReadBuffer): after one request of several sent
// together the buffer is empty and the rest wait in crypto/tls's.
func statsRequest(r int) string {
	m := fmt.Sprintf(`{"t":"d","d":{"r":%d,"a":"s","b":{"c":{"sdk.js.9-0-0":1,"":1}}}}`, r)
	pad := leanReadBuffer - 8 - len(m)
	return strings.Replace(m, `"":1`, `"`+strings.Repeat("x", pad)+`":1`, 1)
}

// TestLeanConnReadsWhatArrivesTogether sends what a reader waiting on
// the socket alone would miss: the first request in the same write as
// the upgrade (net/http reads it with the request), then three requests
// in one write, so one TLS record (crypto/tls decrypts them at once and
// the socket stays silent). Each must be answered.
func TestLeanConnReadsWhatArrivesTogether(t *testing.T) {
	r := newRig(t, nil)
	ts := r.tlsRig()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(ts.URL, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	upgrade := "GET /.ws?v=5&ns=test HTTP/1.1\r\nHost: arbor.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := conn.Write(append([]byte(upgrade), rawFrame(statsRequest(1))...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: status %d", resp.StatusCode)
	}
	answered := map[string]bool{}
	wait := func(ids ...int) {
		t.Helper()
		for _, id := range ids {
			want := fmt.Sprintf(`"r":%d,`, id)
			for !answered[want] {
				_, msg, err := readServerFrame(br)
				if err != nil {
					t.Fatalf("waiting for the answer to request %d: %v", id, err)
				}
				if i := strings.Index(msg, `"r":`); i >= 0 {
					answered[msg[i:i+strings.Index(msg[i:], ",")+1]] = true
				}
			}
		}
	}
	wait(1)
	var together []byte
	for id := 2; id <= 4; id++ {
		together = append(together, rawFrame(statsRequest(id))...)
	}
	if _, err := conn.Write(together); err != nil {
		t.Fatal(err)
	}
	wait(2, 3, 4)
}

// TestLeanConnSessionEndWakesIdleReader: a session ended while its
// reader waits on an idle socket finishes at once, and its client is
// told why (going away), not cut off.
func TestLeanConnSessionEndWakesIdleReader(t *testing.T) {
	r := newRig(t, nil)
	ts := r.tlsRig()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := dialTLS(ctx, t, ts)
	if _, _, err := conn.Read(ctx); err != nil { // the hello
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the reader is parked
	start := time.Now()
	r.srv.Close()
	_, _, err := conn.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway {
		t.Fatalf("after the server closed: %v, want a going-away close", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the close took %v", d)
	}
}

// TestLeanConnSessionEndEndsBlockedWrite: a session whose write is
// blocked on a client that stopped reading finishes when it ends, not
// when the write's own timeout passes.
func TestLeanConnSessionEndEndsBlockedWrite(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.WriteTimeout = time.Minute
		c.MaxOutboundBytes = 64 << 20
	})
	ts := r.tlsRig()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := dialTLS(ctx, t, ts)
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"t":"d","d":{"r":1,"a":"q","b":{"p":"/feed","h":""}}}`)); err != nil {
		t.Fatal(err)
	}
	// Enough for the socket's buffers both ways: the server's write
	// blocks, and the client never reads.
	big := `"` + strings.Repeat("x", 1<<20) + `"`
	for range 24 {
		if err := r.db.set("/feed", big); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	r.srv.Close()
	for r.srv.Sessions() > 0 {
		// Past 4 s the library's own close timeout (5 s) would have
		// ended it.
		if time.Since(start) > 4*time.Second {
			t.Fatal("the session with a blocked write did not finish within 4 s of its end (its write timeout is a minute)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("finished %v after its end", time.Since(start))
}

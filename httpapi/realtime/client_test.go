package realtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// This file is a protocol client written from the protocol's facts
// (docs: shared reference realtime-protocol.md), not from any SDK: it
// frames as the SDKs do, keeps the request numbers and tells answers from
// pushes.

// testNow is the servers' clock in tests, fixed so transcripts hold.
var testNow = time.UnixMilli(1700000000000)

// rig is a Server on a loopback HTTP server over an fsmDB.
type rig struct {
	t   *testing.T
	db  *fsmDB
	srv *Server
	ts  *httptest.Server
	dis *LocalDisconnects
}

// newRig starts a server; edit may change its configuration.
func newRig(t *testing.T, edit func(*Config)) *rig {
	t.Helper()
	return newRigWith(t, edit, fakeTokens{expires: testNow.Add(time.Hour)})
}

// newRigWith is newRig with its token verifier.
func newRigWith(t *testing.T, edit func(*Config), tokens Tokens) *rig {
	t.Helper()
	r := &rig{t: t, db: newFSMDB()}
	cfg := DefaultConfig()
	cfg.AdminSecrets = []string{"admin-secret"}
	cfg.Now = func() time.Time { return testNow }
	cfg.OpenIfUnset = true
	if edit != nil {
		edit(&cfg)
	}
	r.dis = NewLocalDisconnects(r.db, cfg.Now, slog.New(slog.DiscardHandler))
	srv, err := New(cfg, Deps{DB: r.db, Events: r.db, Tokens: tokens, Disconnects: r.dis})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.ts = httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		r.ts.Close()
	})
	return r
}

// url is the WebSocket address with query (without the leading "?").
func (r *rig) url(query string) string {
	return "ws" + strings.TrimPrefix(r.ts.URL, "http") + "/.ws?" + query
}

// client is one protocol connection.
type client struct {
	t      *testing.T
	conn   *websocket.Conn
	next   int
	msgs   chan map[string]any
	raw    chan string
	closed chan error
	hello  map[string]any
}

// dial connects with v=5&ns=test and reads the hello.
func (r *rig) dial() *client {
	r.t.Helper()
	c := r.dialURL(r.url("v=5&ns=test"))
	h := c.read()
	if h["t"] != "c" {
		r.t.Fatalf("first message is not the hello: %v", h)
	}
	hd := h["d"].(map[string]any)
	if hd["t"] != "h" {
		r.t.Fatalf("first message is not the hello: %v", h)
	}
	c.hello = hd["d"].(map[string]any)
	return c
}

// dialURL connects to u and starts reading.
func (r *rig) dialURL(u string) *client {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	conn.SetReadLimit(-1)
	c := &client{t: r.t, conn: conn, next: 1, msgs: make(chan map[string]any, 1024), raw: make(chan string, 1024), closed: make(chan error, 1)}
	go c.readLoop()
	r.t.Cleanup(func() { conn.CloseNow() })
	return c
}

// readLoop puts frames back together as the SDKs do: a frame of at most
// six characters that is a number announces that many frames.
func (c *client) readLoop() {
	want := 0
	var buf strings.Builder
	for {
		_, data, err := c.conn.Read(context.Background())
		if err != nil {
			c.closed <- err
			close(c.msgs)
			return
		}
		f := string(data)
		if want == 0 {
			if n, err := strconv.Atoi(f); err == nil && len(f) <= 6 {
				want = n
				buf.Reset()
				continue
			}
			c.deliver(f)
			continue
		}
		buf.WriteString(f)
		if want--; want == 0 {
			c.deliver(buf.String())
		}
	}
}

func (c *client) deliver(s string) {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		c.t.Errorf("server sent something that is not JSON: %.200q", s)
		return
	}
	c.raw <- s
	c.msgs <- m
}

// read returns the next message, failing after a deadline.
func (c *client) read() map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("the connection closed while a message was expected")
		}
		<-c.raw
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message from the server")
	}
	return nil
}

// quiet fails if a message arrives within a short while.
func (c *client) quiet() {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		c.t.Fatalf("unexpected message %v", m)
	case <-time.After(100 * time.Millisecond):
	}
}

// sendText sends one message, split as the SDKs split theirs: chunks of
// 16,384 characters behind a count frame when there is more than one.
func (c *client) sendText(s string) {
	c.t.Helper()
	if err := c.trySendText(s); err != nil {
		c.t.Fatal(err)
	}
}

// trySendText is sendText for a message the server may refuse half-way:
// it returns the first write's error.
func (c *client) trySendText(s string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const chunk = 16384
	if len(s) <= chunk {
		return c.conn.Write(ctx, websocket.MessageText, []byte(s))
	}
	n := (len(s) + chunk - 1) / chunk
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(strconv.Itoa(n))); err != nil {
		return err
	}
	for i := 0; i < len(s); i += chunk {
		if err := c.conn.Write(ctx, websocket.MessageText, []byte(s[i:min(i+chunk, len(s))])); err != nil {
			return err
		}
	}
	return nil
}

// request sends action with body and returns its request number.
func (c *client) request(action string, body any) int {
	c.t.Helper()
	r := c.next
	c.next++
	b, err := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": r, "a": action, "b": body}})
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendText(string(b))
	return r
}

// answer reads until the answer to request r and returns its status and
// data, and the pushes that came before it.
func (c *client) answer(r int) (status string, data any, pushes []map[string]any) {
	c.t.Helper()
	for {
		m := c.read()
		d, _ := m["d"].(map[string]any)
		if m["t"] != "d" || d == nil {
			c.t.Fatalf("unexpected message %v", m)
		}
		if rr, ok := d["r"].(float64); ok {
			if int(rr) != r {
				c.t.Fatalf("answer to %v while waiting for %d", rr, r)
			}
			b := d["b"].(map[string]any)
			return b["s"].(string), b["d"], pushes
		}
		pushes = append(pushes, d)
	}
}

// do sends a request and returns its answer.
func (c *client) do(action string, body any) (string, any, []map[string]any) {
	c.t.Helper()
	return c.answer(c.request(action, body))
}

// push reads the next message, which must be a push, and returns its
// action and body.
func (c *client) push() (string, map[string]any) {
	c.t.Helper()
	m := c.read()
	d, _ := m["d"].(map[string]any)
	if m["t"] != "d" || d == nil || d["r"] != nil {
		c.t.Fatalf("expected a push, got %v", m)
	}
	b, _ := d["b"].(map[string]any)
	return d["a"].(string), b
}

// waitClosed waits for the server to close the connection and returns
// the close status and reason.
func (c *client) waitClosed() (websocket.StatusCode, string) {
	c.t.Helper()
	for {
		select {
		case _, ok := <-c.msgs:
			if ok {
				<-c.raw
				continue
			}
			err := <-c.closed
			var ce websocket.CloseError
			if ok := asCloseError(err, &ce); ok {
				return ce.Code, ce.Reason
			}
			return -1, err.Error()
		case <-time.After(10 * time.Second):
			c.t.Fatal("the server did not close the connection")
		}
	}
}

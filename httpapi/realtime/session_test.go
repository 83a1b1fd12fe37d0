package realtime

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestHello(t *testing.T) {
	r := newRig(t, nil)
	c := r.dial()
	h := c.hello
	host := strings.TrimPrefix(r.ts.URL, "http://")
	if h["v"] != "5" || h["h"] != host || h["ts"] != float64(testNow.UnixMilli()) || len(h["s"].(string)) != 32 {
		t.Fatalf("hello %v; want v 5, h %s, ts %d, a session id", h, host, testNow.UnixMilli())
	}
	if c2 := r.dial(); c2.hello["s"] == h["s"] {
		t.Fatal("two sessions got the same id")
	}
}

// A wrong version or database gets a shutdown message saying why (the
// SDKs stop reconnecting) and a close.
func TestRefusals(t *testing.T) {
	r := newRig(t, func(c *Config) { c.DatabaseName = "prod" })
	for _, tc := range []struct {
		query, reason string
		code          websocket.StatusCode
	}{
		{"v=4&ns=prod", `Unsupported protocol version "4"`, websocket.StatusProtocolError},
		{"ns=prod", `Unsupported protocol version ""`, websocket.StatusProtocolError},
		{"v=5&ns=other", `Database "other" not found`, websocket.StatusPolicyViolation},
	} {
		c := r.dialURL(r.url(tc.query))
		m := c.read()
		d := m["d"].(map[string]any)
		if m["t"] != "c" || d["t"] != "s" || !strings.Contains(d["d"].(string), tc.reason) {
			t.Fatalf("%s: got %v, want a shutdown with %q", tc.query, m, tc.reason)
		}
		if code, _ := c.waitClosed(); code != tc.code {
			t.Fatalf("%s: closed with %d, want %d", tc.query, code, tc.code)
		}
	}
	c := r.dialURL(r.url("v=5&ns=prod&ls=abc&p=app&ac=token&r=f"))
	if m := c.read(); m["d"].(map[string]any)["t"] != "h" {
		t.Fatalf("the right database and the SDKs' parameters: got %v", m)
	}
}

// Any namespace is accepted when no name is configured.
func TestAnyNamespace(t *testing.T) {
	r := newRig(t, nil)
	c := r.dialURL(r.url("v=5&ns=whatever"))
	if m := c.read(); m["d"].(map[string]any)["t"] != "h" {
		t.Fatalf("got %v", m)
	}
}

// Large messages travel as count-prefixed frames both ways; keep-alives
// need no answer; a ping gets a pong.
func TestFramingAndKeepAlive(t *testing.T) {
	r := newRig(t, nil)
	c := r.dial()
	big := strings.Repeat("ü", 40000) // 80,000 bytes: six frames
	c.sendText("0")
	if st, _, _ := c.do("p", map[string]any{"p": "/big", "d": big}); st != "ok" {
		t.Fatalf("big set: %s", st)
	}
	c.sendText("0")
	c.quiet()
	c.sendText(`{"t":"c","d":{"t":"p","d":{}}}`)
	if m := c.read(); m["t"] != "c" || m["d"].(map[string]any)["t"] != "o" {
		t.Fatalf("ping answered %v, want a pong", m)
	}
	st, data, _ := c.do("g", map[string]any{"p": "/big", "q": map[string]any{}})
	if st != "ok" || data != big {
		t.Fatalf("big get: %s, %d bytes", st, len(mustJSON(data)))
	}
}

func TestSplitFrames(t *testing.T) {
	msg := []byte(strings.Repeat("a", maxFrameBytes-1) + "é" + strings.Repeat("b", maxFrameBytes))
	frames := splitFrames(msg)
	if string(frames[0]) != "3" || len(frames) != 4 {
		t.Fatalf("count frame %q of %d", frames[0], len(frames))
	}
	var joined []byte
	for _, f := range frames[1:] {
		if len(f) > maxFrameBytes || !utf8Valid(f) {
			t.Fatalf("frame of %d bytes, valid %v", len(f), utf8Valid(f))
		}
		joined = append(joined, f...)
	}
	if string(joined) != string(msg) {
		t.Fatal("frames do not make the message")
	}
	if f := splitFrames([]byte("{}")); len(f) != 1 {
		t.Fatalf("a small message in %d frames", len(f))
	}
}

// A message over the limit that comes in frames is read to its end and
// answered too_big, and the connection goes on (the SDKs would otherwise
// send the write again on every reconnect); one frame over the limit
// closes the connection with "message too big".
func TestMessageTooBig(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxMessageBytes = 64 << 10 })
	// The head as the official JS SDK wrote it (an 18 MB set), padded.
	body := `{"t":"d","d":{"r":2,"a":"p","b":{"p":"/t/huge","d":{"a":"` + strings.Repeat("x", 100<<10) + `"}}}}`
	c := r.dial()
	c.sendText(body)
	if st, msg, _ := c.answer(2); st != "too_big" || !strings.Contains(msg.(string), "65536 bytes") {
		t.Fatalf("answered %s %v", st, msg)
	}
	c.next = 3
	if st, _, _ := c.do("g", map[string]any{"p": "/t/huge", "q": map[string]any{}}); st != "ok" {
		t.Fatalf("the connection after it: %s", st)
	}
	c = r.dial()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.conn.Write(ctx, websocket.MessageText, []byte(body)) // one frame
	if code, _ := c.waitClosed(); code != websocket.StatusMessageTooBig {
		t.Fatalf("one large frame: closed with %d", code)
	}
}

// An oversized message whose request number cannot be told (its body
// comes first), or that goes on (or is announced to go on) past four
// times the limit, closes the connection.
func TestMessageTooBigCutOff(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxMessageBytes = 64 << 10 })
	for name, body := range map[string]string{
		"body first": `{"t":"d","d":{"b":{"p":"/x","d":"` + strings.Repeat("x", 100<<10) + `"},"r":1,"a":"p"}}`,
		"endless":    `{"t":"d","d":{"r":1,"a":"p","b":{"p":"/x","d":"` + strings.Repeat("x", 300<<10) + `"}}}`,
	} {
		c := r.dial()
		_ = c.trySendText(body) // the server may close before the last frame
		if code, reason := c.waitClosed(); code != websocket.StatusMessageTooBig || !strings.Contains(reason, "too big") {
			t.Fatalf("%s: closed with %d %q", name, code, reason)
		}
	} // A count frame announcing more frames than an oversized message may
	// run to is cut off at once, before any of them comes.
	c := r.dial()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte("999999")); err != nil {
		t.Fatal(err)
	}
	if code, reason := c.waitClosed(); code != websocket.StatusMessageTooBig || !strings.Contains(reason, "too big") {
		t.Fatalf("a count of 999,999 frames: closed with %d %q", code, reason)
	}
}

// The request number is read from an oversized message's head only
// where it is sure to be the request's.
func TestRequestNumber(t *testing.T) {
	for head, want := range map[string]string{
		`{"t":"d","d":{"r":17,"a":"p","b":{"p":"/x","d":"xx`: "17",
		`{"d":{"a":"m","r":3,"b":{"p":"/x"`:                  "3",
		`{"t":"d","d":{"b":{"p":"/x","d":{"r":5}},"r":1`:     "",
		`{"t":"d","d":{"r":`:                                 "",
		`{"t":"d","d":{"r":12`:                               "",
		`{"t":"d","d":{"r":"x","b":{}`:                       "",
		`{"t":"d"`:                                           "",
	} {
		got, ok := requestNumber([]byte(head))
		if string(got) != want || ok != (want != "") {
			t.Errorf("%s: got %q %v, want %q", head, got, ok, want)
		}
	}
}

// A malformed message closes the connection as a protocol error.
func TestMalformedMessage(t *testing.T) {
	r := newRig(t, nil)
	c := r.dial()
	c.sendText(`{"t":"d","d":[1]}`)
	if code, _ := c.waitClosed(); code != websocket.StatusProtocolError {
		t.Fatalf("closed with %d", code)
	}
}

func TestListenLimit(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxListens = 2 })
	c := r.dial()
	for i, p := range []string{"/a", "/b"} {
		if st, _, _ := c.do("q", map[string]any{"p": p, "h": ""}); st != "ok" {
			t.Fatalf("listen %d: %s", i, st)
		}
	}
	if st, _, _ := c.do("q", map[string]any{"p": "/a", "h": ""}); st != "ok" {
		t.Fatalf("listening again at the same place: %s", st)
	}
	if st, msg, _ := c.do("q", map[string]any{"p": "/c", "h": ""}); st != "too_big" || !strings.Contains(msg.(string), "at most 2") {
		t.Fatalf("third listen: %s %v", st, msg)
	}
	c.do("n", map[string]any{"p": "/a"})
	if st, _, _ := c.do("q", map[string]any{"p": "/c", "h": ""}); st != "ok" {
		t.Fatalf("after an unlisten: %s", st)
	}
	if n := r.db.feeds(); n != 2 {
		t.Fatalf("%d feeds open, want 2", n)
	}
}

// onDisconnect operations run when the connection ends, not before;
// cancelled ones never; server values resolve when they run.
func TestOnDisconnect(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxDisconnects = 2 })
	c := r.dial()
	for _, rq := range []struct {
		a    string
		body map[string]any
	}{
		{"o", map[string]any{"p": "/presence/ann", "d": map[string]any{".sv": "timestamp"}}},
		{"om", map[string]any{"p": "/status", "d": map[string]any{"ann": "offline"}}},
	} {
		if st, _, _ := c.do(rq.a, rq.body); st != "ok" {
			t.Fatalf("%s: %s", rq.a, st)
		}
	}
	if st, _, _ := c.do("o", map[string]any{"p": "/third", "d": 1}); st != "too_big" {
		t.Fatalf("a third path: %s", st)
	}
	if st, _, _ := c.do("oc", map[string]any{"p": "/status", "d": nil}); st != "ok" {
		t.Fatalf("oc: %s", st)
	}
	if st, _, _ := c.do("o", map[string]any{"p": "/third", "d": 1}); st != "ok" {
		t.Fatalf("after a cancel: %s", st)
	}
	if v := r.db.f.ReadLocal(mustPath("/presence")).Value; v != nil {
		t.Fatal("an onDisconnect ran while the connection lived")
	}
	c.conn.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for r.db.f.ReadLocal(mustPath("/third")).Value == nil {
		if time.Now().After(deadline) {
			t.Fatal("onDisconnect operations did not run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v := r.db.f.ReadLocal(mustPath("/presence/ann")).Value; v == nil || v.IntValue() != testNow.UnixMilli() {
		t.Fatalf("presence %v, want the time it ran", v)
	}
	if v := r.db.f.ReadLocal(mustPath("/status")).Value; v != nil {
		t.Fatal("a cancelled operation ran")
	}
}

// onDisconnect operations are judged by the rules when registered.
func TestOnDisconnectJudged(t *testing.T) {
	r := newRig(t, nil)
	if err := r.db.setRules(`{"rules":{".read":true,"open":{".write":true}}}`); err != nil {
		t.Fatal(err)
	}
	c := r.dial()
	if st, _, _ := c.do("o", map[string]any{"p": "/closed", "d": 1}); st != "permission_denied" {
		t.Fatalf("denied path: %s", st)
	}
	if st, _, _ := c.do("o", map[string]any{"p": "/open", "d": 1}); st != "ok" {
		t.Fatalf("allowed path: %s", st)
	}
}

// A token's expiry is told with ac, and the connection goes on as
// unauthenticated: its listens are judged again.
func TestTokenExpiry(t *testing.T) {
	r := newRigWith(t, nil, fakeTokens{expires: testNow.Add(50 * time.Millisecond)})
	if err := r.db.setRules(`{"rules":{".read":"auth != null"}}`); err != nil {
		t.Fatal(err)
	}
	c := r.dial()
	if st, _, _ := c.do("auth", map[string]any{"cred": "uid:ann"}); st != "ok" {
		t.Fatalf("auth: %s", st)
	}
	if st, _, _ := c.do("q", map[string]any{"p": "/x", "h": ""}); st != "ok" {
		t.Fatalf("listen: %s", st)
	}
	a, body := c.push()
	if a != "ac" || body["s"] != "expired_token" {
		t.Fatalf("got %s %v, want ac expired_token", a, body)
	}
	if a, body := c.push(); a != "c" || body["p"] != "/x" {
		t.Fatalf("got %s %v, want the listen revoked", a, body)
	}
}

// A client that stops reading is cut off once its queue passes the
// bound; the server stays well.
func TestSlowClientCutOff(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxOutboundBytes = 64 << 10 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A client that listens and then never reads.
	conn, _, err := websocket.Dial(ctx, r.url("v=5&ns=test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"t":"d","d":{"r":1,"a":"q","b":{"p":"/feed","h":""}}}`)); err != nil {
		t.Fatal(err)
	}
	big := `"` + strings.Repeat("x", 32<<10) + `"`
	for r.srv.Sessions() > 0 {
		if ctx.Err() != nil {
			t.Fatal("the client that does not read was never cut off")
		}
		for i := 0; i < 20; i++ {
			if err := r.db.set("/feed", big); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The server still serves others.
	c := r.dial()
	if st, _, _ := c.do("g", map[string]any{"p": "/feed", "q": map[string]any{}}); st != "ok" {
		t.Fatalf("after the cut: %s", st)
	}
}

func TestLongPoll(t *testing.T) {
	rec := httptest.NewRecorder()
	LongPoll().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.lp?start=t", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusBadRequest || !strings.Contains(string(body), "forceWebSockets()") || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s %q", rec.Code, rec.Header().Get("Content-Type"), body)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, edit := range []func(*Config){
		func(c *Config) { c.MaxMessageBytes = 10 },
		func(c *Config) { c.MaxListens = 0 },
		func(c *Config) { c.MaxOutboundBytes = 0 },
		func(c *Config) { c.WriteTimeout = 0 },
		func(c *Config) { c.Now = nil },
		func(c *Config) { c.AdminSecrets = []string{""} },
	} {
		c := DefaultConfig()
		edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
}

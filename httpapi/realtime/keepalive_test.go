package realtime

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A client that only listens sends nothing while pushes keep coming (the
// SDKs send their keep-alive only after 45 s with no traffic either way:
// the official JS SDK listening to data written every 20 s was cut off at
// the idle timeout, and reconnected). It answers pings, so it stays.
func TestSilentListenerStays(t *testing.T) {
	const idle = time.Second // a loaded machine must answer a ping within it
	r := newRig(t, func(c *Config) { c.IdleTimeout = idle })
	c := r.dial()
	if st, _, _ := c.do("q", map[string]any{"p": "/busy", "h": ""}); st != "ok" {
		t.Fatalf("listen: %s", st)
	}
	// Nothing more is sent by the client for four idle timeouts, while
	// the data changes; every change must arrive.
	end := time.Now().Add(4 * idle)
	for i := 1; time.Now().Before(end); i++ {
		if err := r.db.set("/busy", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if a, b := c.push(); a != "d" || b["d"] != float64(i) {
			t.Fatalf("push %d: %s %v", i, a, b)
		}
		time.Sleep(idle / 10)
	}
	if st, _, _ := c.do("g", map[string]any{"p": "/busy", "q": map[string]any{}}); st != "ok" {
		t.Fatalf("after four idle timeouts the connection answers %q", st)
	}
}

// A client that sends nothing and answers no ping (it reads nothing) is
// taken for gone within the idle timeout, and its onDisconnect runs.
func TestDeadClientEndsAtIdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	r := newRig(t, func(c *Config) { c.IdleTimeout = idle })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, r.url("v=5&ns=test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	msg := `{"t":"d","d":{"r":1,"a":"o","b":{"p":"/gone","d":true}}}`
	if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for r.db.f.ReadLocal(mustPath("/gone")).Value == nil {
		if time.Since(start) > 10*time.Second {
			t.Fatal("a client that answers no ping was never ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(start); took < idle/2 {
		t.Fatalf("ended after %v, before it could have been pinged", took)
	}
	// The connection is closed.
	for {
		if _, _, err := conn.Read(ctx); err != nil {
			break
		}
	}
}

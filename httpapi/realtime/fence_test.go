package realtime

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestCutOffNodeClosesConnectionsHoldingOperations: once the node has
// been out of touch with a leader for FenceAfter, the connections holding
// onDisconnect operations are closed, saying why, and their operations
// run; a connection without any stays open, and none is closed while
// the node is in touch.
func TestCutOffNodeClosesConnectionsHoldingOperations(t *testing.T) {
	var contact atomic.Int64
	contact.Store(time.Now().UnixNano())
	r := newRig(t, func(c *Config) {
		c.FenceAfter = time.Second
		c.LeaderContact = func() time.Time { return time.Unix(0, contact.Load()) }
	})
	holder, plain := r.dial(), r.dial()
	if st, _, _ := holder.do("o", map[string]any{"p": "/presence/ann", "d": "offline"}); st != "ok" {
		t.Fatalf("o: %s", st)
	}
	if st, _, _ := plain.do("q", map[string]any{"p": "/x", "h": ""}); st != "ok" {
		t.Fatalf("q: %s", st)
	}
	// In touch: nothing is closed.
	for range 10 {
		contact.Store(time.Now().UnixNano())
		time.Sleep(50 * time.Millisecond)
	}
	if st, _, _ := holder.do("g", map[string]any{"p": "/x"}); st != "ok" {
		t.Fatalf("the holder's connection, in touch: %s", st)
	}
	if v := r.db.f.ReadLocal(mustPath("/presence")).Value; v != nil {
		t.Fatal("an onDisconnect ran while the node was in touch")
	}
	// Out of touch from the last contact on.
	cut := time.Unix(0, contact.Load())
	code, reason := holder.waitClosed()
	if took := time.Since(cut); code != websocket.StatusGoingAway || !strings.Contains(reason, "lost contact with its cluster") || took < time.Second {
		t.Fatalf("the holder's connection closed %v after the cut with %d %q", took, code, reason)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.db.f.ReadLocal(mustPath("/presence/ann")).Value == nil {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection's onDisconnect operations did not run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, _, _ := plain.do("g", map[string]any{"p": "/x"}); st != "ok" {
		t.Fatalf("the connection without operations, out of touch: %s", st)
	}
}

// TestStalledNodeClosesConnectionsHoldingOperations: a node that stood
// still for FenceAfter (a stopped process) fences its connections holding
// operations before answering anything more on them, however fresh its
// leader's contact.
func TestStalledNodeClosesConnectionsHoldingOperations(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.FenceAfter = time.Hour // the loop never ticks in this test
		c.LeaderContact = time.Now
	})
	holder, plain := r.dial(), r.dial()
	if st, _, _ := holder.do("o", map[string]any{"p": "/presence/ann", "d": "offline"}); st != "ok" {
		t.Fatalf("o: %s", st)
	}
	// The loop last ticked two hours ago, as after a stop.
	r.srv.ticked.Store(int64(time.Since(r.srv.born) - 2*time.Hour))
	holder.request("s", map[string]any{})
	if code, reason := holder.waitClosed(); code != websocket.StatusGoingAway || !strings.Contains(reason, "lost contact with its cluster") {
		t.Fatalf("the holder's connection closed with %d %q", code, reason)
	}
	if st, _, _ := plain.do("s", map[string]any{}); st != "ok" {
		t.Fatalf("the connection without operations: %s", st)
	}
}

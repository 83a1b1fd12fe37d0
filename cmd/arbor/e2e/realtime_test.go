package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// rtConn is a minimal client of the realtime protocol (version 5), from
// the protocol's facts: envelopes {"t","d"}, numbered requests, pushes
// without "r". Messages here are under one frame.
type rtConn struct {
	t    *testing.T
	ws   *websocket.Conn
	next int
	msgs chan map[string]any
	// readErr is why the connection ended, set before msgs is closed.
	readErr error
}

// dialRT connects to n's /.ws as an SDK does and reads its hello.
func dialRT(t *testing.T, n *Node) *rtConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := &http.Client{Transport: n.Client().Transport}
	ws, _, err := websocket.Dial(ctx, "wss://"+n.Addr()+"/.ws?v=5&ns=arbor", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatalf("%s: dial /.ws: %v", n.Name, err)
	}
	c := &rtConn{t: t, ws: ws, next: 1, msgs: make(chan map[string]any, 256)}
	go func() {
		defer close(c.msgs)
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				c.readErr = err
				return
			}
			var m map[string]any
			if json.Unmarshal(b, &m) == nil {
				c.msgs <- m
			}
		}
	}()
	hello := c.read()
	if hello["t"] != "c" || !strings.Contains(fmt.Sprint(hello["d"]), "v:5") {
		t.Fatalf("%s: hello %v", n.Name, hello)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return c
}

func (c *rtConn) read() map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("the connection closed")
		}
		return m
	case <-time.After(20 * time.Second):
		c.t.Fatal("no message within 20 s")
		return nil
	}
}

// do sends a request and returns its answer's status and data, and the
// pushes that came before it.
func (c *rtConn) do(action string, body any) (status string, data any, pushes []map[string]any) {
	c.t.Helper()
	r := c.next
	c.next++
	b, _ := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": r, "a": action, "b": body}})
	if err := c.ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
	for {
		m := c.read()
		d, _ := m["d"].(map[string]any)
		if m["t"] != "d" || d == nil {
			continue
		}
		if d["r"] == nil {
			pushes = append(pushes, d)
			continue
		}
		if int(d["r"].(float64)) != r {
			continue
		}
		ab, _ := d["b"].(map[string]any)
		return fmt.Sprint(ab["s"]), ab["d"], pushes
	}
}

// TestRealtimeThroughEveryNode: the realtime protocol on the leader and on
// a follower answers alike: admin credentials, a listen's data before its
// ok, writes with their pushes before their oks, a get, and an
// onDisconnect that runs when the connection ends.
func TestRealtimeThroughEveryNode(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	follower := c.Others(leader)[0]
	var transcripts []string
	for _, n := range []*Node{leader, follower} {
		rt := dialRT(t, n)
		var got []string
		say := func(format string, a ...any) { got = append(got, fmt.Sprintf(format, a...)) }
		s, d, _ := rt.do("gauth", map[string]any{"cred": AdminSecret})
		say("gauth %s %v", s, d != nil)
		s, _, pushes := rt.do("q", map[string]any{"p": "/rt/" + n.Name, "h": ""})
		say("listen %s %v", s, pushes)
		// A write's own data reaches the listen before its ok, on a
		// follower too (which applies the write after the leader answered
		// it): the SDKs show their server copy on the ok.
		for i := 1; i <= 5; i++ {
			s, _, pushes = rt.do("p", map[string]any{"p": "/rt/" + n.Name + "/v", "d": map[string]any{"n": i}})
			var push map[string]any
			for _, p := range pushes {
				if p["a"] == "d" {
					push = p
				}
			}
			if push == nil {
				t.Fatalf("%s: write %d answered %s before its data was pushed", n.Name, i, s)
			}
			if i == 1 {
				say("set %s", s)
				say("push %v", push["b"])
			}
		}
		s, d, _ = rt.do("g", map[string]any{"p": "/rt/" + n.Name, "q": map[string]any{}})
		say("get %s %v", s, d)
		s, _, _ = rt.do("o", map[string]any{"p": "/presence/" + n.Name, "d": "offline"})
		say("onDisconnect %s", s)
		s, _, _ = rt.do("p", map[string]any{"p": "/presence/" + n.Name, "d": "online"})
		say("online %s", s)
		if r := n.Do(t, "GET", "/presence/"+n.Name+".json", ""); r.Body != `"online"` {
			t.Fatalf("%s: presence while connected: %s", n.Name, r.Body)
		}
		rt.ws.Close(websocket.StatusNormalClosure, "bye")
		poll(t, 20*time.Second, n.Name+"'s onDisconnect to run", func() bool {
			return n.Do(t, "GET", "/presence/"+n.Name+".json", "").Body == `"offline"`
		})
		transcripts = append(transcripts, strings.ReplaceAll(strings.Join(got, "\n"), n.Name, "NODE"))
	}
	if transcripts[0] != transcripts[1] {
		t.Fatalf("leader and follower answered differently:\nleader:\n%s\nfollower:\n%s", transcripts[0], transcripts[1])
	}
	t.Logf("transcript:\n%s", transcripts[0])
	if r := follower.Do(t, "GET", "/.lp?v=5", ""); r.Status != 400 || !strings.Contains(r.Body, "forceWebSockets") {
		t.Fatalf("/.lp: %d %s", r.Status, r.Body)
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
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

// testRealtimeThroughEveryNode (a part of TestFollowerAnswersLikeLeader):
// the same sequence of every client action of the realtime protocol,
// through the leader and then through a follower, each on a location of
// its own, gives the same answers and the same pushes on each listen, in
// order (rtScript); and an onDisconnect runs when the connection ends.
func testRealtimeThroughEveryNode(t *testing.T, c *Cluster) {
	leader := c.WaitStable(t, c.Nodes...)
	follower := c.Others(leader)[0]
	var want rtTranscript
	for i, n := range []*Node{leader, follower} {
		got := runRTScript(t, n, want.pushCount())
		if i == 0 {
			want = got
			continue
		}
		if a, b := want.String(), got.String(); a != b {
			t.Fatalf("the leader and a follower answered differently:\nleader %s:\n%s\nfollower %s:\n%s", leader.Name, a, follower.Name, b)
		}
	}
	t.Logf("transcript through %s and %s:\n%s", leader.Name, follower.Name, want)
	if r := follower.Do(t, "GET", "/.lp?v=5", ""); r.Status != 400 || !strings.Contains(r.Body, "forceWebSockets") {
		t.Fatalf("/.lp: %d %s", r.Status, r.Body)
	}
}

// rtStep is one request of rtScript: an action and its body, in which
// NODE stands for the node's own location.
type rtStep struct {
	action string
	body   string
}

// rtScript is every client action: stats, App Check, a token the node
// cannot verify, reads as anonymous and as admin, sets with priorities, a
// default listen and a tagged query listen, a multi-path update entering
// and leaving the query's window, a transaction's stale hash, server
// values, a get with a query, an unlisten, onDisconnect set, update and
// cancel, an invalid path and unauth.
var rtScript = []rtStep{
	{"s", `{"c":{"sdk.js.10-0-0":1}}`},
	{"appcheck", `{"token":"app-check-token"}`},
	{"auth", `{"cred":"not-a-token"}`},
	{"g", `{"p":"/rt/NODE","q":{}}`},
	{"gauth", `{"cred":"ADMIN"}`},
	{"p", `{"p":"/rt/NODE/a","d":{"x":1,".priority":2}}`},
	{"q", `{"p":"/rt/NODE","h":""}`},
	{"q", `{"p":"/rt/NODE/list","q":{"i":"n","l":2,"vf":"l"},"t":1,"h":""}`},
	{"m", `{"p":"/rt/NODE","d":{"list/a":{"n":3},"list/b":{"n":1},"list/c":{"n":2}}}`},
	{"m", `{"p":"/rt/NODE/list","d":{"a/n":0,"c":null}}`},
	{"p", `{"p":"/rt/NODE/a/x","d":5,"h":"not-the-hash"}`},
	{"p", `{"p":"/rt/NODE/ts","d":{".sv":"timestamp"}}`},
	{"p", `{"p":"/rt/NODE/count","d":{".sv":{"increment":2}}}`},
	{"p", `{"p":"/rt/NODE/count","d":{".sv":{"increment":3}}}`},
	{"g", `{"p":"/rt/NODE/list","q":{"i":"n","l":1,"vf":"r"}}`},
	{"n", `{"p":"/rt/NODE/list","q":{"i":"n","l":2,"vf":"l"},"t":1}`},
	{"p", `{"p":"/rt/NODE/list/d","d":{"n":-1}}`},
	{"o", `{"p":"/rt/NODE/presence","d":"offline"}`},
	{"om", `{"p":"/rt/NODE/status","d":{"state":"gone","at":{".sv":"timestamp"}}}`},
	{"o", `{"p":"/rt/NODE/cancelled","d":"never"}`},
	{"oc", `{"p":"/rt/NODE/cancelled"}`},
	{"p", `{"p":"/rt/NODE/presence","d":"online"}`},
	{"p", `{"p":"/rt/NODE/a.b","d":1}`},
	{"p", `{"p":"/rt/NODE","d":null}`},
	{"unauth", `{}`},
	{"g", `{"p":"/rt/NODE","q":{}}`},
}

// rtTranscript is what one run of rtScript saw: each answer in order, and
// the pushes of each listen (by tag) in order, with the node's name and
// server times replaced.
type rtTranscript struct {
	answers []string
	pushes  map[string][]string
}

func (tr rtTranscript) pushCount() int {
	n := 0
	for _, p := range tr.pushes {
		n += len(p)
	}
	return n
}

func (tr rtTranscript) String() string {
	var b strings.Builder
	for _, a := range tr.answers {
		b.WriteString(a + "\n")
	}
	keys := make([]string, 0, len(tr.pushes))
	for k := range tr.pushes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "pushes of listen %s:\n", k)
		for _, p := range tr.pushes[k] {
			b.WriteString("  " + p + "\n")
		}
	}
	return b.String()
}

// rtTimestamps are 13-digit millisecond times (server values and token
// expiries), which differ between two runs.
var rtTimestamps = regexp.MustCompile(`\b1[0-9]{12}\b`)

// runRTScript runs rtScript on n at /rt/<n's name> and returns what it
// saw, once at least wantPushes pushes arrived (the leader's count: a
// follower may acknowledge a write before it applies it, so its pushes
// may come after the answers), then checks that the onDisconnect set ran
// once the connection ended and the cancelled one did not.
func runRTScript(t *testing.T, n *Node, wantPushes int) rtTranscript {
	rt := dialRT(t, n)
	norm := func(v any) string {
		b, _ := json.Marshal(v)
		return rtTimestamps.ReplaceAllString(strings.ReplaceAll(string(b), n.Name, "NODE"), "<time>")
	}
	tr := rtTranscript{pushes: map[string][]string{}}
	record := func(ps []map[string]any) {
		for _, p := range ps {
			b, _ := p["b"].(map[string]any)
			tag := "default"
			if b != nil && b["t"] != nil {
				tag = fmt.Sprint(b["t"])
			}
			tr.pushes[tag] = append(tr.pushes[tag], norm(p))
		}
	}
	for _, st := range rtScript {
		body := strings.ReplaceAll(strings.ReplaceAll(st.body, "NODE", n.Name), "ADMIN", AdminSecret)
		var v map[string]any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("script step %s %s: %v", st.action, st.body, err)
		}
		status, data, pushes := rt.do(st.action, v)
		record(pushes)
		// How many pushes came before the answer is part of it: a write's
		// own changes reach its listens before its ok, on a follower too
		// (the SDKs show their server copy on the ok).
		tr.answers = append(tr.answers, fmt.Sprintf("%s %s → %s %s after %d pushes", st.action, st.body, status, norm(data), len(pushes)))
	}
	deadline := time.Now().Add(20 * time.Second)
	for tr.pushCount() < wantPushes && time.Now().Before(deadline) {
		select {
		case m, ok := <-rt.msgs:
			if !ok {
				t.Fatalf("%s: the connection closed with %d of %d pushes", n.Name, tr.pushCount(), wantPushes)
			}
			if d, _ := m["d"].(map[string]any); m["t"] == "d" && d != nil && d["r"] == nil {
				record([]map[string]any{d})
			}
		case <-time.After(time.Until(deadline)):
		}
	}
	rt.ws.Close(websocket.StatusNormalClosure, "bye")
	poll(t, 20*time.Second, n.Name+"'s onDisconnect operations to run", func() bool {
		return n.Do(t, "GET", "/rt/"+n.Name+"/presence.json", "").Body == `"offline"` &&
			n.Do(t, "GET", "/rt/"+n.Name+"/status/state.json", "").Body == `"gone"`
	})
	if r := n.Do(t, "GET", "/rt/"+n.Name+"/cancelled.json", ""); r.Body != "null" {
		t.Errorf("%s: the cancelled onDisconnect ran: %s", n.Name, r.Body)
	}
	return tr
}

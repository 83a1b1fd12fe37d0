package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/httpapi/ssetest"
)

// TestStreamQueryLeaderAndFollower: streams with query parameters (SPEC §5)
// on the leader and on a follower of a three-node cluster, through writes
// sent to every node — at, below and above the location, a multi-path
// PATCH, a POST, a DELETE of the location — deliver identical frames, and
// each ends with a copy equal to a GET with the same query.
func TestStreamQueryLeaderAndFollower(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	follower := c.Others(leader)[0]
	deadline := time.Now().Add(2 * time.Minute)
	client := leader.PooledClient(t, 1)
	mustWrite := func(via *Node, method, path, body string) {
		t.Helper()
		r, err := via.doRetrying(client, method, path, body, deadline)
		if err != nil || r.Status != 200 {
			t.Fatalf("%s %s through %s: %v %d %s", method, path, via.Name, err, r.Status, r.Body)
		}
	}
	mustWrite(leader, "PUT", "/sq.json", `{"a":{"score":1,"color":"red"},"b":{"score":5,"color":"blue"},"c":{"score":3,"color":"red"},"d":{"score":4}}`)

	if r := follower.Do(t, "GET", "/sq.json?shallow=true&orderBy="+url.QueryEscape(`"$key"`), "", "Accept", "text/event-stream"); r.Status != 400 {
		t.Fatalf("a refused query on a stream: %d %s", r.Status, r.Body)
	}
	queries := []string{
		`orderBy="score"&limitToLast=3`,
		`orderBy="color"&equalTo="red"`,
		`orderBy="$key"&startAt="b"&limitToFirst=2`,
		`shallow=true`,
	}
	type watch struct {
		path   string
		node   *Node
		frames <-chan streamFrame
		got    []string
	}
	var watches [][2]*watch // per query: on the leader, on the follower
	for _, q := range queries {
		p := queryPath("/sq.json", q)
		pair := [2]*watch{{path: p, node: leader}, {path: p, node: follower}}
		for _, w := range pair {
			w.frames = openEventStream(t, w.node, p)
		}
		watches = append(watches, pair)
	}

	others := c.Others(leader)
	writes := []struct{ method, path, body string }{
		{"PUT", "/sq/e.json", `{"score":9,"color":"red"}`},              // enters both score and red windows
		{"PUT", "/sq/a/score.json", `10`},                               // a value change that reorders
		{"PATCH", "/sq.json", `{"b/color":"red","c":null,"f/score":2}`}, // multi-path
		{"POST", "/sq.json", `{"score":7,"color":"green"}`},
		{"PUT", "/sq/d/color.json", `"red"`},
		{"PATCH", "/.json", `{"sq/e/score":0,"elsewhere":1}`}, // above the location
		{"PUT", "/elsewhere.json", `2`},                       // unrelated
		{"DELETE", "/sq.json", ""},                            // the location itself
		{"PUT", "/sq.json", `{"g":{"score":1,"color":"red"},"h":{"score":2}}`},
		{"PATCH", "/sq.json", `{"final":{"score":1000,"color":"red"}}`}, // last: every window shows it
	}
	for i, w := range writes {
		via := c.Nodes[i%len(c.Nodes)]
		if i%4 == 3 {
			via = others[1]
		}
		mustWrite(via, w.method, w.path, w.body)
	}

	for qi, pair := range watches {
		var want any
		poll(t, 30*time.Second, "a GET with the query", func() bool {
			r, err := leader.TryDo("GET", pair[0].path, "")
			if err != nil || r.Status != 200 {
				return false
			}
			want = normalJSON(t, r.Body)
			return true
		})
		if !strings.Contains(fmt.Sprint(want), "final") {
			t.Fatalf("query %s: the final write is not in the window %v", queries[qi], want)
		}
		for _, w := range pair {
			timeout := time.After(60 * time.Second)
			for !reflect.DeepEqual(streamCopy(t, w.got), want) {
				select {
				case f, ok := <-w.frames:
					if !ok {
						t.Fatalf("the stream %s on %s ended after %q", w.path, w.node.Name, w.got)
					}
					if f.Event != "keep-alive" {
						w.got = append(w.got, f.Event+" "+f.Data)
					}
				case <-timeout:
					t.Fatalf("the stream %s on %s: copy %v after %q, GET %v", w.path, w.node.Name, streamCopy(t, w.got), w.got, want)
				}
			}
		}
		if l, f := pair[0].got, pair[1].got; !reflect.DeepEqual(l, f) {
			t.Fatalf("query %s: the leader %s sent\n%q\nthe follower %s sent\n%q", queries[qi], leader.Name, l, follower.Name, f)
		}
		if len(pair[0].got) < 3 {
			t.Fatalf("query %s: only %q", queries[qi], pair[0].got)
		}
	}
}

// doRetrying is a client's request: a 503 (no leader for a moment) is
// retried with a short back-off until deadline, as SPEC §6 tells clients
// to; any other answer is returned at once.
func (n *Node) doRetrying(c *http.Client, method, path, body string, deadline time.Time) (Response, error) {
	backoff := 20 * time.Millisecond
	for {
		r, err := n.TryDoWith(c, AdminSecret, method, path, body)
		if err != nil || r.Status != http.StatusServiceUnavailable || time.Now().Add(backoff).After(deadline) {
			return r, err
		}
		time.Sleep(backoff) // a client's back-off before the retry, not a wait for a state
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// queryPath is path with the query parameters of raw (name=value pairs
// separated by &, values not yet escaped).
func queryPath(path, raw string) string {
	var parts []string
	for _, kv := range strings.Split(raw, "&") {
		name, value, _ := strings.Cut(kv, "=")
		parts = append(parts, name+"="+url.QueryEscape(value))
	}
	return path + "?" + strings.Join(parts, "&")
}

// streamCopy is what a client holds after frames (ssetest.Copy).
func streamCopy(t *testing.T, frames []string) any {
	t.Helper()
	held, err := ssetest.Copy(frames)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// normalJSON decodes JSON into the tree it stands for (ssetest.Normal).
func normalJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := ssetest.Normal(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

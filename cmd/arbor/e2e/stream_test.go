package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"
	"gopkg.in/cenkalti/backoff.v1"
)

// streamFrame is one parsed server-sent event.
type streamFrame struct {
	Event string
	Data  string
}

// openEventStream opens GET path with Accept: text/event-stream on n and
// returns its frames, parsed strictly (SPEC §5: "event: <name>\ndata:
// <one line>\n\n"); the channel closes when the stream ends.
func openEventStream(t testing.TB, n *Node, path string) <-chan streamFrame {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", n.URL(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+AdminSecret)
	client, err := NewClient(n.trustFile)
	if err != nil {
		t.Fatal(err)
	}
	client.Timeout = 0 // a stream lasts
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("stream on %s: %v", n.Name, err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("stream on %s: %d %s", n.Name, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan streamFrame, 10000)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for {
			ev, err1 := r.ReadString('\n')
			data, err2 := r.ReadString('\n')
			blank, err3 := r.ReadString('\n')
			if err1 != nil || err2 != nil || err3 != nil {
				return
			}
			if blank != "\n" || !strings.HasPrefix(ev, "event: ") || !strings.HasPrefix(data, "data: ") {
				out <- streamFrame{Event: "malformed", Data: ev + data + blank}
				return
			}
			out <- streamFrame{Event: strings.TrimSpace(strings.TrimPrefix(ev, "event: ")), Data: strings.TrimSpace(strings.TrimPrefix(data, "data: "))}
		}
	}()
	return out
}

// TestStreamOnFollowerThroughLeaderKill: a stream served by a follower
// sees every write in commit order — writes through the leader and the
// other follower, and, after the leader is killed, the new leader's —
// with no gap and no duplicate, and its copy equals a read at the end.
func TestStreamOnFollowerThroughLeaderKill(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	others := c.Others(leader)
	watcher, writer := others[0], others[1]
	frames := openEventStream(t, watcher, "/live.json")
	if f := <-frames; f.Event != "put" || f.Data != `{"path":"/","data":null}` {
		t.Fatalf("initial frame %+v", f)
	}
	const before, after = 20, 20
	deadline := time.Now().Add(2 * time.Minute)
	for i := range before + after {
		if i == before {
			leader.Kill(t)
		}
		via := leader
		if i%2 == 1 || i >= before {
			via = writer
		}
		r, err := via.putRetrying(via.PooledClient(t, 1), AdminSecret, fmt.Sprintf("/live/k%02d.json", i), fmt.Sprint(i), deadline)
		if err != nil || r.Status != 200 {
			t.Fatalf("write %d through %s: %v %d %s", i, via.Name, err, r.Status, r.Body)
		}
	}
	// Collect until every key has arrived (a retried write whose first
	// attempt also committed arrives twice, as the log holds it twice).
	seen := map[string]int{}
	last := -1
	timeout := time.After(30 * time.Second)
	for len(seen) < before+after {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("the stream on %s ended after %d keys", watcher.Name, len(seen))
			}
			if f.Event == "keep-alive" {
				continue
			}
			var d struct {
				Path string
				Data int
			}
			if f.Event != "put" || json.Unmarshal([]byte(f.Data), &d) != nil || !strings.HasPrefix(d.Path, "/k") {
				t.Fatalf("unexpected frame %+v", f)
			}
			var k int
			fmt.Sscanf(d.Path, "/k%d", &k)
			switch {
			case seen[d.Path] == 0 && k != len(seen):
				t.Fatalf("frame for %s after k%02d: a gap or out of commit order", d.Path, last)
			case seen[d.Path] > 0 && k != last:
				t.Fatalf("frame for %s again after k%02d: out of commit order", d.Path, last)
			}
			if d.Data != k {
				t.Fatalf("frame %+v", f)
			}
			seen[d.Path]++
			last = k
		case <-timeout:
			t.Fatalf("the stream on %s delivered %d of %d keys in 30 s", watcher.Name, len(seen), before+after)
		}
	}
	r := watcher.Do(t, "GET", "/live.json?shallow=true", "")
	var keys map[string]bool
	if err := json.Unmarshal([]byte(r.Body), &keys); err != nil || len(keys) != before+after {
		t.Fatalf("read after the writes: %s", r.Body)
	}
}

// TestStreamWithThirdPartyClient: an SSE client nobody here wrote
// (github.com/r3labs/sse/v2) reads a stream: the initial put, then a put
// and a patch, exactly as SPEC §5 frames them.
func TestStreamWithThirdPartyClient(t *testing.T) {
	n := StartReadyNode(t, Options{})
	wantResponse(t, "setup", n.Do(t, "PUT", "/tp.json", `{"a":1}`), 200, `{"a":1}`)
	httpClient, err := NewClient(n.trustFile)
	if err != nil {
		t.Fatal(err)
	}
	httpClient.Timeout = 0
	client := sse.NewClient(n.URL("/tp.json"))
	client.Connection = httpClient
	client.Headers["Authorization"] = "Bearer " + AdminSecret
	client.ReconnectStrategy = &backoff.StopBackOff{}
	events := make(chan string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = client.SubscribeRawWithContext(ctx, func(m *sse.Event) {
			events <- string(m.Event) + " " + string(m.Data)
		})
	}()
	next := func() string {
		for {
			select {
			case e := <-events:
				if !strings.HasPrefix(e, "keep-alive") {
					return e
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no event within 10 s")
			}
		}
	}
	if got := next(); got != `put {"path":"/","data":{"a":1}}` {
		t.Fatalf("initial event %q", got)
	}
	n.Do(t, "PUT", "/tp/b.json", `"x"`)
	if got := next(); got != `put {"path":"/b","data":"x"}` {
		t.Fatalf("after a PUT: %q", got)
	}
	n.Do(t, "PATCH", "/tp.json", `{"a":2,"c/d":true}`)
	if got := next(); got != `patch {"path":"/","data":{"a":2,"c/d":true}}` {
		t.Fatalf("after a PATCH: %q", got)
	}
}

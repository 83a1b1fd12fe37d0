//go:build abuse

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Stream probes of TestAbuse: streams must not be a way in. Each attack
// is made through the leader and through a follower; after each, no node
// counts an open stream or a recovered panic, and the cluster is healthy.
// The load probes (many streams at once) are in abuse_streamload_test.go.

// refusedOpens is how many refused stream opens probeRefusedOpens makes
// on each node: half anonymous (401), half with a malformed Last-Event-ID
// (400); leftOpens more are opened and left at once by their client.
const (
	refusedOpens = 10_000
	leftOpens    = 1_000
)

// probeRefusedOpens: 10,000 refused stream opens and 1,000 a client
// leaves at once, on the leader and on a follower. A refused open used to
// leave its subscription behind (a leak per request, each later write
// rendered for nobody): afterwards arbor_stream_open is 0 on every node,
// nothing panicked, the nodes' memory did not grow beyond a small bound,
// and the canary kept its bounds.
func probeRefusedOpens(t *testing.T, c *Cluster) {
	setStreamRules(t, c)
	leader, follower, term := settled(t, c)
	mustStatus(t, "setup", leader.Do(t, "PUT", "/docs/closed.json?print=silent", `{"public":false,"title":"closed"}`), 204)
	mustStatus(t, "setup", leader.Do(t, "PUT", "/streams/leave.json?print=silent", bigObject(2, 1<<20)), 204)
	for _, via := range []*Node{leader, follower} {
		name := "refused stream opens on " + via.Name
		k := canaryWindow(t, c)
		before := rssMB(t, via)
		heapBefore := heapInuseMB(t, via)
		rss := sampleRSS(t, via)
		client := streamClient(t, via, protoH2)
		start := time.Now()
		var mu sync.Mutex
		statuses := map[string]int{}
		count := func(kind string, status int, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && status == 0 {
				statuses[kind+" error"]++
				return
			}
			statuses[fmt.Sprintf("%s %d", kind, status)]++
		}
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for i := range jobs {
					switch {
					case i < refusedOpens/2: // anonymous: Permission denied
						s, status, err := openSSE(context.Background(), client, via, noAuth, "/docs/closed.json")
						if s != nil {
							s.close()
						}
						count("anonymous", status, err)
					case i < refusedOpens: // Last-Event-ID that is no log index
						s, status, err := openSSE(context.Background(), client, via, AdminSecret, "/streams/leave.json", "Last-Event-ID", fmt.Sprintf("x%d", i))
						if s != nil {
							s.close()
						}
						count("malformed Last-Event-ID", status, err)
					default: // the client leaves while its first put is sent
						ctx, cancel := context.WithCancel(context.Background())
						s, status, err := openSSE(ctx, client, via, AdminSecret, "/streams/leave.json")
						cancel()
						if s != nil {
							s.close()
						}
						if err != nil && ctx.Err() != nil {
							status, err = 200, nil // left before the answer: as intended
						}
						count("left", status, err)
					}
				}
			})
		}
		for i := range refusedOpens + leftOpens {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		client.CloseIdleConnections()
		took := time.Since(start)
		streamsClosedEverywhere(t, c)
		_, peak := rss.done()
		after := rssMB(t, via)
		k.finish(t, name)
		t.Logf("%s: %d opens in %s: %v; RSS %d → %d MB (peak %d)", name, refusedOpens+leftOpens, took.Round(time.Millisecond), statuses, before, after, peak)
		want := map[string]int{"anonymous 401": refusedOpens / 2, "malformed Last-Event-ID 400": refusedOpens / 2, "left 200": leftOpens}
		for kind, n := range want {
			if statuses[kind] != n {
				t.Errorf("%s: %d answers %q of %d, all: %v", name, statuses[kind], kind, n, statuses)
			}
		}
		// The opens hold nothing once answered: the node's live heap comes
		// back (the canary's writes keep the collector running), where a
		// leak would keep one subscription per request. RSS lags behind
		// the heap by the allocator's slack, so it is only reported.
		bound := refusedOpensHeapBound + heapBefore
		heapAfter := heapInuseMB(t, via)
		for deadline := time.Now().Add(30 * time.Second); heapAfter-heapBefore > bound && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
			heapAfter = heapInuseMB(t, via)
		}
		t.Logf("%s: heap in use %d → %d MB", name, heapBefore, heapAfter)
		if heapAfter-heapBefore > bound {
			t.Errorf("%s: the heap in use grew %d MB and stayed (bound %d MB)", name, heapAfter-heapBefore, bound)
		}
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
}

// refusedOpensHeapBound is how much a node's heap in use may stay above
// what it was over 11,000 stream opens that each leave nothing behind, in
// MB, plus what it held before: the collector lets the heap grow by as
// much as it holds (GOGC=100) before it runs, so garbage of that size is
// no leak. A subscription left behind per open kept far more (each held
// the frames of every later write to its location, up to 8 MiB), and
// every open one fails the probe anyway (arbor_stream_open).
const refusedOpensHeapBound = 64

// heapInuseMB is n's Go heap in use (go_memstats_heap_inuse_bytes), in MB.
func heapInuseMB(t *testing.T, n *Node) int64 {
	t.Helper()
	return int64(counterValue(t, n, "go_memstats_heap_inuse_bytes")) >> 20
}

// leakSecret is the secret the owner writes while alice may not read it.
const leakSecret = "TOP-SECRET"

// probeResumeLeak: alice, who may read a document only while it is
// public, resumes a stream from before the owner wrote a secret, deleted
// it and made the document public. A replay of the events she missed
// would hand her the secret (she could never read it); she gets a fresh
// put of what she may read now, then live events — through the leader
// and through a follower.
func probeResumeLeak(t *testing.T, c *Cluster) {
	setStreamRules(t, c)
	leader, follower, term := settled(t, c)
	owner, alice := idToken(t, "owner", time.Hour), idToken(t, "alice", time.Hour)
	for _, via := range []*Node{leader, follower} {
		name := "resume across a secret on " + via.Name
		doc := "/docs/leak-" + via.Name
		early := appliedIndex(t, leader) // after the rules: only the permission decides
		for _, w := range [][3]string{
			{"PUT", doc + ".json", `{"title":"draft","secret":"` + leakSecret + `"}`},
			{"DELETE", doc + "/secret.json", ""},
			{"PUT", doc + "/public.json", "true"},
		} {
			mustStatus(t, name+": owner's "+w[0]+" "+w[1], leader.DoAs(t, owner, w[0], w[1], w[2]), 200)
		}
		waitApplied(t, via, appliedIndex(t, leader))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, _, err := openSSE(ctx, streamClient(t, via, protoHTTP1), via, alice, doc+".json", "Last-Event-ID", fmt.Sprint(early))
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", name, err)
		}
		first, err := s.next()
		if err != nil || strings.Contains(first.Data, leakSecret) || first.Event != "put" || first.Data != `{"path":"/","data":{"public":true,"title":"draft"}}` {
			t.Errorf("%s: alice resuming from %d got first %+v (%v), want a fresh put of the public document", name, early, first, err)
		}
		mustStatus(t, name+": owner's title", leader.DoAs(t, owner, "PUT", doc+"/title.json", `"final"`), 200)
		next, err := s.next()
		if err != nil || next.Event != "put" || next.Data != `{"path":"/title","data":"final"}` {
			t.Errorf("%s: the live event after the fresh put: %+v (%v)", name, next, err)
		}
		s.close()
		cancel()
		streamsClosedEverywhere(t, c)
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
}

// pausedBig is the update that fills a paused reader's connection: more
// than the node's socket buffers hold (4 MiB at most on Linux by default),
// less than a stream's queue budget (8 MiB), so the node's write blocks
// and the stream is not cut off as too slow.
const pausedBig = 6_000_000

// probePausedReader: alice reads a public document, then stops reading
// while a large update fills her connection. Meanwhile the owner makes
// the document private, writes a secret and makes it public again, each
// applied in a batch of its own on her node. When she reads again she
// gets the large update, then a cancel (Permission denied), and never the
// secret: frames are judged with the batch that made them, not when the
// reader gets to them.
func probePausedReader(t *testing.T, c *Cluster) {
	setStreamRules(t, c)
	leader, follower, term := settled(t, c)
	owner, alice := idToken(t, "owner", time.Hour), idToken(t, "alice", time.Hour)
	for _, via := range []*Node{leader, follower} {
		name := "paused reader on " + via.Name
		doc := "/docs/paused-" + via.Name
		ownerPut := func(path, body string) {
			t.Helper()
			mustStatus(t, name+": owner's PUT "+path, leader.DoAs(t, owner, "PUT", doc+path+"?print=silent", body), 204)
			waitApplied(t, via, appliedIndex(t, leader)) // a batch of its own on via
		}
		ownerPut(".json", `{"public":true,"title":"public"}`)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		s, _, err := openSSE(ctx, smallWindowClient(t, via, 16<<10), via, alice, doc+".json")
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", name, err)
		}
		if f, err := s.next(); err != nil || f.Event != "put" || f.Data != `{"path":"/","data":{"public":true,"title":"public"}}` {
			t.Fatalf("%s: first frame %+v (%v)", name, f, err)
		}
		// Alice stops reading: the large update fills her connection.
		start := time.Now()
		ownerPut("/big.json", `"`+strings.Repeat("b", pausedBig-2)+`"`)
		ownerPut("/public.json", "false")
		ownerPut("/secret.json", `"`+leakSecret+`"`)
		ownerPut("/public.json", "true")
		paused := time.Since(start)
		// She reads again, to the end of the stream.
		var frames []sseFrame
		for {
			f, err := s.next()
			if err != nil {
				break
			}
			if f.Event != "keep-alive" {
				frames = append(frames, f)
			}
		}
		s.close()
		cancel()
		var got []string
		for _, f := range frames {
			if strings.Contains(f.Data, leakSecret) {
				t.Errorf("%s: alice got the secret written while the document was private: %.200s", name, f.Data)
			}
			got = append(got, fmt.Sprintf("%s %.60s", f.Event, f.Data))
		}
		t.Logf("%s: paused %s; then %d frames: %q", name, paused.Round(time.Millisecond), len(frames), got)
		if len(frames) < 2 || frames[0].Event != "put" || !strings.HasPrefix(frames[0].Data, `{"path":"/big","data":"bbb`) ||
			frames[len(frames)-1].Event != "cancel" || frames[len(frames)-1].Data != `"Permission denied"` || len(frames) != 2 {
			t.Errorf("%s: after reading again alice got %q, want the large update, then cancel \"Permission denied\", then the end", name, got)
		}
		mustStatus(t, name+": cleanup", leader.Do(t, "DELETE", doc+".json?print=silent", ""), 204)
		streamsClosedEverywhere(t, c)
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
}

// probeFutureLastEventID: a Last-Event-ID beyond the node's log (a client
// that spoke to another cluster, or made one up) gets a fresh put of the
// location, then live events, through the leader and a follower.
func probeFutureLastEventID(t *testing.T, c *Cluster) {
	leader, follower, term := settled(t, c)
	mustStatus(t, "setup", leader.Do(t, "PUT", "/streams/future.json", `{"a":1,"b":0}`), 200)
	for i, via := range []*Node{leader, follower} {
		name := "Last-Event-ID beyond the log on " + via.Name
		waitApplied(t, via, appliedIndex(t, leader))
		ahead := appliedIndex(t, via) + 1_000_000
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, _, err := openSSE(ctx, streamClient(t, via, protoHTTP1), via, AdminSecret, "/streams/future.json", "Last-Event-ID", fmt.Sprint(ahead))
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", name, err)
		}
		const want = `{"path":"/","data":{"a":1,"b":0}}`
		if f, err := s.next(); err != nil || f.Event != "put" || f.Data != want || f.ID == 0 || f.ID >= ahead {
			t.Errorf("%s: first frame %+v (%v), want a fresh put %s with the node's index", name, f, err, want)
		}
		mustStatus(t, name+": a write", leader.Do(t, "PUT", "/streams/future/b.json", fmt.Sprint(i+1)), 200)
		if f, err := s.next(); err != nil || f.Event != "put" || f.Data != fmt.Sprintf(`{"path":"/b","data":%d}`, i+1) {
			t.Errorf("%s: the live event %+v (%v)", name, f, err)
		}
		s.close()
		cancel()
		mustStatus(t, "reset", leader.Do(t, "PUT", "/streams/future/b.json", "0"), 200)
		streamsClosedEverywhere(t, c)
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
}

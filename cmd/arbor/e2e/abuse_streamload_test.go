//go:build abuse

package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Stream probes of TestAbuse that load the nodes with many streams at
// once (the others are in abuse_streams_test.go).

// nonReaders is how many streams probeNonReadingStreams opens on a node
// (within the suite's --max-connections 64, beside the canary's), and
// bigStrings the ~1 MiB strings of the node they read: ~47 MB.
const (
	nonReaders = 40
	bigStrings = 47
)

// probeNonReadingStreams: 40 clients open a stream on a ~47 MB node and
// never read it, on the leader and then on a follower. Each first put is
// rendered in pieces as its connection takes them, so the node holds a
// piece per stream, not a copy of the value: its memory grows by at most
// twice the node's JSON size, and the canary keeps its bounds. Updates
// then pass the streams' queue budget (8 MiB), and every one is cut off
// at once.
func probeNonReadingStreams(t *testing.T, c *Cluster) {
	leader, follower, term := settled(t, c)
	// In parts: one write carries at most 16 MiB.
	jsonMB := 0
	for part, at := 0, 0; at < bigStrings; part++ {
		n := min(12, bigStrings-at)
		obj := strings.ReplaceAll(bigObject(n, 1<<20-64), `"s`, fmt.Sprintf(`"p%d-`, part))
		jsonMB += len(obj)
		mustStatus(t, "setup", leader.Do(t, "PATCH", "/streams/big.json?print=silent&writeSizeLimit=unlimited", obj), 204)
		at += n
	}
	jsonMB >>= 20
	update := `"` + strings.Repeat("u", 1<<20) + `"`
	updates := func(name string) {
		for i := range 10 {
			mustStatus(t, fmt.Sprintf("%s: update %d", name, i), leader.Do(t, "PUT", "/streams/big/update.json?print=silent", update), 204)
		}
	}
	for _, via := range []*Node{leader, follower} {
		name := fmt.Sprintf("%d streams not reading a %d MB node on %s", nonReaders, jsonMB, via.Name)
		waitApplied(t, via, appliedIndex(t, leader))
		// The same updates without streams first: what they cost a node
		// by themselves (their garbage counts in RSS until the collector
		// runs, about 14 MB per 1 MiB write on a follower, most of it in
		// the Raft log's store) is not what the streams add.
		ctl := sampleRSS(t, via)
		updates(name + " (without streams)")
		waitApplied(t, via, appliedIndex(t, leader))
		ctlBefore, ctlPeak := ctl.done()
		writesCost := max(0, ctlPeak-ctlBefore)
		k := canaryWindow(t, c)
		rss := sampleRSS(t, via)
		req := "GET /streams/big.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer " + AdminSecret + "\r\n\r\n"
		var conns []io.Closer
		for range nonReaders {
			cn := dialHTTP1(t, via)
			conns = append(conns, cn)
			if _, err := io.WriteString(cn, req); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		closeAll := func() {
			for _, cn := range conns {
				cn.Close()
			}
			conns = nil
		}
		waitStreamsOpen(t, via, nonReaders)
		time.Sleep(3 * time.Second) // the first puts fill the connections (a hold, not a wait for a state)
		held := rssMB(t, via)
		// Updates the streams cannot take: past 8 MiB queued each is cut off.
		start := time.Now()
		updates(name)
		waitStreamsOpen(t, via, 0)
		cutAfter := time.Since(start)
		before, peak := rss.done()
		k.finish(t, name)
		closeAll()
		t.Logf("%s: RSS %d MB before, %d MB holding them, peak %d MB; all cut off %s after the first update; the updates alone grew RSS by %d MB",
			name, before, held, peak, cutAfter.Round(time.Millisecond), writesCost)
		if grew := peak - before - writesCost; grew > 2*jsonMB {
			t.Errorf("%s: the streams grew RSS by %d MB (%d MB, less the %d MB of the updates alone), over twice the node's %d MB",
				name, grew, peak-before, writesCost, jsonMB)
		}
		streamsClosedEverywhere(t, c)
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
	mustStatus(t, "cleanup", leader.Do(t, "DELETE", "/streams/big.json?print=silent&writeSizeLimit=unlimited", ""), 204)
}

// Sizes of probeQueryStreams.
const (
	queryChildren   = 100_000
	queryStreams    = 200 // half on the leader, half on a follower
	queryWriteEvery = 20 * time.Millisecond
	queryWriteFor   = 20 * time.Second
	resumers        = 100 // half on each
	resumeBack      = 4000
	// queryRSSBound is how much a node's memory may grow under either
	// load, in MB: the location is 5 MB of JSON; each evaluation is
	// shared by the streams of its query, and a fresh put is sent in
	// pieces.
	queryRSSBound = 256
)

// queryPathQ is the query the streams watch: ordered by an unindexed
// child, the first ten.
var queryPathQ = "/streams/q.json?orderBy=" + url.QueryEscape(`"n"`) + "&limitToFirst=10"

// probeQueryStreams: 200 streams of one query ordering a 100,000-child
// node by an unindexed child, while a client writes to that node every
// 20 ms for 20 s; then 100 clients resume a stream of that node from
// 4,000 log entries back. The evaluations are shared, take a render slot
// and skip states a stream is behind on; a resume too large to replay
// gets a fresh put. Through it all the canary keeps its bounds (no 503
// for its writes nor the writer's) and the nodes' memory stays bounded.
func probeQueryStreams(t *testing.T, c *Cluster) {
	leader, follower, term := settled(t, c)
	// In parts: one write changes at most 200,000 nodes.
	for from := 0; from < queryChildren; from += 25_000 {
		var b strings.Builder
		b.WriteString("{")
		for i := from; i < min(from+25_000, queryChildren); i++ {
			if i > from {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"c%06d":{"n":%d,"s":"%s"}`, i, (i*7919)%queryChildren, "payload-payload-")
		}
		b.WriteString("}")
		mustStatus(t, "setup", leader.Do(t, "PATCH", "/streams/q.json?print=silent", b.String()), 204)
	}
	setup := appliedIndex(t, leader)
	nodes := []*Node{leader, follower}
	for _, n := range nodes {
		waitApplied(t, n, setup)
	}

	// 200 query streams, each read by its own goroutine.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var frames, ended atomic.Int64
	var readers sync.WaitGroup
	h2 := []*http.Client{streamClient(t, leader, protoH2), streamClient(t, follower, protoH2)}
	for i := range queryStreams {
		via := nodes[i%2]
		s, _, err := openSSE(ctx, h2[i%2], via, AdminSecret, queryPathQ)
		if err != nil {
			t.Fatalf("query stream %d on %s: %v", i, via.Name, err)
		}
		if f, err := s.next(); err != nil || f.Event != "put" {
			t.Fatalf("query stream %d on %s: first frame %+v (%v)", i, via.Name, f, err)
		}
		readers.Go(func() {
			defer s.close()
			for {
				if _, err := s.next(); err != nil {
					if ctx.Err() == nil {
						ended.Add(1)
					}
					return
				}
				frames.Add(1)
			}
		})
	}
	name := fmt.Sprintf("%d query streams on a %d-child node, a write every %s", queryStreams, queryChildren, queryWriteEvery)
	k := canaryWindow(t, c)
	rssL, rssF := sampleRSS(t, leader), sampleRSS(t, follower)
	wrote, refused := queryWriter(t, nodes, queryWriteFor)
	time.Sleep(2 * time.Second) // the streams catch up (a hold, not a wait for a state)
	lb, lp := rssL.done()
	fb, fp := rssF.done()
	k.finish(t, name)
	t.Logf("%s: %d writes (%v refused); %d frames to the streams; %d ended early; RSS %s %d → peak %d MB, %s %d → peak %d MB",
		name, wrote, refused, frames.Load(), ended.Load(), leader.Name, lb, lp, follower.Name, fb, fp)
	if len(refused) > 0 {
		t.Errorf("%s: the writer's writes refused: %v", name, refused)
	}
	if ended.Load() > 0 || frames.Load() < queryStreams {
		t.Errorf("%s: %d streams ended early; %d frames after the first puts", name, ended.Load(), frames.Load())
	}
	checkRSS(t, name, leader, lb, lp)
	checkRSS(t, name, follower, fb, fp)
	cancel()
	readers.Wait()
	streamsClosedEverywhere(t, c)
	noPanics(t, c, name)
	term = healthy(t, c, name, term)
	probeResumes(t, c, nodes, setup, term)
}

// probeResumes: 100 clients at once resume a stream of the query probe's
// node from resumeBack log entries back, half on each node, while the
// canary and a writer write. Half of them resume from before the node's
// 5 MB setup write (a replay over 1 MiB: they get a fresh put), the other
// half from after it, if that is nearer (the small events since are
// replayed).
func probeResumes(t *testing.T, c *Cluster, nodes []*Node, setup, term uint64) {
	name := fmt.Sprintf("%d streams resuming %d entries back", resumers, resumeBack)
	mustStatus(t, name+": the last write before", nodes[0].Do(t, "PUT", "/streams/q/last.json", "1"), 200)
	k := canaryWindow(t, c)
	rssL, rssF := sampleRSS(t, nodes[0]), sampleRSS(t, nodes[1])
	stop := writeMeanwhile(t, nodes[0], "/streams/meanwhile.json")
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	h2 := []*http.Client{streamClient(t, nodes[0], protoH2), streamClient(t, nodes[1], protoH2)}
	start := time.Now()
	for i := range resumers {
		via, client := nodes[i%2], h2[i%2]
		at := appliedIndex(t, via)
		from := at - min(at-1, resumeBack) // a young cluster's log is shorter
		if i%4 >= 2 {
			from = max(from, setup)
		}
		wg.Go(func() {
			outcome := resumeOnce(client, via, from)
			mu.Lock()
			defer mu.Unlock()
			outcomes[outcome]++
		})
	}
	wg.Wait()
	took := time.Since(start)
	wrote := stop()
	lb, lp := rssL.done()
	fb, fp := rssF.done()
	k.finish(t, name)
	t.Logf("%s: caught up in %s: %v; %d writes meanwhile; RSS %s %d → peak %d MB, %s %d → peak %d MB",
		name, took.Round(time.Millisecond), outcomes, wrote, nodes[0].Name, lb, lp, nodes[1].Name, fb, fp)
	if outcomes["replayed"]+outcomes["fresh put"] != resumers {
		t.Errorf("%s: %v, want every stream caught up by a replay or a fresh put", name, outcomes)
	}
	checkRSS(t, name, nodes[0], lb, lp)
	checkRSS(t, name, nodes[1], fb, fp)
	streamsClosedEverywhere(t, c)
	noPanics(t, c, name)
	healthy(t, c, name, term)
	mustStatus(t, "cleanup", nodes[0].Do(t, "DELETE", "/streams/q.json?print=silent", ""), 204)
}

// resumeOnce resumes a stream of /streams/q after index from on n through
// client and reads until it has caught up to the write of
// /streams/q/last: "fresh put" or "replayed", else what went wrong.
func resumeOnce(client *http.Client, n *Node, from uint64) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, _, err := openSSE(ctx, client, n, AdminSecret, "/streams/q.json", "Last-Event-ID", fmt.Sprint(from))
	if err != nil {
		return err.Error()
	}
	defer s.close()
	for i := 0; ; i++ {
		f, err := s.next()
		switch {
		case err != nil:
			return fmt.Sprintf("ended after %d frames: %v", i, err)
		case f.Event == "put" && strings.HasPrefix(f.Data, `{"path":"/","data":{`) && strings.Contains(f.Data, `"last":1`):
			return "fresh put"
		case f.Event == "put" && f.Data == `{"path":"/last","data":1}`:
			return "replayed"
		case f.Event != "put" && f.Event != "patch" && f.Event != "keep-alive":
			return fmt.Sprintf("frame %s %.100s", f.Event, f.Data)
		}
	}
}

// queryWriter writes to the query probe's children every queryWriteEvery
// for d, through each node in turn; every tenth write brings a child into
// the window. It returns how many writes succeeded and the refusals.
func queryWriter(t *testing.T, nodes []*Node, d time.Duration) (wrote int, refused map[string]int) {
	refused = map[string]int{}
	clients := make([]*http.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = n.PooledClient(t, 1)
		defer clients[i].CloseIdleConnections()
	}
	tick := time.NewTicker(queryWriteEvery)
	defer tick.Stop()
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		via, client := nodes[i%len(nodes)], clients[i%len(nodes)]
		v := rand.IntN(queryChildren)
		if i%10 == 0 {
			v = -i
		}
		r, err := via.TryDoWith(client, AdminSecret, "PUT", fmt.Sprintf("/streams/q/c%06d/n.json?print=silent", rand.IntN(queryChildren)), fmt.Sprint(v))
		switch {
		case err != nil:
			refused[err.Error()]++
		case r.Status != 204:
			refused[fmt.Sprintf("%d %s", r.Status, strings.TrimSpace(r.Body))]++
		default:
			wrote++
		}
	}
	return wrote, refused
}

// checkRSS fails the probe if n's memory grew past queryRSSBound.
func checkRSS(t *testing.T, probe string, n *Node, before, peak int) {
	t.Helper()
	if grew := peak - before; grew > queryRSSBound {
		t.Errorf("%s: RSS of %s grew %d MB (bound %d MB)", probe, n.Name, grew, queryRSSBound)
	}
}

//go:build abuse

package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbordb/arbor/cluster"
)

// The abuse suite (make test-abuse, issue 19): hostile but authenticated
// clients against a real three-node cluster, every probe bounded and on
// 127.0.0.1. After each probe the cluster must have all nodes alive, one
// leader, a key written before readable everywhere, and a canary client
// writing to every node that was never stalled past its bound.

// The promise (docs/RELIABILITY.md): while any probe runs, no canary
// write waits more than a second. The p99 is reported, not bounded: a
// one-step apply that holds every node's apply loop for a few hundred
// milliseconds stalls a few canary writes at once.
const canaryWorst = time.Second

// canaryEvery is the pause between two canary writes to one node.
const canaryEvery = 50 * time.Millisecond

// canary writes small values to every node until stopped and records
// each write's latency.
type canary struct {
	mu     sync.Mutex
	lat    []time.Duration
	slow   []slowWrite // writes over slowWriteAt, to tell when a stall was
	fails  []string
	writes []int // per node
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startCanary(t *testing.T, c *Cluster) *canary {
	k := &canary{stop: make(chan struct{}), writes: make([]int, len(c.Nodes))}
	for i, n := range c.Nodes {
		client := n.PooledClient(t, 2)
		k.wg.Go(func() {
			// Its connection would otherwise hold one of the node's 64
			// slots for the idle timeout (2 minutes), into later probes.
			defer client.CloseIdleConnections()
			deadline := time.Now().Add(3 * time.Minute) // bounded whatever happens
			for j := 0; time.Now().Before(deadline); j++ {
				select {
				case <-k.stop:
					return
				case <-time.After(canaryEvery):
				}
				start := time.Now()
				r, err := n.TryDoWith(client, AdminSecret, "PUT", fmt.Sprintf("/canary/%d.json", i), fmt.Sprint(j))
				took := time.Since(start)
				k.mu.Lock()
				k.lat = append(k.lat, took)
				if took > slowWriteAt {
					k.slow = append(k.slow, slowWrite{n.Name, start, took})
				}
				k.writes[i]++
				if err != nil || r.Status != 200 {
					k.fails = append(k.fails, fmt.Sprintf("%s: %v %d %s", n.Name, err, r.Status, strings.TrimSpace(r.Body)))
				}
				k.mu.Unlock()
			}
		})
	}
	return k
}

// slowWrite is one canary write over slowWriteAt: where and when.
type slowWrite struct {
	node  string
	start time.Time
	took  time.Duration
}

// slowWriteAt is the latency from which a canary write is listed when the
// canary fails, to line its stalls up with the nodes' logs.
const slowWriteAt = 250 * time.Millisecond

func (w slowWrite) String() string {
	return fmt.Sprintf("%s %s +%s", w.node, w.start.UTC().Format("15:04:05.000"), w.took.Round(time.Millisecond))
}

// waitStarted waits until the canary has written to every node, so that
// its connections are open before a probe takes the node's free ones.
func (k *canary) waitStarted(t *testing.T) {
	t.Helper()
	poll(t, 30*time.Second, "the canary's first write on every node", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return !slices.Contains(k.writes, 0)
	})
}

// finish stops the canary and fails t if a write was stalled past
// canaryWorst, or refused.
func (k *canary) finish(t *testing.T, probe string) {
	t.Helper()
	close(k.stop)
	k.wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.lat) == 0 {
		t.Fatalf("%s: the canary wrote nothing", probe)
	}
	slices.Sort(k.lat)
	p99 := k.lat[len(k.lat)*99/100]
	worst := k.lat[len(k.lat)-1]
	t.Logf("%s: canary %d writes, p50 %s, p99 %s, worst %s, %d failed", probe, len(k.lat),
		k.lat[len(k.lat)/2].Round(time.Millisecond), p99.Round(time.Millisecond), worst.Round(time.Millisecond), len(k.fails))
	if worst > canaryWorst || len(k.fails) > 0 {
		t.Errorf("%s stalled other clients: p99 %s, worst %s (bound %s), failures %v; writes over %s: %v",
			probe, p99, worst, canaryWorst, k.fails, slowWriteAt, k.slow)
	}
}

// healthy checks the cluster after a probe: one leader all agree on,
// every node ready, the sentinel readable everywhere, and — when term is
// non-zero — no election since.
func healthy(t *testing.T, c *Cluster, probe string, term uint64) uint64 {
	t.Helper()
	leader := c.WaitStable(t, c.Nodes...)
	for _, n := range c.Nodes {
		wantResponse(t, probe+": sentinel on "+n.Name, n.Do(t, "GET", "/sentinel.json", ""), 200, `"still here"`)
	}
	st, ok := leader.Status()
	if !ok {
		t.Fatalf("%s: no /status from the leader", probe)
	}
	if term != 0 && st.Term != term {
		t.Errorf("%s: the term moved %d → %d: an election", probe, term, st.Term)
	}
	return st.Term
}

// settled waits until the nodes agree on a leader and returns it, a
// follower and the term. Each probe counts elections from its own start,
// so that one probe's election does not fail every probe after it.
func settled(t *testing.T, c *Cluster) (leader, follower *Node, term uint64) {
	t.Helper()
	leader = c.WaitStable(t, c.Nodes...)
	st, ok := leader.Status()
	if !ok {
		t.Fatal("no /status from the leader")
	}
	return leader, c.Others(leader)[0], st.Term
}

func TestAbuse(t *testing.T) {
	// Snapshots are checked every second, so that the floods' writes
	// bring snapshots of the large tree while they run.
	// ID tokens signed with ruleSecret (idToken) act as users in the
	// stream probes.
	c := StartCluster(t, 3, "--max-connections", "64", "--snapshot-interval", "1s", "--jwt-hs256-secret", ruleSecret)
	leader := c.WaitStable(t, c.Nodes...)
	f := c.Others(leader)[0]
	wantResponse(t, "sentinel", leader.Do(t, "PUT", "/sentinel.json", `"still here"`), 200, `"still here"`)
	healthy(t, c, "start", 0)

	t.Run("LargeWrites", func(t *testing.T) {
		_, _, term := settled(t, c)
		// The largest writes accepted, through a follower, commit without
		// stalling anyone; larger ones are refused before anything is
		// logged, at no cost to the others. The canary's percentiles are
		// taken over a window around each write (a second before and
		// after it), as a client would see them.
		for _, w := range []struct{ name, path, body string }{
			// 16 MiB (cluster.MaxWriteBytes) of 16 strings of ~1 MiB (a
			// string may hold 10 MiB): the bytes.
			{"16 MiB PUT of strings", "/big16.json", bigObject(16, 1<<20-64)},
			// 16 MiB of records with as many nodes as one write may
			// create (cluster.MaxWriteNodes): the bytes and the nodes.
			// What they hold is over 16 MiB by SPEC's count (numbers
			// count 8 bytes).
			{"16 MiB PUT of records", "/records.json?writeSizeLimit=large", ordinaryJSON(16<<20, cluster.MaxWriteNodes)},
		} {
			k := canaryWindow(t, c)
			start := time.Now()
			r := f.Do(t, "PUT", w.path+sep(w.path)+"print=silent", w.body)
			took := time.Since(start)
			if r.Status != 204 {
				t.Fatalf("%s (%d bytes) through a follower: %d %.300s", w.name, len(w.body), r.Status, r.Body)
			}
			time.Sleep(time.Second) // the window after it, not a wait for a state
			k.finish(t, w.name)
			t.Logf("%s (%.1f MiB) acknowledged through %s in %s", w.name, float64(len(w.body))/(1<<20), f.Name, took.Round(time.Millisecond))
			term = healthy(t, c, w.name, term)
		}
		r := f.Do(t, "GET", "/records.json?shallow=true", "")
		if r.Status != 200 || strings.Count(r.Body, "true") != (cluster.MaxWriteNodes-2)/8 {
			t.Fatalf("the records read back through a follower: %d %.200s", r.Status, r.Body)
		}

		// Refused for their size: 40 MiB with writeSizeLimit=unlimited
		// through the leader, and a 100 MB write through
		// a follower (which used to send the cluster into an election a
		// second) and the leader, each before its body is read; the same
		// records without writeSizeLimit=large (over the default 16 MiB
		// of data), before anything is logged.
		const limit = "Error: WRITE_TOO_BIG: Data to write exceeds the maximum size that can be modified with a single request"
		const way = ". Send it as several PATCHes of a part each, or load a whole database with `arbor restore`."
		for _, w := range []struct {
			name, path, body, want string
			via                    []*Node
		}{
			{"40 MiB PUT (unlimited)", "/big40.json?writeSizeLimit=unlimited", bigObject(40, 1<<20),
				limit + ": this write's body is 40.0 MiB of JSON, and one write carries at most 16.0 MiB" + way, []*Node{leader}},
			{"100 MB PUT (unlimited)", "/big100.json?writeSizeLimit=unlimited", bigObject(10, 10<<20-16),
				limit + ": this write's body is 100.0 MiB of JSON, and one write carries at most 16.0 MiB" + way, []*Node{f, leader}},
			{"16 MiB of records over the write size limit", "/records2.json", ordinaryJSON(16<<20, cluster.MaxWriteNodes), limit + ".", []*Node{f, leader}},
		} {
			k := canaryWindow(t, c)
			for _, n := range w.via {
				wantError(t, w.name+" via "+n.Name, n.Do(t, "PUT", w.path, w.body), 413, w.want)
			}
			time.Sleep(time.Second)
			k.finish(t, w.name)
			term = healthy(t, c, w.name, term)
		}
	})

	t.Run("ManyKeys", func(t *testing.T) {
		_, _, term := settled(t, c)
		// Writes within the size limit
		// that are expensive to apply — a PATCH of a million tiny keys
		// (11.9 MB), a PUT of as many, a 10 MiB string — each stalled every
		// node for seconds. Apply is serial, so every other write waits for
		// whatever is applied before it, on every node at once. One write
		// creates or changes at most cluster.MaxWriteNodes nodes: each
		// shape below is as large as that lets it be (n nodes), and one
		// more node is refused at no cost to the others. ABUSE_MANY_KEYS
		// sets n lower for a quicker run.
		n := manyKeys(t)
		for _, w := range []struct{ name, method, path, body, meanwhile string }{
			{fmt.Sprintf("PATCH of %d tiny keys", n-1), "PATCH", "/many.json", tinyKeys(n-1, "p"), ""},
			// Its data is over the default 16 MiB limit by SPEC's count
			// (key lengths included) at a million keys.
			{fmt.Sprintf("PUT of %d tiny keys", n-2), "PUT", "/many2.json?writeSizeLimit=large", tinyKeys(n-2, "q"), ""},
			{"10 MiB string", "PUT", "/str.json", `"` + strings.Repeat("s", 10<<20-2) + `"`, ""},
			// Deleted after.
			{fmt.Sprintf("POST of %d tiny keys", n/2), "POST", "/posts.json", tinyKeys(n/2, "o"), ""},
			{"DELETE of the POST", "DELETE", "/posts.json?writeSizeLimit=large", "", ""},
			// New objects (two-key paths: two nodes each), and keys merged
			// into the node the first PATCH made. Both are deleted after
			// (what they remove can be over 16 MiB by SPEC's count).
			{fmt.Sprintf("PATCH of %d two-key paths", n/2-1), "PATCH", "/many3.json", tinyPaths(n/2-1, "r"), ""},
			// Meanwhile another client writes to that node, every 20 ms;
			// it does again while the keys are deleted.
			{fmt.Sprintf("PATCH of %d keys into a node of as many", n-1), "PATCH", "/many.json", tinyKeys(n-1, "s"), "/many/meanwhile.json"},
			{fmt.Sprintf("DELETE of %d two-key paths", n/2-1), "DELETE", "/many3.json?writeSizeLimit=large", "", ""},
			{fmt.Sprintf("PATCH deleting %d keys", n-1), "PATCH", "/many.json?writeSizeLimit=large", strings.ReplaceAll(tinyKeys(n-1, "s"), ":1", ":null"), "/many/meanwhile.json"},
			// A client replacing the node a large PATCH writes, every
			// 20 ms: the PATCH applies to whatever is there when its turn
			// comes (a number, which it turns into an object).
			{fmt.Sprintf("PATCH of %d two-key paths into a node replaced meanwhile", n/2-1), "PATCH", "/many4.json", tinyPaths(n/2-1, "w"), "/many4.json"},
			// The same into a node of n/2 keys, first replaced 1.5 s
			// after the PATCH starts ("late:").
			{fmt.Sprintf("PATCH of %d tiny keys", n/2), "PATCH", "/many5.json", tinyKeys(n/2, "x"), ""},
			{fmt.Sprintf("PATCH of %d two-key paths into that node, replaced 1.5 s after it starts", n/2-1), "PATCH", "/many5.json", tinyPaths(n/2-1, "y"), "late:/many5.json"},
			// Server timestamps, resolved on every node as it applies.
			{fmt.Sprintf("PATCH of %d timestamps", n-1), "PATCH", "/ts.json", strings.ReplaceAll(tinyKeys(n-1, "t"), ":1", `:{".sv":"timestamp"}`), ""},
			// Increments of those (under 16 MiB of JSON), with another
			// client writing one of them meanwhile.
			{fmt.Sprintf("PATCH of %d increments", n*9/10), "PATCH", "/ts.json", strings.ReplaceAll(tinyKeys(n*9/10, "t"), ":1", `:{".sv":{"increment":1}}`), "/ts/t000001.json"},
			// An ordinary user's write, judged by the rules when applied
			// (the admin secret acting as user u1; the rules are set
			// first, and only judge such writes).
			{"owner rules", "PUT", "/.settings/rules.json", `{"rules": {"users": {"$uid": {".write": "auth.uid === $uid",
				"n": {".validate": "newData.isNumber()"}}}}}`, ""},
			{fmt.Sprintf("user's PATCH of %d keys", n-2), "PATCH", "/users/u1.json?auth_variable_override=" + url.QueryEscape(`{"uid":"u1"}`), tinyKeys(n-2, "u"),
				"/users/u1/n.json?auth_variable_override=" + url.QueryEscape(`{"uid":"u1"}`)},
		} {
			k := canaryWindow(t, c)
			stop := writeMeanwhile(t, c.Nodes[0], w.meanwhile)
			start := time.Now()
			r := f.Do(t, w.method, w.path+sep(w.path)+"print=silent", w.body)
			took := time.Since(start)
			if wrote := stop(); w.meanwhile != "" {
				t.Logf("%s: %d writes to %s meanwhile", w.name, wrote, w.meanwhile)
			}
			if r.Status != 204 && !(w.method == "POST" && r.Status == 200) { // a POST answers its key
				t.Fatalf("%s (%d bytes) through a follower: %d %.300s", w.name, len(w.body), r.Status, r.Body)
			}
			time.Sleep(time.Second) // the window after it
			k.finish(t, w.name)
			t.Logf("%s (%.1f MB) acknowledged through %s in %s", w.name, float64(len(w.body))/1e6, f.Name, took.Round(time.Millisecond))
			term = healthy(t, c, w.name, term)
		}
		// One node more than a write may create: refused before it is
		// logged, at no cost to the others.
		k := canaryWindow(t, c)
		wantError(t, "a PATCH of one node too many", f.Do(t, "PATCH", "/over.json", tinyKeys(cluster.MaxWriteNodes, "v")), 413,
			fmt.Sprintf("Error: WRITE_TOO_BIG: Data to write exceeds the maximum size that can be modified with a single request: "+
				"this write creates or changes %d nodes (values and the objects that hold them), and one write at most %d. "+
				"Send it as several PATCHes of a part each, or load a whole database with `arbor restore`.", cluster.MaxWriteNodes+1, cluster.MaxWriteNodes))
		time.Sleep(time.Second)
		k.finish(t, "a PATCH of one node too many")
		term = healthy(t, c, "a PATCH of one node too many", term)
		term = probeWriteConflict(t, c, f, n/2-1, term)
		// The keys stay: the floods below snapshot them, a tree of two
		// million keys. PATCHes of as many keys as one write
		// may create make up the rest; these writes are setup, judged only
		// by the cluster's health (no election), not by the canary.
		if 2*n < 2_000_000 {
			start := time.Now()
			per := cluster.MaxWriteNodes - 1
			for i := 0; 2*n+i*per < 2_000_000; i++ {
				path := fmt.Sprintf("/grown%d.json?print=silent", i)
				if r := f.Do(t, "PATCH", path, tinyKeys(per, fmt.Sprintf("g%d", i))); r.Status != 204 {
					t.Fatalf("growing the tree: PATCH %s: %d %.300s", path, r.Status, r.Body)
				}
			}
			t.Logf("tree grown to 2,000,000 tiny keys in %s", time.Since(start).Round(time.Millisecond))
			healthy(t, c, "growing the tree to two million keys", term)
		}
	})

	t.Run("ParallelLargeReads", func(t *testing.T) { probeParallelLargeReads(t, c) })

	t.Run("ExpectContinueOversized", func(t *testing.T) {
		// A declared body over the limit gets its 413, in SPEC §6's JSON,
		// before the body is sent.
		resp := rawHTTP1(t, f, "PUT /x.json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+AdminSecret+
			"\r\nContent-Length: 999999999999\r\nExpect: 100-continue\r\n\r\n")
		if !strings.HasPrefix(resp, "HTTP/1.1 413") || !strings.Contains(resp, `"error" : "Error: WRITE_TOO_BIG`) {
			t.Fatalf("Expect: 100-continue with an oversized Content-Length answered:\n%s", resp)
		}
	})

	t.Run("BadRequests", func(t *testing.T) {
		_, _, term := settled(t, c)
		wantResponse(t, "a big number", f.Do(t, "PUT", "/inc.json", `1.7e308`), 200, `1.7e+308`)
		wantError(t, "increment to infinity", f.Do(t, "PUT", "/inc.json", `{".sv":{"increment":1.7e308}}`), 400,
			"Invalid data; increment overflows the range of a double")
		wantError(t, "conflicting method overrides", f.Do(t, "POST", "/sentinel.json?x-http-method-override=PUT", `"x"`,
			"X-HTTP-Method-Override", "DELETE"), 400,
			"Conflicting method overrides: the X-HTTP-Method-Override header and the x-http-method-override query parameter differ")
		healthy(t, c, "bad requests", term)
	})

	t.Run("ConnectionFlood", func(t *testing.T) {
		_, _, term := settled(t, c)
		// Far more idle TLS connections than --max-connections: the extra
		// ones wait; Raft, gossip and the other nodes carry on, and the
		// flooded node serves again once they go.
		k := startCanary(t, c)
		var conns []*tls.Conn
		defer func() {
			for _, cn := range conns {
				cn.Close()
			}
		}()
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(c.PKI + "/ca.pem")
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			t.Fatalf("CA: %v", err)
		}
		var mu sync.Mutex
		var dials sync.WaitGroup
		for range 300 {
			dials.Go(func() {
				cn, err := tls.DialWithDialer(&netDialer, "tcp", leader.Addr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
				if err != nil {
					return // waiting in the backlog until the dial timed out: refused, as intended
				}
				mu.Lock()
				conns = append(conns, cn)
				mu.Unlock()
			})
		}
		dials.Wait()
		t.Logf("%d of 300 concurrent idle TLS connections completed a handshake with %s within %s (limit 64)", len(conns), leader.Name, netDialer.Timeout)
		if len(conns) > 64 {
			t.Errorf("%d connections accepted at once, over --max-connections 64", len(conns))
		}
		time.Sleep(3 * time.Second) // hold the flood for a while (a probe's duration, not a wait for state)
		for _, n := range c.Others(leader) {
			wantResponse(t, "a write on "+n.Name+" during the flood", n.Do(t, "PUT", "/flood.json", `1`), 200, `1`)
		}
		for _, cn := range conns {
			cn.Close()
		}
		conns = nil
		k.mu.Lock()
		var other []string // the flooded node's own canary may wait; the others must not
		for _, f := range k.fails {
			if !strings.HasPrefix(f, leader.Name+":") {
				other = append(other, f)
			}
		}
		k.fails = other
		k.mu.Unlock()
		close(k.stop)
		k.wg.Wait()
		if len(k.fails) > 0 {
			t.Errorf("the flood on %s failed writes elsewhere: %v", leader.Name, k.fails)
		}
		healthy(t, c, "connection flood", term)
	})

	t.Run("SlowBody", func(t *testing.T) {
		_, _, term := settled(t, c)
		// An authenticated client that trickles its body is cut off (408)
		// instead of holding the connection.
		start := time.Now()
		resp := rawHTTP1Slow(t, f, "PUT /slow.json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+AdminSecret+
			"\r\nContent-Length: 100000\r\n\r\n", 40*time.Second)
		if !strings.HasPrefix(resp, "HTTP/1.1 408") {
			t.Fatalf("a body at a byte a second answered after %s:\n%s", time.Since(start), resp)
		}
		t.Logf("slow body cut off after %s", time.Since(start).Round(time.Millisecond))
		healthy(t, c, "slow body", term)
	})

	// Errors net/http would write itself are JSON (abuse_headers_test.go);
	// real attack tools (abuse_toolprobes_test.go). The large values and two
	// million keys the probes above left stay: the floods' writes bring
	// snapshots of that tree (one per 8,192 writes) on every node, which must
	// not cost an election or stall the canary either.
	t.Run("HeadersTooLarge", func(t *testing.T) { probeHeadersTooLarge(t, c) })
	t.Run("HTTP2HeadsRefused", func(t *testing.T) { probeHTTP2Heads(t, c) })
	t.Run("SlowHeaders", func(t *testing.T) { probeSlowHeaders(t, c) })
	t.Run("SlowBodies", func(t *testing.T) { probeSlowBody(t, c) })
	t.Run("SlowRead", func(t *testing.T) { probeSlowRead(t, c) })
	t.Run("H2Flood", func(t *testing.T) { probeH2Flood(t, c) })
	t.Run("TLSStorm", func(t *testing.T) { probeTLSStorm(t, c) })

	// Streams must not be a way in (abuse_streams_test.go,
	// abuse_streamload_test.go).
	t.Run("StreamRefusedOpens", func(t *testing.T) { probeRefusedOpens(t, c) })
	t.Run("StreamResumeLeak", func(t *testing.T) { probeResumeLeak(t, c) })
	t.Run("StreamPausedReader", func(t *testing.T) { probePausedReader(t, c) })
	t.Run("StreamFutureLastEventID", func(t *testing.T) { probeFutureLastEventID(t, c) })
	t.Run("StreamNonReaders", func(t *testing.T) { probeNonReadingStreams(t, c) })
	t.Run("StreamQueries", func(t *testing.T) { probeQueryStreams(t, c) })

	// Nor the realtime protocol's WebSocket (abuse_realtime_test.go,
	// abuse_realtimeframes_test.go).
	t.Run("RealtimeFlood", func(t *testing.T) { probeRealtimeFlood(t, c) })
	t.Run("RealtimeNonReaders", func(t *testing.T) { probeRealtimeNonReaders(t, c) })
	t.Run("RealtimeFrames", func(t *testing.T) { probeRealtimeFrames(t, c) })
	t.Run("RealtimeManyListens", func(t *testing.T) { probeRealtimeManyListens(t, c) })
}

// rawHTTP1 sends req over a fresh TLS connection speaking HTTP/1.1 and
// returns what the server answers within 10 s.
func rawHTTP1(t *testing.T, n *Node, req string) string {
	t.Helper()
	cn := dialHTTP1(t, n)
	defer cn.Close()
	if _, err := cn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	return readAnswer(cn, 10*time.Second)
}

// rawHTTP1Slow sends the head at once, then a byte a second, until the
// server answers or limit passes.
func rawHTTP1Slow(t *testing.T, n *Node, head string, limit time.Duration) string {
	t.Helper()
	cn := dialHTTP1(t, n)
	defer cn.Close()
	if _, err := cn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- readAnswer(cn, limit) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case resp := <-done:
			return resp
		case <-tick.C:
			if _, err := cn.Write([]byte("x")); err != nil {
				return <-done
			}
		}
	}
}

func dialHTTP1(t *testing.T, n *Node) *tls.Conn { return dialProto(t, n, "http/1.1") }

// dialProto opens a TLS connection to n that offers only proto.
func dialProto(t *testing.T, n *Node, proto string) *tls.Conn {
	t.Helper()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(n.trustFile)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("trust file: %v", err)
	}
	cn, err := tls.DialWithDialer(&netDialer, "tcp", n.Addr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{proto}})
	if err != nil {
		t.Fatal(err)
	}
	return cn
}

// readAnswer reads a response head and a short body.
func readAnswer(cn *tls.Conn, limit time.Duration) string {
	_ = cn.SetReadDeadline(time.Now().Add(limit))
	resp, err := http.ReadResponse(bufio.NewReader(cn), nil)
	if err != nil {
		return "no answer: " + err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %s\n", resp.Status)
	buf := make([]byte, 4096)
	m, _ := resp.Body.Read(buf)
	b.Write(buf[:m])
	return b.String()
}

var netDialer = net.Dialer{Timeout: 2 * time.Second}

// bigObject is a JSON object of n strings of size bytes each.
// manyKeys is the nodes of ManyKeys' writes: ABUSE_MANY_KEYS, or the
// most one write may create or change.
func manyKeys(t *testing.T) int {
	v := os.Getenv("ABUSE_MANY_KEYS")
	if v == "" {
		return cluster.MaxWriteNodes
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 4 || n > cluster.MaxWriteNodes {
		t.Fatalf("ABUSE_MANY_KEYS=%q: want a number of nodes from 4 to %d", v, cluster.MaxWriteNodes)
	}
	return n
}

// tinyKeys returns an object of n keys prefix0000000… with the value 1.
// canaryWindow starts a canary and lets it write for a second before a
// probe (the window its percentiles cover).
func canaryWindow(t *testing.T, c *Cluster) *canary {
	k := startCanary(t, c)
	k.waitStarted(t)
	time.Sleep(time.Second) // the window before the probe, not a wait for a state
	return k
}

// writeMeanwhile PUTs numbers to path through n every 20 ms (at most
// 1,000 writes, and 3 minutes) until the returned stop is called, which
// says how many succeeded; nothing when path is empty. A path starting
// "late:" is first written after 1.5 s.
func writeMeanwhile(t *testing.T, n *Node, path string) (stop func() int) {
	if path == "" {
		return func() int { return 0 }
	}
	first := 20 * time.Millisecond
	if p, ok := strings.CutPrefix(path, "late:"); ok {
		path, first = p, 1500*time.Millisecond // after a large write's first chunks
	}
	client := n.PooledClient(t, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var wrote atomic.Int64
	wg.Go(func() {
		defer client.CloseIdleConnections()
		deadline := time.Now().Add(3 * time.Minute)
		for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
			wait := 20 * time.Millisecond
			if i == 0 {
				wait = first
			}
			select {
			case <-done:
				return
			case <-time.After(wait):
			}
			if r, err := n.TryDoWith(client, AdminSecret, "PUT", path, fmt.Sprint(i)); err == nil && r.Status == 200 {
				wrote.Add(1)
			}
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		return int(wrote.Load())
	}
}

// tinyPaths is tinyKeys with two-key paths: {"<prefix>000000/v":1,…}.
func tinyPaths(n int, prefix string) string {
	return strings.ReplaceAll(tinyKeys(n, prefix), `":1`, `/v":1`)
}

func tinyKeys(n int, prefix string) string {
	var b strings.Builder
	b.Grow(n * 14)
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%s%06d":1`, prefix, i)
	}
	b.WriteString("}")
	return b.String()
}

// ordinaryJSON is an object of records — a name, an e-mail address, a
// number, a flag and a list of two tags: eight nodes each — of at most
// size bytes, which written at a path of one key create or change at
// most nodes nodes (the object and the key's count two), each name
// padded to fill the size.
func ordinaryJSON(size, nodes int) string {
	records := (nodes - 2) / 8
	gen := func(pad string) string {
		var b strings.Builder
		b.Grow(size)
		b.WriteString("{")
		for i := range records {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"user%07d":{"name":"User %d%s","email":"user%d@example.com","age":%d,"active":%t,"tags":["reader","writer"]}`,
				i, i, pad, i, 20+i%60, i%3 == 0)
		}
		b.WriteString("}")
		return b.String()
	}
	return gen(strings.Repeat("x", max(0, (size-len(gen("")))/records)))
}

func bigObject(n, size int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"s%d":"%s"`, i, strings.Repeat("a", size))
	}
	b.WriteString("}")
	return b.String()
}

// probeWriteConflict: a PATCH of paths two keys deep over the children of
// a node of as many, which another client replaces with a number while
// the PATCH is under way. Each is one write, applied in one step in the
// log's order: the node ends as the number (the PATCH first) or as the
// number turned into an object of the PATCH's paths (the PUT first).
func probeWriteConflict(t *testing.T, c *Cluster, f *Node, n int, term uint64) uint64 {
	name := fmt.Sprintf("PATCH of %d two-key paths over as many, their node replaced meanwhile", n)
	if r := f.Do(t, "PATCH", "/many6.json?print=silent", tinyPaths(n, "z")); r.Status != 204 {
		t.Fatalf("%s: setup: %d %.300s", name, r.Status, r.Body)
	}
	k := canaryWindow(t, c)
	replaced := make(chan string, 1)
	other := c.Others(f)[0]
	go func() {
		time.Sleep(200 * time.Millisecond) // while the PATCH's body travels (not a wait for a state)
		r, err := other.TryDo("PUT", "/many6.json", "5")
		replaced <- fmt.Sprint(r.Status, err)
	}()
	body := strings.ReplaceAll(tinyPaths(n, "z"), ":1", ":2")
	start := time.Now()
	r := f.Do(t, "PATCH", "/many6.json?print=silent", body)
	took := time.Since(start)
	if got := <-replaced; got != "200 <nil>" {
		t.Fatalf("%s: the replacing PUT: %s", name, got)
	}
	time.Sleep(time.Second) // the window after it
	k.finish(t, name)
	if r.Status != 204 {
		t.Fatalf("%s: %d %.300s", name, r.Status, r.Body)
	}
	t.Logf("%s (%.1f MB): %d in %s", name, float64(len(body))/1e6, r.Status, took.Round(time.Millisecond))
	got := f.Do(t, "GET", "/many6/z000001.json", "")
	if got.Status != 200 || (got.Body != `{"v":2}` && got.Body != "null") {
		t.Fatalf("%s: a path reads %d %s, want {\"v\":2} (the PUT first) or null (the PATCH first)", name, got.Status, got.Body)
	}
	if got.Body == "null" {
		wantResponse(t, name+": the PUT last", f.Do(t, "GET", "/many6.json", ""), 200, "5")
	}
	if r := f.Do(t, "DELETE", "/many6.json?print=silent&writeSizeLimit=large", ""); r.Status != 204 {
		t.Fatalf("%s: delete: %d", name, r.Status)
	}
	return healthy(t, c, name, term)
}

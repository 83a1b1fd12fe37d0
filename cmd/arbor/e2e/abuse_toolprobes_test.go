//go:build abuse

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The probes of TestAbuse that run third-party tools (abuse_tools_test.go).
// Each runs against one node while the canary writes to every node, and
// is followed by the usual health check. The suite's nodes accept 64
// client connections at a time (--max-connections 64).

// slowLength is how long the slow-header and slow-body runs may last:
// long enough for the connections waiting beyond the connection limit to
// be accepted and cut off in their turn (two rounds of the 10 s header
// or body timeout).
const slowLength = 40 * time.Second

// probeSlowHeaders: slowloris. 100 connections (more than the node
// accepts at once) each send a header line every 2 s and never end their
// head; the node cuts each off 10 s after accepting it (the header
// timeout), so all are closed well before slowhttptest's own end.
func probeSlowHeaders(t *testing.T, c *Cluster) {
	r := slowProbe(t, c, "slowhttptest -H (slow headers)", slowLength, "/sentinel.json",
		"-H", "-c", "100", "-r", "50", "-i", "2")
	if r.exit != "No open connections left" || r.ended >= int(slowLength.Seconds()) {
		t.Errorf("slow headers: %q at second %d: the node kept slow connections open", r.exit, r.ended)
	}
}

// probeSlowBody: R-U-Dead-Yet. 100 authenticated PUTs declare a 100 kB
// body and send a few bytes every 2 s; the node answers 408 and closes
// each 10 s into its body (the body pace limit).
func probeSlowBody(t *testing.T, c *Cluster) {
	r := slowProbe(t, c, "slowhttptest -B (slow body)", slowLength, "/slowbody.json",
		"-B", "-c", "100", "-r", "50", "-i", "2", "-s", "100000", "-t", "PUT")
	if r.exit != "No open connections left" || r.ended >= int(slowLength.Seconds()) {
		t.Errorf("slow body: %q at second %d: the node kept slow connections open", r.exit, r.ended)
	}
}

// probeSlowRead: 50 connections (within the connection limit) ask twice
// for a 512 kB value and read the answer a few bytes a second through a
// 10–20 byte TCP window. There is no write timeout (event streams stay
// open for hours), so they stay open until slowhttptest ends them; the
// node must meanwhile keep accepting new clients and serve everyone else.
func probeSlowRead(t *testing.T, c *Cluster) {
	if r := c.Nodes[0].Do(t, "PUT", "/slowread.json?print=silent", bigObject(8, 64<<10)); r.Status != 204 {
		t.Fatalf("setup: %d %.200s", r.Status, r.Body)
	}
	r := slowProbe(t, c, "slowhttptest -X (slow read)", 20*time.Second, "/slowread.json",
		"-X", "-c", "50", "-r", "50", "-k", "2", "-n", "1", "-w", "10", "-y", "20", "-z", "32")
	if r.unavailable > 0 {
		t.Errorf("slow read: the node refused new connections for %d s with 50 slow readers (limit 64)", r.unavailable)
	}
}

// slowProbe runs slowhttptest for length against path on a follower and
// checks the cluster.
func slowProbe(t *testing.T, c *Cluster, name string, length time.Duration, path string, args ...string) slowResult {
	t.Helper()
	lookTool(t, "slowhttptest", "slowhttptest") // skip before the canary starts
	_, target, term := settled(t, c)
	k := startCanary(t, c)
	k.waitStarted(t)
	rss := sampleRSS(t, target)
	r := runSlowHTTPTest(t, length, authURL(target, path, ""), args...)
	before, peak := rss.done()
	k.finish(t, name)
	t.Logf("%s on %s: %q at second %d of %s; at most %d connections open; slowhttptest's probe found no service for %d s; RSS %d → peak %d MB",
		name, target.Name, r.exit, r.ended, length, r.peakOpen, r.unavailable, before, peak)
	healthy(t, c, name, term)
	return r
}

// probeH2Flood: h2load, 20,000 requests from 100 HTTP/2 clients (more
// than the node accepts at once), over TLS with the admin secret: GETs
// through a follower, 10 streams a client (1,000 at once), then small
// PUTs (a POST with the method override) to the leader, 5 streams a
// client. Every request must succeed, and the canary keep its bounds on
// every node. Writes are served first come, first served: with 1,000
// PUTs at once the canary's waited behind them, p99 0.3–0.5 s on two
// shared cores, at the bound (docs/RELIABILITY.md, What remains).
func probeH2Flood(t *testing.T, c *Cluster) {
	lookTool(t, "h2load", "nghttp2-client")
	leader, follower, term := settled(t, c)
	body := filepath.Join(t.TempDir(), "put.json")
	if err := os.WriteFile(body, []byte(`{"n":1,"s":"small"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := leader.Do(t, "PUT", "/h2load/get.json", `{"n":0,"s":"small"}`); r.Status != 200 {
		t.Fatalf("setup: %d %.200s", r.Status, r.Body)
	}
	for _, p := range []struct {
		name string
		node *Node
		url  string
		args []string
	}{
		{"h2load GET flood", follower, authURL(follower, "/h2load/get.json", ""), []string{"-m", "10"}},
		{"h2load PUT flood", leader, authURL(leader, "/h2load/put.json", "print=silent"),
			[]string{"-m", "5", "-d", body, "-H", "x-http-method-override: PUT"}},
	} {
		k := startCanary(t, c)
		k.waitStarted(t)
		rss := sampleRSS(t, p.node)
		snapBefore := lastSnapshots(c)
		args := append([]string{"-n", "20000", "-c", "100", "-T", "90"}, p.args...)
		r := runH2Load(t, 2*time.Minute, p.url, args...)
		before, peak := rss.done()
		k.finish(t, p.name)
		t.Logf("%s on %s: %d requests in %.2f s, %.0f req/s: %d succeeded, %d failed, %d errored, %d timed out; status codes %s; RSS %d → peak %d MB; last snapshot index per node %v → %v",
			p.name, p.node.Name, r.total, r.seconds, r.reqPerSec, r.succeeded, r.failed, r.errored, r.timedOut, r.statuses, before, peak, snapBefore, lastSnapshots(c))
		if r.total != 20000 || r.succeeded != r.total || !strings.HasPrefix(r.statuses, "20000 2xx") {
			t.Errorf("%s: %d of %d requests succeeded (status codes %s)", p.name, r.succeeded, r.total, r.statuses)
		}
		if p.name == "h2load PUT flood" {
			// Its 20,000 writes must have brought a snapshot of the large
			// tree on every node while the flood and the canary ran.
			for i, after := range lastSnapshots(c) {
				if after <= snapBefore[i] {
					t.Errorf("%s: no snapshot on %s during the flood (last snapshot index %d → %d)", p.name, c.Nodes[i].Name, snapBefore[i], after)
				}
			}
		}
		healthy(t, c, p.name, term)
	}
}

// probeParallelLargeReads: 32 clients read a 30 MB node of a follower at
// once. Large answers are streamed through one small buffer each and
// rendered in at most half the cores, so the node's memory does not grow
// with the readers and every reader is answered. The readers are h2load's
// (one process, one thread, 32 connections): as goroutines of the test
// process they took both cores decrypting and held up the canary's own
// goroutines beside them, which measured the client rather than the node.
func probeParallelLargeReads(t *testing.T, c *Cluster) {
	lookTool(t, "h2load", "nghttp2-client")
	leader, f, term := settled(t, c)
	for _, k := range []string{"a", "b", "c"} {
		if r := leader.Do(t, "PUT", "/large/"+k+".json?print=silent", bigObject(10, 1<<20-64)); r.Status != 204 {
			t.Fatalf("setup: %d", r.Status)
		}
	}
	c.WaitStable(t, c.Nodes...)
	// The canary measures the reads, so it starts once every node has
	// applied the setup's 30 MiB and the collection that follows has
	// passed: on the two million keys the earlier probes leave, that
	// burst of large writes made every node collect for about a second
	// (a CI run saw the canary's first writes wait 0.85-1.2 s on all three
	// nodes at once, before the reads began).
	for idx, n := appliedIndex(t, leader), 0; n < len(c.Nodes); n++ {
		waitApplied(t, c.Nodes[n], idx)
	}
	time.Sleep(2 * time.Second) // a hold for the collection, not a wait for a state
	k := canaryWindow(t, c)
	rss := sampleRSS(t, f)
	r := runH2Load(t, 2*time.Minute, authURL(f, "/large.json", ""), "-n", "32", "-c", "32", "-m", "1", "-T", "90")
	before, peak := rss.done()
	k.finish(t, "32 parallel 30 MB reads")
	t.Logf("32 parallel reads of a 30 MB node on %s: %d succeeded in %.2f s, status codes %s; RSS %d → peak %d MB",
		f.Name, r.succeeded, r.seconds, r.statuses, before, peak)
	if r.total != 32 || r.succeeded != 32 || !strings.HasPrefix(r.statuses, "32 2xx") {
		t.Errorf("32 parallel 30 MB reads: %d of %d succeeded (status codes %s)", r.succeeded, r.total, r.statuses)
	}
	if grew := peak - before; grew > 200 {
		t.Errorf("RSS grew %d MB under 32 parallel reads of a 30 MB node (answers are streamed)", grew)
	}
	healthy(t, c, "parallel large reads", term)
}

// lastSnapshots is each node's last snapshot index (0: none or no answer),
// to show whether a probe's writes brought snapshots.
func lastSnapshots(c *Cluster) []uint64 {
	out := make([]uint64, len(c.Nodes))
	for i, n := range c.Nodes {
		if st, ok := n.Status(); ok && st.LastSnapshot != nil {
			out[i] = st.LastSnapshot.Index
		}
	}
	return out
}

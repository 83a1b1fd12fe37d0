package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"
)

// Load shape of BenchmarkStreams.
const (
	streamBenchRate   = 1000             // timed writes per second
	streamBenchSlow   = 100              // timed writes per second of the slow phase
	streamBenchProbe  = 10 * time.Second // each latency phase
	streamBenchRounds = 3                // write-rate rounds without and with idle streams
	streamBenchSome   = 1000             // idle streams during the write-rate rounds
)

// BenchmarkStreams (make bench; issue 15) measures event streams on a
// follower of a three-node cluster of real processes over mutual TLS,
// once with HTTP/1.1 streams (a TLS connection each, as EventSource over
// HTTP/1) and once with HTTP/2 streams (sharing connections, as browsers
// over HTTP/2 do):
//
//   - event latency: about 1,000 writes/s through all three nodes, each
//     timed from its acknowledgment to its event on a stream on the
//     follower, first with no idle stream, then with N idle streams open
//     on the follower; the follower's CPU time during each; and, for
//     reference, 100 writes/s with no idle stream, and 1,000 writes/s to
//     streams on the leader (which applies before it acknowledges);
//   - the follower's RSS per idle stream (N streams on unrelated paths);
//   - the write rate of 64 clients spread over the nodes for 5 s with no
//     idle stream and with 1,000 on the follower, alternately, 3 rounds
//     each, and the ratio of the two.
//
// ARBOR_BENCH_STREAMS sets N (default 10,000, less when the descriptor
// limit is lower). Each figure is measured once whatever b.N is; run it
// on a normal (not race) build:
//
//	make build
//	E2E_ARBOR_BIN=$PWD/bin/arbor go test -run '^$' -bench Streams -benchtime 1x -timeout 30m ./cmd/arbor/e2e/
func BenchmarkStreams(b *testing.B) {
	if os.Getenv("E2E_ARBOR_BIN") == "" {
		b.Skip("needs a normal build in E2E_ARBOR_BIN (the race detector distorts the figures)")
	}
	idle := idleStreamCount(b)
	for _, proto := range []string{protoHTTP1, protoH2} {
		b.Run(proto, func(b *testing.B) { benchStreams(b, proto, idle) })
	}
}

// idleStreamCount is ARBOR_BENCH_STREAMS, or 10,000 if the descriptor
// limit leaves room for them (each HTTP/1.1 stream is a descriptor in
// this process and in the node) besides 3,000 for everything else.
func idleStreamCount(b *testing.B) int {
	if v, err := strconv.Atoi(os.Getenv("ARBOR_BENCH_STREAMS")); err == nil && v > 0 {
		return v
	}
	n := 10000
	if limit := openFilesLimit(); limit > 0 && limit-3000 < n {
		n = max(streamBenchSome, limit-3000)
		b.Logf("the descriptor limit is %d: %d idle streams (raise it with ulimit -n for 10,000)", limit, n)
	}
	return n
}

func benchStreams(b *testing.B, proto string, idle int) {
	c := StartCluster(b, 3, "--max-connections", strconv.Itoa(idle+1000))
	leader := c.WaitStable(b, c.Nodes...)
	f := c.Others(leader)[0]
	pid := f.current().cmd.Process.Pid
	r := streamBenchResult{proto: proto, idle: idle, follower: f.Name, leader: leader.Name}

	r.slow = runEventProbe(b, c, f, proto, "slow", streamBenchSlow, streamBenchProbe)
	r.onLeader = runEventProbe(b, c, leader, proto, "leader", streamBenchRate, streamBenchProbe)
	r.quiet = runEventProbe(b, c, f, proto, "quiet", streamBenchRate, streamBenchProbe)
	r.rss[0] = rssKB(b, pid)
	start := time.Now()
	streams := openIdleStreams(b, f, proto, "all", idle)
	r.opened = time.Since(start)
	r.rss[1] = rssKB(b, pid)
	r.busy = runEventProbe(b, c, f, proto, "busy", streamBenchRate, streamBenchProbe)
	r.rss[2] = rssKB(b, pid)
	streams.close()
	waitStreamsOpen(b, f, 0)
	r.none, r.some = writeRounds(b, c, f, proto)
	r.report(b)
}

// streamBenchResult is what benchStreams measured.
type streamBenchResult struct {
	proto, follower, leader string
	idle                    int
	opened                  time.Duration // to open the idle streams
	rss                     [3]int        // follower's KB: before the idle streams, with them, after the writes
	// Latency phases: 100 writes/s and 1,000/s with streams on the
	// follower, 1,000/s on the leader, 1,000/s with the idle streams.
	slow, onLeader, quiet, busy probeResult
	none, some                  writeTotals // write rates without and with idle streams
}

// report adds the figures to b and logs them as a table.
func (r streamBenchResult) report(b *testing.B) {
	perStream := float64(r.rss[1]-r.rss[0]) * 1024 / float64(r.idle)
	ratio := 0.0
	if r.none.rate() > 0 {
		ratio = r.some.rate() / r.none.rate()
	}
	b.ReportMetric(perStream, "B/idle-stream")
	b.ReportMetric(ms(pct(r.busy.afterAck, 0.5)), "ms-p50-event")
	b.ReportMetric(ms(pct(r.busy.afterAck, 0.99)), "ms-p99-event")
	b.ReportMetric(100*r.busy.cpu.Seconds()/r.busy.wall.Seconds(), "cpu-%")
	b.ReportMetric(r.none.rate(), "writes/s-0-streams")
	b.ReportMetric(r.some.rate(), "writes/s-1000-streams")
	b.ReportMetric(ratio, "write-ratio")

	t := fmt.Sprintf("%s streams on follower %s of 3 nodes (leader %s), mutual TLS\n", r.proto, r.follower, r.leader)
	t += fmt.Sprintf("%d idle streams opened in %s: RSS %d → %d KB (%.1f KB per stream); %d KB after the writes below\n",
		r.idle, r.opened.Round(time.Millisecond), r.rss[0], r.rss[1], perStream/1024, r.rss[2])
	t += fmt.Sprintf("%-30s %7s %8s %9s %9s %9s %9s %6s %5s\n", "event latency: streams on", "writes", "writes/s", "ack p50", "ack p99", "ack max", "send p99", "early", "CPU")
	for _, p := range []struct {
		name string
		r    probeResult
	}{
		{"follower, 100 writes/s", r.slow},
		{"leader", r.onLeader},
		{"follower", r.quiet},
		{fmt.Sprintf("follower, %d idle streams", r.idle), r.busy},
	} {
		t += fmt.Sprintf("%-30s %7d %8.0f %9s %9s %9s %9s %6d %4.0f%%\n", p.name, p.r.writes, p.r.rate(),
			round(pct(p.r.afterAck, 0.5)), round(pct(p.r.afterAck, 0.99)), round(pct(p.r.afterAck, 1)),
			round(pct(p.r.afterSend, 0.99)), p.r.early, 100*p.r.cpu.Seconds()/p.r.wall.Seconds())
	}
	t += fmt.Sprintf("writes of %d clients over the nodes, %s each, %d rounds: %.0f/s with no idle stream, %.0f/s with %d (%.1f%%)\n",
		clusterBenchClients, clusterBenchPhase, streamBenchRounds, r.none.rate(), r.some.rate(), streamBenchSome, 100*ratio)
	b.Logf("\n%s%s%s", t, r.none.rounds, r.some.rounds)
}

// writeTotals sums the write-rate phases of one kind.
type writeTotals struct {
	ops     int
	elapsed time.Duration
	rounds  string // a line per phase
}

func (w writeTotals) rate() float64 { return float64(w.ops) / w.elapsed.Seconds() }

func (w *writeTotals) add(b *testing.B, p clusterPhase, r int) {
	if p.errs > 0 {
		b.Errorf("%s: %d requests failed, first: %s", p.name, p.errs, p.firstErr)
	}
	w.ops += p.ops
	w.elapsed += p.elapsed
	w.rounds += fmt.Sprintf("  round %d %-20s %8.0f writes/s, p50 %s, p99 %s\n", r+1, p.name, float64(p.ops)/p.elapsed.Seconds(), round(p.p50), round(p.p99))
}

// writeRounds runs the write-rate phases: with no idle stream, then with
// streamBenchSome on f, alternately, so that a drift of the machine's
// speed falls on both.
func writeRounds(b *testing.B, c *Cluster, f *Node, proto string) (none, some writeTotals) {
	hcs := make([]*http.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		hcs[i] = n.PooledClient(b, clusterBenchClients)
	}
	write := func(n *Node, hc *http.Client, i int) error {
		return benchRequest(hc, n, "PUT", fmt.Sprintf("/bench/k%03d.json?print=silent", i%clusterBenchKeys), fmt.Sprintf(`{"v":%d}`, i))
	}
	for r := range streamBenchRounds {
		none.add(b, runClusterPhase("no idle streams", clusterBenchClients, c.Nodes, hcs, write), r)
		s := openIdleStreams(b, f, proto, fmt.Sprintf("round%d", r), streamBenchSome)
		some.add(b, runClusterPhase(fmt.Sprintf("%d idle streams", streamBenchSome), clusterBenchClients, c.Nodes, hcs, write), r)
		s.close()
		waitStreamsOpen(b, f, 0)
	}
	return none, some
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// round is d rounded for a table: to 10 µs.
func round(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

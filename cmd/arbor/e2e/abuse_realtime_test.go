//go:build abuse

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Realtime-protocol probes of TestAbuse: the WebSocket at /.ws must not be
// a way in. Each attack is made through the leader and through a
// follower; after each, no node counts an open realtime connection, a
// listen's subscription or a recovered panic, the canary kept its bound
// and the cluster is healthy with no election. Frame-level attacks and
// many listens are in abuse_realtimeframes_test.go.

// Sizes of probeRealtimeFlood.
const (
	rtFloodUpgrades = 3000 // per node
	rtFloodWorkers  = 32   // within the suite's --max-connections 64, beside the canary's
	// rtFloodRSSBound is how much a node's memory may grow over the flood,
	// in MB: each connection holds a few kilobytes while it lasts.
	rtFloodRSSBound = 128
)

// probeRealtimeFlood: 3,000 WebSocket upgrades as fast as 32 clients can
// make them, on the leader and then on a follower. A quarter close
// properly after the hello, a quarter authenticate and listen and vanish
// before the answer, a quarter vanish after the hello, a quarter vanish
// before reading it. The node keeps its seat, the canary its bound, and
// nothing stays open.
func probeRealtimeFlood(t *testing.T, c *Cluster) {
	leader, follower, term := settled(t, c)
	mustStatus(t, "setup", leader.Do(t, "PUT", "/ws/flood.json?print=silent", `{"a":1}`), 204)
	for _, via := range []*Node{leader, follower} {
		name := fmt.Sprintf("%d WebSocket upgrades on %s", rtFloodUpgrades, via.Name)
		k := canaryWindow(t, c)
		rss := sampleRSS(t, via)
		hc := &http.Client{Transport: via.Client().Transport}
		var next atomic.Int64
		var mu sync.Mutex
		outcomes := map[string]int{}
		deadline := time.Now().Add(3 * time.Minute) // bounded whatever happens
		start := time.Now()
		var wg sync.WaitGroup
		for range rtFloodWorkers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= rtFloodUpgrades || time.Now().After(deadline) {
						return
					}
					outcome := rtFloodOnce(hc, via, i)
					mu.Lock()
					outcomes[outcome]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		realtimeClosedEverywhere(t, c)
		before, peak := rss.done()
		k.finish(t, name)
		t.Logf("%s: %s (%.0f upgrades/s): %v; RSS %d → peak %d MB", name, took.Round(time.Millisecond),
			float64(rtFloodUpgrades)/took.Seconds(), outcomes, before, peak)
		if outcomes["ok"] < rtFloodUpgrades*9/10 {
			t.Errorf("%s: only %d of %d upgrades served: %v", name, outcomes["ok"], rtFloodUpgrades, outcomes)
		}
		if grew := peak - before; grew > rtFloodRSSBound {
			t.Errorf("%s: RSS grew %d MB (bound %d MB)", name, grew, rtFloodRSSBound)
		}
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
}

// rtFloodOnce makes flood connection i and says how it went ("ok").
func rtFloodOnce(hc *http.Client, n *Node, i int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if i%4 == 3 { // vanish before reading the hello
		ws, _, err := websocket.Dial(ctx, "wss://"+n.Addr()+"/.ws?v=5&ns=arbor", &websocket.DialOptions{HTTPClient: hc})
		if err != nil {
			return "dial: " + firstWords(err)
		}
		ws.CloseNow()
		return "ok"
	}
	c, err := rtDialRaw(ctx, hc, n)
	if err != nil {
		return "dial: " + firstWords(err)
	}
	switch i % 4 {
	case 0:
		if err := c.ws.Close(websocket.StatusNormalClosure, "bye"); err != nil {
			return "close: " + firstWords(err)
		}
	case 1: // a listen in flight when the client vanishes
		_ = c.send(ctx, rtRequest(1, "gauth", map[string]any{"cred": AdminSecret}))
		_ = c.send(ctx, rtRequest(2, "q", map[string]any{"p": "/ws/flood", "h": ""}))
		c.ws.CloseNow()
	default:
		c.ws.CloseNow()
	}
	return "ok"
}

// firstWords is an error's text shortened for a tally.
func firstWords(err error) string {
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// Sizes of probeRealtimeNonReaders.
const (
	rtNonReaders = 16
	rtUpdates    = 40 // of rtUpdateBytes each: past the outbound bound
	// rtUpdateBytes is each update's string: 1 MiB.
	rtUpdateBytes = 1 << 20
	// rtOutboundMB is a connection's outbound bound (realtime
	// DefaultConfig's MaxOutboundBytes), in MB.
	rtOutboundMB = 8
)

// probeRealtimeNonReaders: 16 clients listen to a location and stop
// reading, with a small receive buffer, while 40 updates of 1 MiB each are
// written there, on the leader and then on a follower. Each is cut off
// once more than its outbound bound waits for it, as a slow SSE
// subscriber is; the node holds at most that much per client meanwhile,
// and the canary keeps its bound.
func probeRealtimeNonReaders(t *testing.T, c *Cluster) {
	leader, follower, term := settled(t, c)
	mustStatus(t, "setup", leader.Do(t, "PUT", "/ws/nonread.json?print=silent", `{"v":"start"}`), 204)
	update := `"` + strings.Repeat("u", rtUpdateBytes) + `"`
	for _, via := range []*Node{leader, follower} {
		name := fmt.Sprintf("%d realtime clients not reading on %s", rtNonReaders, via.Name)
		waitApplied(t, via, appliedIndex(t, leader))
		k := canaryWindow(t, c)
		rss := sampleRSS(t, via)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		hc := &http.Client{Transport: smallWindowClient(t, via, 16<<10).Transport}
		var clients []*rtRaw
		for i := range rtNonReaders {
			cl, err := rtDialRaw(ctx, hc, via)
			if err != nil {
				cancel()
				t.Fatalf("%s: client %d: %v", name, i, err)
			}
			clients = append(clients, cl)
			if err := cl.rtAdmin(ctx, 1); err != nil {
				t.Fatalf("%s: client %d: %v", name, i, err)
			}
			if err := cl.send(ctx, rtRequest(2, "q", map[string]any{"p": "/ws/nonread", "h": ""})); err != nil {
				t.Fatalf("%s: client %d: %v", name, i, err)
			}
			if st, _, pushes, err := cl.answer(ctx, 2); err != nil || st != "ok" || pushes != 1 {
				t.Fatalf("%s: client %d's listen: %s after %d pushes (%v)", name, i, st, pushes, err)
			}
		}
		// The clients read no more: the updates pile up for them.
		start := time.Now()
		cutAt := time.Duration(0)
		for i := range rtUpdates {
			mustStatus(t, fmt.Sprintf("%s: update %d", name, i), leader.Do(t, "PUT", "/ws/nonread/v.json?print=silent", update), 204)
			if cutAt == 0 && rtGauge(t, via, "arbor_realtime_connections_open") == 0 {
				cutAt = time.Since(start)
			}
		}
		var conns int
		poll(t, time.Minute, name+": every client cut off", func() bool {
			conns = rtGauge(t, via, "arbor_realtime_connections_open")
			return conns == 0
		}, func() string { return fmt.Sprintf("%d still open", conns) })
		if cutAt == 0 {
			cutAt = time.Since(start)
		}
		before, peak := rss.done()
		k.finish(t, name)
		// Reading again, each finds its connection ended.
		ends := map[string]int{}
		for _, cl := range clients {
			rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
			code, reason := cl.closedWith(rctx)
			rcancel()
			cl.ws.CloseNow()
			if code == -1 {
				reason = "no close frame"
			}
			ends[fmt.Sprintf("%d %s", code, firstWords(fmt.Errorf("%s", reason)))]++
		}
		cancel()
		t.Logf("%s: all cut off %s after the first update (%d MiB each written); ends %v; RSS %d → peak %d MB",
			name, cutAt.Round(time.Millisecond), rtUpdates*rtUpdateBytes>>20, ends, before, peak)
		// What waits for the clients is at most their outbound bounds, and
		// the pushes rendered for them until they are cut off as much again
		// (their sockets' buffers take a few MiB first); the collector lets
		// the heap grow to twice what it holds before it runs (far more
		// when the node holds a large tree: the probes before leave two
		// million keys), and the updates' log entries take their share.
		// Without the bound the node would hold all 40 MiB for each client.
		if bound := 2*2*rtNonReaders*rtOutboundMB + 128; peak-before > bound {
			t.Errorf("%s: RSS grew %d MB (bound %d MB: twice the clients' outbound bounds and as much rendered, and 128 MB)", name, peak-before, bound)
		}
		realtimeClosedEverywhere(t, c)
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
	mustStatus(t, "cleanup", leader.Do(t, "DELETE", "/ws/nonread.json?print=silent", ""), 204)
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Load shape of BenchmarkRealtime.
const (
	rtBenchRate    = 1000             // timed writes per second
	rtBenchProbe   = 10 * time.Second // each latency phase
	rtBenchWriters = 16               // locations written, each watched by one listen
	rtBenchOpening = 64               // connections being opened at once
	// rtBenchKeepAlive is how often the idle connections send the SDKs'
	// keep-alive, well within the node's 2-minute idle timeout.
	rtBenchKeepAlive = 30 * time.Second
)

// BenchmarkRealtime (make bench) measures the realtime protocol on one
// node of a normal build over TLS:
//
//   - WebSocket connections accepted per second: N connections opened by
//     64 clients at once, each to its hello;
//   - the node's RSS per idle connection, each with one listen (admin
//     credentials, a location of its own nobody writes);
//   - event latency: about 1,000 writes/s through REST, each timed from
//     its acknowledgment to its push on a listen of another connection,
//     first with no idle connection, then with the N idle ones.
//
// ARBOR_BENCH_WS sets N (default 10,000, less when the descriptor limit
// is lower: each connection is a descriptor here and in the node), and
// ARBOR_BENCH_MEMLIMIT the node's --memory-limit (none by default). Each
// figure is measured once whatever b.N is:
//
//	make build
//	E2E_ARBOR_BIN=$PWD/bin/arbor go test -run '^$' -bench Realtime -benchtime 1x -timeout 30m ./cmd/arbor/e2e/
func BenchmarkRealtime(b *testing.B) {
	if os.Getenv("E2E_ARBOR_BIN") == "" {
		b.Skip("needs a normal build in E2E_ARBOR_BIN (the race detector distorts the figures)")
	}
	idle := 10000
	if v, err := strconv.Atoi(os.Getenv("ARBOR_BENCH_WS")); err == nil && v > 0 {
		idle = v
	} else if limit := openFilesLimit(); limit > 0 && limit-3000 < idle {
		idle = max(100, limit-3000)
		b.Logf("the descriptor limit is %d: %d idle connections (raise it with ulimit -n for 10,000)", limit, idle)
	}
	args := []string{"--max-connections", strconv.Itoa(idle + 1000)}
	if limit := os.Getenv("ARBOR_BENCH_MEMLIMIT"); limit != "" {
		args = append(args, "--memory-limit", limit)
		b.Logf("the node's --memory-limit is %s", limit)
	}
	n := StartReadyNode(b, Options{Name: "ws", Args: args})
	pid := n.current().cmd.Process.Pid

	quiet := rtEventProbe(b, n, "quiet")
	rss0, mem0 := rssKB(b, pid), rtGoMemory(b, n)
	start := time.Now()
	conns := rtOpenIdle(b, n, idle)
	opened := time.Since(start)
	conns.listen(b)
	listened := time.Since(start) - opened
	rss1, mem1 := rssKB(b, pid), rtGoMemory(b, n)
	busy := rtEventProbe(b, n, "busy")
	rss2, mem2 := rssKB(b, pid), rtGoMemory(b, n)
	conns.close()

	perConn := float64(rss1-rss0) * 1024 / float64(idle)
	accepts := float64(idle) / opened.Seconds()
	b.ReportMetric(perConn, "B/idle-conn")
	b.ReportMetric(accepts, "conns/s")
	b.ReportMetric(ms(pct(busy.afterAck, 0.5)), "ms-p50-event")
	b.ReportMetric(ms(pct(busy.afterAck, 0.99)), "ms-p99-event")
	t := fmt.Sprintf("realtime protocol on one node (%s), TLS\n", n.Name)
	t += fmt.Sprintf("%d connections opened in %s (%.0f/s, %d at once), their listens in %s: RSS %d → %d KB (%.1f KB per connection with its listen); %d KB after the writes below\n",
		idle, opened.Round(time.Millisecond), accepts, rtBenchOpening, listened.Round(time.Millisecond), rss0, rss1, perConn/1024, rss2)
	t += fmt.Sprintf("per connection, from the node's Go runtime: heap in use %.1f KB (garbage not yet collected included), goroutine stacks %.1f KB, goroutines %.2f\n",
		float64(mem1.heap-mem0.heap)/1024/float64(idle), float64(mem1.stacks-mem0.stacks)/1024/float64(idle), float64(mem1.goroutines-mem0.goroutines)/float64(idle))
	t += fmt.Sprintf("after the writes below (the collector ran meanwhile, so nearer what is live): heap in use %.1f KB per connection\n",
		float64(mem2.heap-mem0.heap)/1024/float64(idle))
	t += fmt.Sprintf("%-34s %7s %8s %9s %9s %9s %9s %5s\n", "event latency (REST write → push)", "writes", "writes/s", "ack p50", "ack p99", "ack max", "send p99", "CPU")
	for _, p := range []struct {
		name string
		r    probeResult
	}{{"no idle connection", quiet}, {fmt.Sprintf("%d idle connections", idle), busy}} {
		t += fmt.Sprintf("%-34s %7d %8.0f %9s %9s %9s %9s %4.0f%%\n", p.name, p.r.writes, p.r.rate(),
			round(pct(p.r.afterAck, 0.5)), round(pct(p.r.afterAck, 0.99)), round(pct(p.r.afterAck, 1)),
			round(pct(p.r.afterSend, 0.99)), 100*p.r.cpu.Seconds()/p.r.wall.Seconds())
	}
	b.Logf("\n%s", t)
}

// rtIdle is a set of open realtime connections.
type rtIdle struct {
	n     *Node
	conns []*websocket.Conn
	stop  chan struct{}
	wg    sync.WaitGroup
}

// rtDialBench opens /.ws on n through hc and reads the hello.
func rtDialBench(ctx context.Context, hc *http.Client, n *Node) (*websocket.Conn, error) {
	ws, _, err := websocket.Dial(ctx, "wss://"+n.Addr()+"/.ws?v=5&ns=arbor", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	if _, _, err := ws.Read(ctx); err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("hello: %w", err)
	}
	return ws, nil
}

// rtOpenIdle opens count connections to n, rtBenchOpening at once, each
// to its hello, and keeps them alive with the SDKs' keep-alive.
func rtOpenIdle(b *testing.B, n *Node, count int) *rtIdle {
	b.Helper()
	s := &rtIdle{n: n, conns: make([]*websocket.Conn, count), stop: make(chan struct{})}
	hc := &http.Client{Transport: n.Client().Transport}
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	deadline := time.Now().Add(5 * time.Minute)
	for range rtBenchOpening {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= count || time.Now().After(deadline) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				ws, err := rtDialBench(ctx, hc, n)
				cancel()
				if err != nil {
					failed.Store(err)
					return
				}
				s.conns[i] = ws
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil || slices.Contains(s.conns, nil) {
		s.close()
		b.Fatalf("opening %d realtime connections on %s: %v", count, n.Name, err)
	}
	s.wg.Go(func() {
		tick := time.NewTicker(rtBenchKeepAlive)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			for _, ws := range s.conns {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_ = ws.Write(ctx, websocket.MessageText, []byte("0"))
				cancel()
			}
		}
	})
	return s
}

// listen makes each connection an admin and gives it one listen, of a
// location of its own, /idle/ws/<i>, rtBenchOpening connections at once.
func (s *rtIdle) listen(b *testing.B) {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range rtBenchOpening {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(s.conns) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := rtBenchListen(ctx, s.conns[i], fmt.Sprintf("/idle/ws/%d", i))
				cancel()
				if err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatalf("listens on %s: %v", s.n.Name, err)
	}
}

// rtBenchListen authenticates ws as admin (request 1) and listens to path
// (request 2), reading until its ok.
func rtBenchListen(ctx context.Context, ws *websocket.Conn, path string) error {
	for r, req := range []map[string]any{
		{"a": "gauth", "b": map[string]any{"cred": AdminSecret}},
		{"a": "q", "b": map[string]any{"p": path, "h": ""}},
	} {
		req["r"] = r + 1
		m, _ := json.Marshal(map[string]any{"t": "d", "d": req})
		if err := ws.Write(ctx, websocket.MessageText, m); err != nil {
			return err
		}
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return err
			}
			var a struct {
				D struct {
					R int `json:"r"`
					B struct {
						S string `json:"s"`
					} `json:"b"`
				} `json:"d"`
			}
			if json.Unmarshal(data, &a) == nil && a.D.R == r+1 {
				if a.D.B.S != "ok" {
					return fmt.Errorf("%s %s: %s", req["a"], path, a.D.B.S)
				}
				break
			}
		}
	}
	return nil
}

// close ends the connections.
func (s *rtIdle) close() {
	close(s.stop)
	s.wg.Wait()
	for _, ws := range s.conns {
		if ws != nil {
			ws.CloseNow()
		}
	}
}

// rtEventProbe writes about rtBenchRate writes per second through REST
// for rtBenchProbe, spread over rtBenchWriters locations under
// /hot/ws/<tag>, each listened to on a connection of its own, and times
// each write's push. The node's CPU time is taken around the writes.
func rtEventProbe(b *testing.B, n *Node, tag string) probeResult {
	b.Helper()
	perWriter := rtBenchRate * int(rtBenchProbe/time.Second) / rtBenchWriters
	interval := time.Second * rtBenchWriters / time.Duration(rtBenchRate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := &http.Client{Transport: n.Client().Transport}
	locs := make([]*probeLocation, rtBenchWriters)
	var readers sync.WaitGroup
	for w := range locs {
		l := &probeLocation{path: fmt.Sprintf("/hot/ws/%s/%d", tag, w), sent: make([]time.Time, perWriter), acked: make([]time.Time, perWriter), arrived: make([]time.Time, perWriter)}
		locs[w] = l
		lctx, lcancel := context.WithTimeout(ctx, time.Minute)
		ws, err := rtDialBench(lctx, hc, n)
		if err == nil {
			err = rtBenchListen(lctx, ws, l.path)
		}
		lcancel()
		if err != nil {
			b.Fatal(err)
		}
		readers.Go(func() { rtReadPushes(ctx, ws, l) })
	}
	defer readers.Wait()
	defer cancel()
	client := n.PooledClient(b, rtBenchWriters)
	return timeWrites(b, locs, n.current().cmd.Process.Pid, perWriter, interval, "every write's push on "+n.Name,
		func(w int) (*Node, *http.Client, string) { return n, client, locs[w].path + ".json" })
}

// rtReadPushes records when each value's push arrives on ws, until ctx
// ends.
func rtReadPushes(ctx context.Context, ws *websocket.Conn, l *probeLocation) {
	defer ws.CloseNow()
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		now := time.Now()
		var m struct {
			D struct {
				A string `json:"a"`
				B struct {
					D json.RawMessage `json:"d"`
				} `json:"b"`
			} `json:"d"`
		}
		if json.Unmarshal(data, &m) != nil || m.D.A != "d" {
			continue
		}
		if k, err := strconv.Atoi(string(m.D.B.D)); err == nil && k >= 0 && k < len(l.arrived) {
			l.mu.Lock()
			if l.arrived[k].IsZero() {
				l.arrived[k] = now
				l.got++
			}
			l.mu.Unlock()
		}
	}
}

// rtMemory is what a node's Go runtime reports of its memory.
type rtMemory struct{ heap, stacks, goroutines float64 }

// rtGoMemory reads n's heap in use, goroutine stacks and goroutines from
// its /metrics.
func rtGoMemory(b *testing.B, n *Node) rtMemory {
	return rtMemory{
		heap:       counterValue(b, n, "go_memstats_heap_inuse_bytes"),
		stacks:     counterValue(b, n, "go_memstats_stack_inuse_bytes"),
		goroutines: counterValue(b, n, "go_goroutines"),
	}
}

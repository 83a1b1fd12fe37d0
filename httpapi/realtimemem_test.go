package httpapi

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkRealtimeMemory measures what an idle realtime connection with
// one listen costs the server itself, as BenchmarkStreamMemory does for
// streams: N WebSocket connections over real TLS to an in-process
// server, each authenticated (gauth) and listening to a location nobody
// writes, the client end held by a child process. After a GC it reports
// the live heap, the goroutine stacks and the goroutines per connection.
//
//	go test -run '^$' -bench RealtimeMemory -benchtime 1x ./httpapi
//
// ARBOR_BENCH_WS sets N (default 2000). ARBOR_STREAM_MEMPROFILE=dir
// writes heap-ws.pprof there.
func BenchmarkRealtimeMemory(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("ARBOR_BENCH_WS")); err == nil && v > 0 {
		n = v
	}
	if os.Getenv("ARBOR_STREAM_MEMPROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	cfg := testConfig(&syncBuffer{}, prometheus.NewRegistry())
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := New(cfg, newFSMDB())
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.StartTLS()
	defer ts.Close()
	ca := filepath.Join(b.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o644); err != nil {
		b.Fatal(err)
	}
	warm := startMemClient(b, ts.URL, ca, "ws", 1)
	waitSessions(b, s, 1)
	before := sampleMemory()
	child := startMemClient(b, ts.URL, ca, "ws", n)
	waitSessions(b, s, n+1)
	heap, stack, gs := reportMemory(b, before, n, "ws", "conn")
	b.Logf("%d idle realtime connections, one listen each: %.0f B of heap + %.0f B of stacks per connection (%.2f goroutines per connection)",
		n, heap, stack, gs)
	child.stop(b)
	warm.stop(b)
}

// waitSessions polls until the server has n realtime connections.
func waitSessions(b *testing.B, s *Server, n int) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for s.rt.Sessions() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d realtime connections open after 2 minutes", s.rt.Sessions(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heldConns keeps the child's connections reachable while it waits.
var heldConns struct {
	sync.Mutex
	all []*websocket.Conn
}

// openIdleListen is the child's side of one realtime connection: it
// authenticates as admin, listens to /idle/i, and keeps reading (so that
// the server's pings are answered) until ctx ends.
func openIdleListen(ctx context.Context, client *http.Client, url string, i int) error {
	wsURL := strings.Replace(url, "https://", "wss://", 1) + "/.ws?v=5&ns=bench"
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		return fmt.Errorf("connection %d: %w", i, err)
	}
	ask := func(r int, action string, body any) error {
		msg, _ := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": r, "a": action, "b": body}})
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			return err
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return err
			}
			var m struct {
				D struct {
					R int `json:"r"`
					B struct {
						S string `json:"s"`
					} `json:"b"`
				} `json:"d"`
			}
			if json.Unmarshal(data, &m) == nil && m.D.R == r {
				if m.D.B.S != "ok" {
					return fmt.Errorf("%s: status %q", action, m.D.B.S)
				}
				return nil
			}
		}
	}
	if err := ask(1, "gauth", map[string]any{"cred": adminSecret}); err != nil {
		return fmt.Errorf("connection %d: %w", i, err)
	}
	if err := ask(2, "q", map[string]any{"p": fmt.Sprintf("/idle/%d", i), "h": ""}); err != nil {
		return fmt.Errorf("connection %d: %w", i, err)
	}
	heldConns.Lock()
	heldConns.all = append(heldConns.all, c)
	heldConns.Unlock()
	go func() {
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}()
	return nil
}

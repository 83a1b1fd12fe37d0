package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// refusingDB is an fsmDB whose reads of /unavailable fail as during a
// quorum loss, and whose reads of /slow wait for the client to leave.
type refusingDB struct{ *fsmDB }

func (d refusingDB) Read(ctx context.Context, r fsm.Read) (fsm.ReadResult, error) {
	switch {
	case r.Path.HasPrefix(tree.Path{"unavailable"}):
		return fsm.ReadResult{}, fmt.Errorf("read: %w", fsm.ErrNoLeader)
	case r.Path.HasPrefix(tree.Path{"slow"}):
		<-ctx.Done()
		return fsm.ReadResult{}, ctx.Err()
	}
	return d.fsmDB.Read(ctx, r)
}

// TestRefusedStreamOpensLeaveNothing: a stream that fails to open, for
// any reason, leaves no subscription, goroutine or memory behind, and
// nothing panics.
func TestRefusedStreamOpensLeaveNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 refused opens of each kind")
	}
	db := refusingDB{newFSMDB()}
	h := newHarness(t, db, nil)
	db.f.SetEventSink(h.s.PublishEvents)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	kinds := []struct {
		name   string
		path   string
		header map[string]string
		anon   bool
		status int
		leave  bool
	}{
		{name: "401", path: "/secret.json", anon: true, status: 401},
		{name: "503", path: "/unavailable.json", status: 503},
		{name: "client leaves", path: "/slow.json", leave: true},
		{name: "bad Last-Event-ID", path: "/x.json", header: map[string]string{"Last-Event-ID": "nope"}, status: 400},
	}
	open := func(k int) error {
		kind := kinds[k]
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r, _ := http.NewRequestWithContext(ctx, "GET", h.ts.URL+kind.path, nil)
		r.Header.Set("Accept", "text/event-stream")
		if !kind.anon {
			r.Header.Set("Authorization", "Bearer "+adminSecret)
		}
		for k, v := range kind.header {
			r.Header.Set(k, v)
		}
		if kind.leave {
			time.AfterFunc(time.Millisecond, cancel)
		}
		resp, err := client.Do(r)
		if kind.leave {
			if err == nil {
				resp.Body.Close()
				return fmt.Errorf("%s: answered %d", kind.name, resp.StatusCode)
			}
			if !errors.Is(err, context.Canceled) {
				return fmt.Errorf("%s: %w", kind.name, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", kind.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != kind.status {
			return fmt.Errorf("%s: status %d", kind.name, resp.StatusCode)
		}
		return nil
	}
	run := func(n int) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n*len(kinds); i += 8 {
					if err := open(i % len(kinds)); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	settled := func() (goroutines int, heap uint64) {
		client.CloseIdleConnections()
		deadline := time.Now().Add(10 * time.Second)
		for h.s.hub.open() != 0 || metricValue(t, h.s.metrics.streamsOpen) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("streams still open: hub %d, arbor_stream_open %v", h.s.hub.open(), metricValue(t, h.s.metrics.streamsOpen))
			}
			time.Sleep(10 * time.Millisecond)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}
	run(500) // warm up: pools, connections, the race detector's shadow
	g0, heap0 := settled()
	run(10_000)
	deadline := time.Now().Add(10 * time.Second)
	for {
		g1, heap1 := settled()
		if g1 <= g0+5 && heap1 <= heap0+16<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 40,000 refused opens: goroutines %d -> %d, heap %d -> %d MB", g0, g1, heap0>>20, heap1>>20)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Writes fan out to nobody, and nothing panicked.
	h.do(req{method: "PUT", path: "/x.json", body: str(`1`)})
	if n := metricValue(t, h.s.metrics.panics); n != 0 || strings.Contains(h.logs.String(), "panic") {
		t.Fatalf("%v panics recovered; logs:\n%.2000s", n, h.logs.String())
	}
}

// metricValue reads a gauge's or a counter's value.
func metricValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.Counter.GetValue()
}

// TestNonReadingStreamIsCutOff: a client that stops reading is cut off
// once its queue passes its budget, while it still is not reading: its
// stream, connection and queue are freed then, not when it leaves.
func TestNonReadingStreamIsCutOff(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.StreamBufferBytes = 64 << 10 })
	// A small receive window, set before connecting, fills soon.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(h.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /s.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer %s\r\n\r\n", adminSecret)
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, " 200 ") {
		t.Fatalf("status line %q %v", line, err)
	}
	// Now it reads nothing more, while the stream's location changes.
	value := `"` + strings.Repeat("v", 32<<10) + `"`
	// Well within answerGrace, the deadline that would end it otherwise.
	deadline := time.Now().Add(answerGrace / 2)
	for i := 0; metricValue(t, h.s.metrics.streamsOpen) != 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("a client that stopped reading still holds its stream after %d writes", i)
		}

		if i < 2000 {
			h.do(req{method: "PUT", path: fmt.Sprintf("/s/%d.json", i%50), body: str(value)})
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n := metricValue(t, h.s.metrics.streamsDropped); n != 1 {
		t.Fatalf("arbor_stream_cancelled_total %v after one stream was cut off", n)
	}
	if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading what was sent: %v", err)
	}
}

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkStreams (make bench): idle streams on one node — server RSS
// per stream — and event latency from a write's acknowledgment to the
// event's arrival on a stream while writes flow. Point E2E_ARBOR_BIN at a
// normal build for meaningful figures (the default is a race build);
// ARBOR_BENCH_STREAMS sets the idle streams (default 2000).
//
//	E2E_ARBOR_BIN=$PWD/bin/arbor go test -run '^$' -bench Streams -benchtime 1x ./cmd/arbor/e2e/
func BenchmarkStreams(b *testing.B) {
	idle := 2000
	if v, err := strconv.Atoi(os.Getenv("ARBOR_BENCH_STREAMS")); err == nil && v > 0 {
		idle = v
	}
	n := StartReadyNode(b, Options{Name: "streams"})
	pid := n.current().cmd.Process.Pid
	before := rssKB(b, pid)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// HTTP/1.1 connections, one per stream, as browsers' EventSource over
	// HTTP/1 would: the costliest case for the server.
	var opened sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i := range idle {
		opened.Go(func() {
			client, err := NewClient(n.trustFile)
			if err != nil {
				b.Error(err)
				return
			}
			client.Timeout = 0
			tr := client.Transport.(*http.Transport)
			tr.ForceAttemptHTTP2 = false
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
			req, _ := http.NewRequestWithContext(ctx, "GET", n.URL(fmt.Sprintf("/idle/%d.json", i)), nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Authorization", "Bearer "+AdminSecret)
			resp, err := client.Do(req)
			if err != nil || resp.StatusCode != 200 {
				mu.Lock()
				failed++
				mu.Unlock()
				return
			}
			line, _ := bufio.NewReader(resp.Body).ReadString('\n') // the initial put
			if !strings.HasPrefix(line, "event: put") {
				mu.Lock()
				failed++
				mu.Unlock()
			}
			go func() { <-ctx.Done(); resp.Body.Close() }()
		})
	}
	opened.Wait()
	if failed > 0 {
		b.Fatalf("%d of %d streams failed to open", failed, idle)
	}
	after := rssKB(b, pid)
	b.ReportMetric(float64(after-before)*1024/float64(idle), "B/idle-stream")

	// Event latency: 10 watched locations, writes at about 1000/s.
	const watched, writes = 10, 1000
	arrivals := make([]chan time.Time, watched)
	for w := range watched {
		arrivals[w] = make(chan time.Time, writes)
		frames := openEventStream(b, n, fmt.Sprintf("/hot/%d.json", w))
		<-frames // initial put
		go func() {
			for range frames {
				arrivals[w] <- time.Now()
			}
		}()
	}
	client := n.PooledClient(b, 4)
	var lat []time.Duration
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := range writes {
		<-tick.C
		w := i % watched
		r, err := n.TryDoWith(client, AdminSecret, "PUT", fmt.Sprintf("/hot/%d.json", w), fmt.Sprint(i))
		acked := time.Now()
		if err != nil || r.Status != 200 {
			b.Fatalf("write %d: %v %d", i, err, r.Status)
		}
		select {
		case got := <-arrivals[w]:
			lat = append(lat, max(0, got.Sub(acked)))
		case <-time.After(5 * time.Second):
			b.Fatalf("no event for write %d", i)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50-event")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99-event")
	b.Logf("%d idle HTTP/1.1 streams: RSS %d → %d KB (%.1f KB per stream); event latency after the write's ack: p50 %s, p99 %s",
		idle, before, after, float64(after-before)/float64(idle), lat[len(lat)/2], lat[len(lat)*99/100])
}

// rssKB is a process's resident set from /proc.
func rssKB(tb testing.TB, pid int) int {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.Atoi(f[1])
			return v
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}

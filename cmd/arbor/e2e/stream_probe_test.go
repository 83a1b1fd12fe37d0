package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// probeWriters write BenchmarkStreams' timed writes, each to a location of
// its own, through the cluster's nodes in turn.
const probeWriters = 16

// probeResult is one latency phase's outcome.
type probeResult struct {
	writes    int             // acknowledged writes (each one's event arrived)
	wall      time.Duration   // from the first write to the last ack
	afterAck  []time.Duration // sorted: event received after the write's ack (0 if it came first)
	afterSend []time.Duration // sorted: event received after the write was sent
	early     int             // events received before their write's ack
	cpu       time.Duration   // CPU time of the streams' node during the phase
}

// rate is the acknowledged writes per second.
func (p probeResult) rate() float64 { return float64(p.writes) / p.wall.Seconds() }

// pct is the q-th quantile of sorted durations.
func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(int(float64(len(d))*q), len(d)-1)]
}

// probeLocation is one writer's location: its write times and the times
// its events arrived on a stream on the streams' node.
type probeLocation struct {
	path    string
	sent    []time.Time
	acked   []time.Time
	mu      sync.Mutex
	arrived []time.Time // by value written; zero until its event arrives
	got     int
}

// runEventProbe writes about rate writes per second for dur, spread over
// probeWriters locations under /hot/<tag>, each written by one writer
// through c.Nodes[w%3] and watched by a stream on f over proto, and times
// each write's event on f. f's CPU time is taken around the writes.
func runEventProbe(b *testing.B, c *Cluster, f *Node, proto, tag string, rate int, dur time.Duration) probeResult {
	b.Helper()
	perWriter := rate * int(dur/time.Second) / probeWriters
	interval := time.Second * probeWriters / time.Duration(rate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := streamClient(b, f, proto)
	locs := make([]*probeLocation, probeWriters)
	var readers sync.WaitGroup
	for w := range locs {
		l := &probeLocation{path: fmt.Sprintf("/hot/%s/%d.json", tag, w), sent: make([]time.Time, perWriter), acked: make([]time.Time, perWriter), arrived: make([]time.Time, perWriter)}
		locs[w] = l
		body, r, err := openStream(ctx, streams, f, l.path)
		if err != nil {
			b.Fatal(err)
		}
		readers.Go(func() { l.read(body, r) })
	}
	defer readers.Wait()
	defer cancel()
	clients := make([]*http.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		clients[i] = n.PooledClient(b, probeWriters)
	}
	return timeWrites(b, locs, f.current().cmd.Process.Pid, perWriter, interval, "every write's event on "+f.Name,
		func(w int) (*Node, *http.Client, string) {
			return c.Nodes[w%len(c.Nodes)], clients[w%len(c.Nodes)], locs[w].path
		})
}

// timeWrites has one writer per location PUT the numbers 0, 1, … there,
// one every interval, through the node and client through(w) gives
// writer w, at the REST path it gives; waits until every value has
// arrived at its location (what names that wait); and times each write's
// arrival after its acknowledgement and after it was sent. pid's CPU time
// is taken around the writes.
func timeWrites(b *testing.B, locs []*probeLocation, pid, perWriter int, interval time.Duration, what string,
	through func(w int) (n *Node, hc *http.Client, path string)) probeResult {
	b.Helper()
	cpu0 := cpuTime(b, pid)
	start := time.Now()
	var writers sync.WaitGroup
	errs := make([]error, len(locs))
	for w, l := range locs {
		n, hc, path := through(w)
		writers.Go(func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for k := range perWriter {
				<-tick.C
				l.sent[k] = time.Now()
				r, err := n.TryDoWith(hc, AdminSecret, "PUT", path+"?print=silent", strconv.Itoa(k))
				l.acked[k] = time.Now()
				if err == nil && r.Status != 204 {
					err = fmt.Errorf("status %d: %s", r.Status, r.Body)
				}
				if err != nil {
					errs[w] = fmt.Errorf("write %d to %s through %s: %w", k, path, n.Name, err)
					return
				}
			}
		})
	}
	writers.Wait()
	p := probeResult{wall: time.Since(start), cpu: cpuTime(b, pid) - cpu0}
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	poll(b, 30*time.Second, what, func() bool {
		for _, l := range locs {
			if l.count() < perWriter {
				return false
			}
		}
		return true
	}, func() string {
		var got []string
		for _, l := range locs {
			got = append(got, strconv.Itoa(l.count()))
		}
		return fmt.Sprintf("arrived per location: %s of %d", strings.Join(got, ", "), perWriter)
	})
	for _, l := range locs {
		for k := range perWriter {
			p.writes++
			at := l.arrived[k]
			if at.Before(l.acked[k]) {
				p.early++
			}
			p.afterAck = append(p.afterAck, max(0, at.Sub(l.acked[k])))
			p.afterSend = append(p.afterSend, at.Sub(l.sent[k]))
		}
	}
	slices.Sort(p.afterAck)
	slices.Sort(p.afterSend)
	return p
}

// count is how many of the location's events arrived.
func (l *probeLocation) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.got
}

// read records when each value's put arrives, until the stream ends. r
// is positioned at the initial put's data line.
func (l *probeLocation) read(body io.ReadCloser, r *bufio.Reader) {
	defer body.Close()
	event := "put"
	for {
		data, err1 := r.ReadString('\n')
		blank, err2 := r.ReadString('\n')
		if err1 != nil || err2 != nil || blank != "\n" {
			return
		}
		now := time.Now()
		if event == "put" {
			v, ok := strings.CutPrefix(strings.TrimSuffix(data, "}\n"), `data: {"path":"/","data":`)
			if k, err := strconv.Atoi(v); ok && err == nil && k >= 0 && k < len(l.arrived) {
				l.mu.Lock()
				if l.arrived[k].IsZero() {
					l.arrived[k] = now
					l.got++
				}
				l.mu.Unlock()
			}
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		event = strings.TrimSuffix(strings.TrimPrefix(line, "event: "), "\n")
	}
}

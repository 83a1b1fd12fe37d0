package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Helpers of BenchmarkStreams: stream clients for each protocol, sets of
// idle streams, and a process's memory and CPU time from /proc.

// Stream protocols the benchmark compares.
const (
	protoHTTP1 = "http1" // a TLS connection per stream, as EventSource over HTTP/1
	protoH2    = "h2"    // streams share connections (up to the node's 250 each), as browsers over HTTP/2
)

// streamClient is a client for streams on n over proto, with no timeout.
// Over HTTP/2 the transport opens another connection whenever one is
// full.
func streamClient(tb testing.TB, n *Node, proto string) *http.Client {
	tb.Helper()
	c, err := NewClient(n.trustFile)
	if err != nil {
		tb.Fatal(err)
	}
	c.Timeout = 0
	tr := c.Transport.(*http.Transport)
	if proto == protoH2 {
		tr.ForceAttemptHTTP2 = true
	} else {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return c
}

// openStream opens a stream at path on n through client and reads its
// first frame's event line; the body is then positioned at that frame's
// data line.
func openStream(ctx context.Context, client *http.Client, n *Node, path string) (io.ReadCloser, *bufio.Reader, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", n.URL(path), nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+AdminSecret)
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("stream %s on %s: status %d", path, n.Name, resp.StatusCode)
	}
	r := bufio.NewReaderSize(resp.Body, 512)
	line, err := r.ReadString('\n')
	if line != "event: put\n" {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("stream %s on %s: first line %q (%v)", path, n.Name, line, err)
	}
	return resp.Body, r, nil
}

// idleStreams are open streams on locations nobody writes to.
type idleStreams struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	bodies []io.ReadCloser
}

// openIdleStreams opens count streams at /idle/<prefix>/<i> on n over
// proto, at most 64 opening at once, and returns when each has sent its
// initial put (or fails the benchmark after 5 minutes).
func openIdleStreams(tb testing.TB, n *Node, proto, prefix string, count int) *idleStreams {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &idleStreams{cancel: cancel}
	client := streamClient(tb, n, proto)
	deadline := time.Now().Add(5 * time.Minute)
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
		sem   = make(chan struct{}, 64)
	)
	for i := range count {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if time.Now().After(deadline) {
				return
			}
			body, _, err := openStream(ctx, client, n, fmt.Sprintf("/idle/%s/%d.json", prefix, i))
			if err != nil {
				errMu.Lock()
				defer errMu.Unlock()
				if first == nil {
					first = err
				}
				return
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.bodies = append(s.bodies, body)
		})
	}
	wg.Wait()
	if len(s.bodies) < count {
		s.close()
		tb.Fatalf("%d of %d idle %s streams opened on %s in 5 minutes; first error: %v", len(s.bodies), count, proto, n.Name, first)
	}
	return s
}

// close ends the streams.
func (s *idleStreams) close() {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bodies {
		b.Close()
	}
	s.bodies = nil
}

// streamsOpenOn is the node's arbor_stream_open gauge (-1 if unknown).
func streamsOpenOn(n *Node) int {
	r, err := n.TryDo("GET", "/metrics", "")
	if err != nil || r.Status != 200 {
		return -1
	}
	for _, l := range strings.Split(r.Body, "\n") {
		if v, ok := strings.CutPrefix(l, "arbor_stream_open "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return int(f)
			}
		}
	}
	return -1
}

// waitStreamsOpen polls until n reports want open streams.
func waitStreamsOpen(tb testing.TB, n *Node, want int) {
	tb.Helper()
	got := -1
	poll(tb, time.Minute, fmt.Sprintf("%d open streams on %s", want, n.Name), func() bool {
		got = streamsOpenOn(n)
		return got == want
	}, func() string { return fmt.Sprintf("it reports %d", got) })
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuTime is the CPU time (user + system) a process has used, from
// /proc/<pid>/stat.
func cpuTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis (state is field 3).
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		tb.Fatalf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
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

// openFilesLimit is this process's hard limit on open files from
// /proc/self/limits (0 if unknown); Go raises the soft limit to it at
// start, and the nodes inherit it.
func openFilesLimit() int {
	data, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				v, _ := strconv.Atoi(f[1])
				return v
			}
		}
	}
	return 0
}

package httpapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Environment of the child process that holds the client end of
// BenchmarkStreamMemory's streams.
const (
	memClientURL   = "ARBOR_STREAM_MEM_URL"   // the server; set only in the child
	memClientCA    = "ARBOR_STREAM_MEM_CA"    // PEM file of the server's certificate
	memClientProto = "ARBOR_STREAM_MEM_PROTO" // "http1", "h2", or "ws" (realtime connections)
	memClientCount = "ARBOR_STREAM_MEM_N"     // streams to open
)

// BenchmarkStreamMemory measures what an idle stream costs the server
// itself: N streams on unrelated paths over real TLS connections to an
// in-process server, the client end held by a child process (this test
// binary again, TestStreamMemoryClient) so that only the server's memory
// is counted. After a GC it reports the live heap, the goroutine stacks
// and the goroutines per stream, for HTTP/1.1 (a connection per stream,
// as EventSource over HTTP/1) and HTTP/2 (streams share connections, up
// to 250 each, as browsers over HTTP/2 do).
//
//	go test -run '^$' -bench StreamMemory -benchtime 1x ./httpapi
//
// ARBOR_BENCH_STREAMS sets N (default 2000). ARBOR_STREAM_MEMPROFILE=dir
// writes heap-<proto>.pprof there, every allocation sampled, for
// `go tool pprof -sample_index inuse_space`.
func BenchmarkStreamMemory(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("ARBOR_BENCH_STREAMS")); err == nil && v > 0 {
		n = v
	}
	if os.Getenv("ARBOR_STREAM_MEMPROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	for _, proto := range []string{"http1", "h2"} {
		b.Run(proto, func(b *testing.B) { benchStreamMemory(b, proto, n) })
	}
}

// memSample is the server's memory at one moment, after a GC.
type memSample struct {
	heap, stack uint64
	goroutines  int
}

// sampleMemory collects garbage twice (the second also shrinks the stacks
// the first found mostly unused; more change nothing) and reads the
// memory statistics.
func sampleMemory() memSample {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSample{heap: m.HeapAlloc, stack: m.StackInuse, goroutines: runtime.NumGoroutine()}
}

func benchStreamMemory(b *testing.B, proto string, n int) {
	s, err := New(testConfig(&syncBuffer{}, prometheus.NewRegistry()), newFSMDB())
	if err != nil {
		b.Fatal(err)
	}
	var conns atomic.Int64 // opened (a detached stream's is never reported closed)
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.EnableHTTP2 = true
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	ts.StartTLS()
	defer ts.Close()
	ca := filepath.Join(b.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o644); err != nil {
		b.Fatal(err)
	}
	// One stream first, so that one-time costs (the first connection's
	// handshake state, lazily built tables) fall before the baseline.
	warm := startMemClient(b, ts.URL, ca, proto, 1)
	waitStreams(b, s, 1)
	before := sampleMemory()

	child := startMemClient(b, ts.URL, ca, proto, n)
	waitStreams(b, s, n+1)
	heap, stack, gs := reportMemory(b, before, n, proto, "stream")
	b.Logf("%s, %d idle streams on %d connections: %.0f B of heap + %.0f B of stacks per stream (%.2f goroutines per stream, %.0f B of stack each)",
		proto, n, conns.Load()-1, heap, stack, gs, stack/max(gs, 1e-9))
	child.stop(b)
	warm.stop(b)
}

// reportMemory samples the memory after n more of unit (the heap profile
// named after name too, when asked for), reports what each costs, and
// returns it.
func reportMemory(b *testing.B, before memSample, n int, name, unit string) (heap, stack, goroutines float64) {
	after := sampleMemory()
	if dir := os.Getenv("ARBOR_STREAM_MEMPROFILE"); dir != "" {
		writeHeapProfile(b, filepath.Join(dir, "heap-"+name+".pprof"))
	}
	heap = float64(after.heap-before.heap) / float64(n)
	stack = float64(after.stack-before.stack) / float64(n)
	goroutines = float64(after.goroutines-before.goroutines) / float64(n)
	b.ReportMetric(heap, "heap-B/"+unit)
	b.ReportMetric(stack, "stack-B/"+unit)
	b.ReportMetric(goroutines, "goroutines/"+unit)
	return heap, stack, goroutines
}

// waitStreams polls until the server has n open streams.
func waitStreams(b *testing.B, s *Server, n int) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for s.hub.open() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d streams open after 2 minutes", s.hub.open(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writeHeapProfile writes the in-use heap profile to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
	b.Logf("heap profile in %s", path)
}

// memClient is a child process holding streams open.
type memClient struct {
	cmd   *exec.Cmd
	stdin io.Closer
	done  chan error
}

// startMemClient starts a child that opens n streams and waits until it
// says they are all open (their initial put read).
func startMemClient(b *testing.B, url, ca, proto string, n int) *memClient {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamMemoryClient$", "-test.v")
	cmd.Env = append(os.Environ(), memClientURL+"="+url, memClientCA+"="+ca, memClientProto+"="+proto, memClientCount+"="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &memClient{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var out []string
		for sc.Scan() {
			if sc.Text() == "streams open" {
				ready <- ""
			}
			out = append(out, sc.Text())
		}
		ready <- strings.Join(out, "\n")
		c.done <- cmd.Wait()
	}()
	select {
	case out := <-ready:
		if out != "" || cmd.ProcessState != nil {
			b.Fatalf("the client process ended before its streams were open:\n%s", out)
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		b.Fatalf("the client process did not open %d streams in 3 minutes", n)
	}
	return c
}

// stop ends the child (closing its stdin) and waits for it.
func (c *memClient) stop(b *testing.B) {
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		b.Error("the client process did not end within 30 s of its stdin closing")
	}
}

// TestStreamMemoryClient is BenchmarkStreamMemory's child process: it
// opens the streams, prints "streams open" once each has its initial put,
// and holds them until its stdin closes. Run on its own it does nothing.
func TestStreamMemoryClient(t *testing.T) {
	url := os.Getenv(memClientURL)
	if url == "" {
		t.Skip("the client end of BenchmarkStreamMemory")
	}
	n, _ := strconv.Atoi(os.Getenv(memClientCount))
	pemBytes, err := os.ReadFile(os.Getenv(memClientCA))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(pemBytes)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: -1}
	if os.Getenv(memClientProto) == "h2" {
		tr.ForceAttemptHTTP2 = true
	} else {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(i int) error {
		if os.Getenv(memClientProto) == "ws" {
			return openIdleListen(ctx, client, url, i)
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/idle/%d.json", url, i), nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+adminSecret)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("stream %d: status %d", i, resp.StatusCode)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if !strings.HasPrefix(line, "event: put") {
			return fmt.Errorf("stream %d: first line %q, %v", i, line, err)
		}
		return nil
	}
	// 32 at a time: HTTP/2 streams then fill a connection before the
	// transport opens the next, as a browser's would.
	var wg sync.WaitGroup
	var failed atomic.Value
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := open(i); err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	fmt.Println("streams open")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
}

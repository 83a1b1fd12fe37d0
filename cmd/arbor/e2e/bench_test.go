package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// Load shape of BenchmarkHTTPS: every phase runs benchWorkers keep-alive
// HTTPS clients for benchPhaseTime or until benchPhaseOps requests have
// been sent, whichever comes first.
const (
	benchWorkers   = 64
	benchPhaseTime = 5 * time.Second
	benchPhaseOps  = 500_000
	benchKeys      = 1000
)

// benchPhase is one phase's outcome.
type benchPhase struct {
	name     string
	ops      int
	errors   int
	firstErr string
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (p benchPhase) opsPerSec() float64 { return float64(p.ops) / p.elapsed.Seconds() }

var (
	benchOnce    sync.Once
	benchResults []benchPhase
)

// BenchmarkHTTPS measures one node over HTTPS: writes (PUT small values to
// 1,000 keys), reads at local and linearizable consistency, and, as the
// ceiling, a bare Gin handler answering a constant over HTTPS in this
// process. The phases run once, whatever b.N is (they are bounded by time
// and count, not by b.N); later calls report the same figures.
//
// TestMain builds the binary with the race detector, which slows it
// several times over; for meaningful figures point E2E_ARBOR_BIN at a
// normal build and run without -race, e.g.
//
//	go build -o /tmp/arbor ./cmd/arbor
//	E2E_ARBOR_BIN=/tmp/arbor go test -run '^$' -bench HTTPS ./cmd/arbor/e2e/
func BenchmarkHTTPS(b *testing.B) {
	benchOnce.Do(func() { benchResults = runHTTPSBench(b) })
	for _, p := range benchResults {
		if p.errors > 0 {
			b.Errorf("%s: %d of %d requests failed, first: %s", p.name, p.errors, p.ops+p.errors, p.firstErr)
		}
		b.ReportMetric(p.opsPerSec(), p.name+"-ops/s")
		b.ReportMetric(float64(p.p50.Microseconds())/1000, p.name+"-p50-ms")
		b.ReportMetric(float64(p.p99.Microseconds())/1000, p.name+"-p99-ms")
	}
}

// runHTTPSBench starts a node and the Gin ceiling and runs every phase.
func runHTTPSBench(b *testing.B) []benchPhase {
	n := StartReadyNode(b, Options{Name: "bench"})
	hc := n.PooledClient(b, benchWorkers)
	key := func(i int) string { return fmt.Sprintf("/bench/k%03d.json", i%benchKeys) }
	arbor := func(method, query string, body func(i int) string) func(int) error {
		return func(i int) error {
			var rd io.Reader
			if body != nil {
				rd = strings.NewReader(body(i))
			}
			req, err := http.NewRequest(method, n.URL(key(i)+query), rd)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+AdminSecret)
			return roundTrip(hc, req)
		}
	}
	value := func(i int) string { return fmt.Sprintf(`{"v":%d}`, i) }

	var phases []benchPhase
	phases = append(phases, runPhase("write", arbor("PUT", "?print=silent", value)))
	phases = append(phases, runPhase("read-local", arbor("GET", "?consistency=local", nil)))
	phases = append(phases, runPhase("read-linearizable", arbor("GET", "?consistency=linearizable", nil)))

	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	engine.GET("/*path", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", []byte(`{"v":1}`))
	})
	srv := httptest.NewUnstartedServer(engine)
	srv.StartTLS()
	defer srv.Close()
	ceiling := srv.Client()
	tr := ceiling.Transport.(*http.Transport)
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = benchWorkers, benchWorkers
	phases = append(phases, runPhase("gin-ceiling", func(i int) error {
		req, err := http.NewRequest("GET", srv.URL+key(i), nil)
		if err != nil {
			return err
		}
		return roundTrip(ceiling, req)
	}))

	var table strings.Builder
	fmt.Fprintf(&table, "%d keep-alive HTTPS clients, ≤%s or ≤%d requests per phase\n", benchWorkers, benchPhaseTime, benchPhaseOps)
	fmt.Fprintf(&table, "%-18s %9s %10s %9s %9s %7s\n", "phase", "requests", "ops/s", "p50", "p99", "errors")
	for _, p := range phases {
		fmt.Fprintf(&table, "%-18s %9d %10.0f %9s %9s %7d\n", p.name, p.ops, p.opsPerSec(),
			p.p50.Round(time.Microsecond), p.p99.Round(time.Microsecond), p.errors)
	}
	b.Logf("\n%s", table.String())
	return phases
}

// roundTrip sends req and reads the whole answer (so the connection is
// reused), failing on any status but 200 and 204.
func roundTrip(c *http.Client, req *http.Request) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("%s %s: %d %.200s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	return nil
}

// runPhase calls op from benchWorkers goroutines, each with its own
// sequence of request numbers, until benchPhaseTime has passed or
// benchPhaseOps calls have started, and summarises the latencies of the
// successful calls.
func runPhase(name string, op func(i int) error) benchPhase {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		errs     int
		firstErr string
	)
	start := time.Now()
	deadline := start.Add(benchPhaseTime)
	for range benchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, benchPhaseOps/benchWorkers)
			var bad int
			var badMsg string
			for time.Now().Before(deadline) {
				i := int(next.Add(1)) - 1
				if i >= benchPhaseOps {
					break
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					if bad++; badMsg == "" {
						badMsg = err.Error()
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			errs += bad
			if firstErr == "" {
				firstErr = badMsg
			}
		}()
	}
	wg.Wait()
	p := benchPhase{name: name, ops: len(all), errors: errs, firstErr: firstErr, elapsed: time.Since(start)}
	if len(all) > 0 {
		slices.Sort(all)
		p.p50 = all[len(all)*50/100]
		p.p99 = all[min(len(all)*99/100, len(all)-1)]
	}
	return p
}

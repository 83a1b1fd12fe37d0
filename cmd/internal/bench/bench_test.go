package bench

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeArbor is an in-process HTTPS stand-in for an Arbor node that counts
// what it is sent; fail, when set, picks requests to answer with 503.
type fakeArbor struct {
	srv  *httptest.Server
	auth string

	mu     sync.Mutex
	counts map[string]int // "METHOD path?query" without the key, e.g. "GET ?consistency=local"
	fail   func(r *http.Request) bool
	// stored counts the PUTs answered 200, reported on /metrics as a
	// leader_store stage of 2 ms each (after 7 from before the run).
	stored atomic.Int64
}

func newFakeArbor(t *testing.T, auth string) *fakeArbor {
	t.Helper()
	f := &fakeArbor{auth: auth, counts: map[string]int{}}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	// The untrusted-certificate test makes handshakes fail on purpose.
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeArbor) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		n := 7 + f.stored.Load()
		fmt.Fprintf(w, "# TYPE arbor_raft_is_leader gauge\narbor_raft_is_leader 1\n"+
			"# TYPE arbor_raft_stage_seconds histogram\n"+
			"arbor_raft_stage_seconds_bucket{stage=\"leader_store\",le=\"+Inf\"} %d\n"+
			"arbor_raft_stage_seconds_sum{stage=\"leader_store\"} %g\n"+
			"arbor_raft_stage_seconds_count{stage=\"leader_store\"} %d\n", n, float64(n)*0.002, n)
		return
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if f.auth != "" && r.Header.Get("Authorization") != "Bearer "+f.auth {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "{\n  \"error\" : \"Permission denied\"\n}\n")
		return
	}
	if r.Method != http.MethodGet && !json.Valid(body) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "{\n  \"error\" : \"Invalid data; couldn't parse JSON object, array, or value.\"\n}\n")
		return
	}
	f.mu.Lock()
	f.counts[r.Method+" ?"+r.URL.RawQuery]++
	fail := f.fail != nil && f.fail(r)
	f.mu.Unlock()
	if fail {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "{\n  \"error\" : \"Service unavailable: no leader\"\n}\n")
		return
	}
	if r.Method == http.MethodPost {
		io.WriteString(w, `{"name":"-Nabcdefghijklmnopqrs"}`)
		return
	}
	if r.Method == http.MethodPut {
		f.stored.Add(1)
	}
	io.WriteString(w, `"value"`)
}

func (f *fakeArbor) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[key]
}

func (f *fakeArbor) addr() string { return strings.TrimPrefix(f.srv.URL, "https://") }

// writeCA saves the test server's certificate as a PEM file for --ca.
func writeCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(file, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// runBenchJSON runs `arbor bench --json args` and decodes the result.
func runBenchJSON(t *testing.T, args ...string) (benchResult, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := Run(append(args, "--json"), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("arbor bench %q: exit %d\nstdout: %s\nstderr: %s", args, code, stdout.String(), stderr.String())
	}
	var res benchResult
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("the --json output does not decode: %v\n%s", err, stdout.String())
	}
	if strings.Count(stdout.String(), "\n") != 1 {
		t.Errorf("--json printed more than one line:\n%s", stdout.String())
	}
	return res, stderr.String()
}

func TestBenchRunsForItsDurationAgainstATLSServer(t *testing.T) {
	a, b := newFakeArbor(t, "tok"), newFakeArbor(t, "tok")
	// Both test servers share httptest's certificate, so one CA file serves.
	ca := writeCA(t, a.srv)
	start := time.Now()
	res, stderr := runBenchJSON(t, "--addr", a.addr()+",https://"+b.addr(), "--ca", ca, "--auth", "tok",
		"--workload", "mixed", "--clients", "4", "--duration", "1s", "--keys", "250")
	took := time.Since(start)

	if res.Target != "arbor" || res.Workload != "mixed" || res.Clients != 4 || res.Nodes != 2 {
		t.Errorf("result header %+v", res)
	}
	if res.Ops == 0 || res.Errors != 0 || res.OpsPerSec <= 0 {
		t.Fatalf("ops %d, errors %d, %.0f ops/s; want some ops and no errors", res.Ops, res.Errors, res.OpsPerSec)
	}
	if res.Seconds < 1 || res.Seconds > 3 || took > 10*time.Second {
		t.Errorf("measured %.2fs (the command took %s) for --duration 1s", res.Seconds, took)
	}
	// Every counted operation reached a server; probe, warm-up (local
	// reads) and preload (PATCH) are not counted.
	served := 0
	for _, f := range []*fakeArbor{a, b} {
		n := f.count("PUT ?") + f.count("GET ?consistency=linearizable")
		if n == 0 {
			t.Errorf("the clients were not spread over both nodes: %s got nothing", f.addr())
		}
		served += n
	}
	if uint64(served) != res.Ops {
		t.Errorf("the servers answered %d measured requests, the result counts %d", served, res.Ops)
	}
	if preload := a.count("PATCH ?") + b.count("PATCH ?"); preload != 3 {
		t.Errorf("preloading 250 keys took %d PATCH requests, want 3 batches", preload)
	}
	if w, r := res.ByKind["write"], res.ByKind["read-linearizable"]; w.Ops == 0 || r.Ops == 0 || w.Ops+r.Ops != res.Ops {
		t.Errorf("per-kind counts %+v do not add up to %d", res.ByKind, res.Ops)
	}
	l := res.Latency
	if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latency percentiles out of order: %+v", l)
	}
	if !strings.Contains(stderr, "bench: mixed on arbor (2 node(s)), 4 clients, 1s") {
		t.Errorf("stderr lacks the run header:\n%s", stderr)
	}
}

func TestBenchStopsAtMaxOpsAndCountsErrors(t *testing.T) {
	f := newFakeArbor(t, "")
	var puts atomic.Int64
	f.fail = func(r *http.Request) bool { return r.Method == http.MethodPut && puts.Add(1)%2 == 0 }
	res, _ := runBenchJSON(t, "--addr", f.addr(), "--ca", writeCA(t, f.srv), "--workload", "write",
		"--clients", "3", "--duration", "1m", "--max-ops", "40")
	if res.Ops+res.Errors != 40 {
		t.Fatalf("%d ok + %d errors, want 40 requests in all", res.Ops, res.Errors)
	}
	if res.Ops != 20 || res.ErrorKinds["HTTP 503: Service unavailable: no leader"] != 20 {
		t.Errorf("ops %d, errors %v; want 20 and 20 grouped by message", res.Ops, res.ErrorKinds)
	}
	if res.Seconds > 10 {
		t.Errorf("a 40-request run took %.1fs", res.Seconds)
	}
}

func TestBenchTextSummary(t *testing.T) {
	f := newFakeArbor(t, "")
	var stdout, stderr strings.Builder
	code := Run([]string{"--addr", f.addr(), "--insecure", "--workload", "push", "--clients", "2", "--max-ops", "10"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"target:     arbor, 1 node(s)", "requests:   10 ok, 0 errors", "throughput:", "latency:    p50 "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout.String())
		}
	}
	if n := f.count("POST ?"); n != 10 {
		t.Errorf("the server got %d pushes, want 10", n)
	}
}

func TestBenchFailsClearlyWhenTheTargetIsUnusable(t *testing.T) {
	secured := newFakeArbor(t, "right")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no listener", []string{"--addr", closed, "--insecure"}, []string{"cannot use arbor at https://" + closed, "connection refused", "is a node listening there?"}},
		{"untrusted certificate", []string{"--addr", secured.addr()}, []string{"certificate", "pass --ca"}},
		{"bad credential", []string{"--addr", secured.addr(), "--insecure", "--auth", "wrong"}, []string{"HTTP 401: Permission denied", "pass --auth"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := Run(append(c.args, "--max-ops", "1", "--timeout", "5s"), &stdout, &stderr)
			if code != exitFailure {
				t.Errorf("exit %d, want %d", code, exitFailure)
			}
			for _, want := range c.want {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// fakeEtcdGateway answers the three v3 gateway calls the bench makes and
// checks that their bodies decode as etcd's would.
func fakeEtcdGateway(t *testing.T, counts *sync.Map) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"error":"bad request","code":3}`, http.StatusBadRequest)
			return
		}
		key, _ := body["key"].(string)
		name := r.URL.Path
		switch r.URL.Path {
		case "/v3/kv/put", "/v3/kv/range":
			if _, err := base64.StdEncoding.DecodeString(key); err != nil || key == "" {
				http.Error(w, `{"error":"key is not base64","code":3}`, http.StatusBadRequest)
				return
			}
			if r.URL.Path == "/v3/kv/range" && body["serializable"] == true {
				name += "?serializable"
			}
		case "/v3/kv/txn":
			if ops, _ := body["success"].([]any); len(ops) == 0 {
				http.Error(w, `{"error":"empty txn","code":3}`, http.StatusBadRequest)
				return
			}
		default:
			http.NotFound(w, r)
			return
		}
		n, _ := counts.LoadOrStore(name, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		io.WriteString(w, `{"header":{"revision":"2"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBenchDrivesEtcdsGateway(t *testing.T) {
	var counts sync.Map
	srv := fakeEtcdGateway(t, &counts)
	addr := strings.TrimPrefix(srv.URL, "https://")
	get := func(path string) int64 {
		n, ok := counts.Load(path)
		if !ok {
			return 0
		}
		return n.(*atomic.Int64).Load()
	}
	for _, c := range []struct {
		workload, path string
	}{
		{"write", "/v3/kv/put"},
		{"read-local", "/v3/kv/range?serializable"},
		{"read-linearizable", "/v3/kv/range"},
		{"patch-multi", "/v3/kv/txn"},
	} {
		before := get(c.path)
		res, _ := runBenchJSON(t, "--target", "etcd", "--addr", addr, "--ca", writeCA(t, srv),
			"--workload", c.workload, "--clients", "2", "--max-ops", "25", "--keys", "50", "--preload=false")
		if res.Ops != 25 || res.Errors != 0 {
			t.Errorf("%s: %d ok, errors %v", c.workload, res.Ops, res.ErrorKinds)
		}
		if got := get(c.path) - before; got < 25 {
			t.Errorf("%s: the gateway saw %d requests on %s, want at least 25", c.workload, got, c.path)
		}
	}
}

func TestBenchBareCeiling(t *testing.T) {
	res, _ := runBenchJSON(t, "--target", "bare", "--workload", "read-local", "--clients", "2", "--max-ops", "200")
	if res.Ops != 200 || res.Errors != 0 || res.Nodes != 1 {
		t.Errorf("bare: %d ok, %d errors on %d node(s)", res.Ops, res.Errors, res.Nodes)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "redis"}, `--target must be one of arbor, etcd, bare, not "redis"`},
		{[]string{"--workload", "scan"}, `--workload must be one of write, read-local`},
		{[]string{"--clients", "0"}, "--clients must be between 1 and 1024"},
		{[]string{"--duration", "2h"}, "--duration must be positive and at most 1h0m0s"},
		{[]string{"--keys", "5", "--fields", "6"}, "--fields must be between 1 and 128 and at most --keys"},
		{[]string{"--value-size", "-1"}, "--value-size must be between 0 and 1048576"},
		{[]string{"--addr", "http://127.0.0.1:1"}, "only https is supported"},
		{[]string{"--addr", "127.0.0.1:1/db"}, "give host:port without a path"},
		{[]string{"--addr", " , "}, "--addr names no node"},
		{[]string{"--target", "bare", "--addr", "127.0.0.1:1"}, "--addr is not used with --target bare"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr strings.Builder
		if code := Run(c.args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("arbor bench %q: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	var stdout, stderr strings.Builder
	if code := Run([]string{"-h"}, &stdout, &stderr); code != exitOK || !strings.Contains(stderr.String(), "Usage: arbor bench") {
		t.Errorf("-h: exit %d, help %q", code, stderr.String())
	}
}

func TestBenchAddrDefaults(t *testing.T) {
	for target, want := range map[string]string{"arbor": "https://127.0.0.1:8443", "etcd": "https://127.0.0.1:2379"} {
		cfg, err := parseBenchConfig([]string{"--target", target}, io.Discard)
		if err != nil || len(cfg.Addrs) != 1 || cfg.Addrs[0] != want {
			t.Errorf("%s: addrs %v (%v), want %s", target, cfg.Addrs, err, want)
		}
	}
}

func TestBenchProgressDisplay(t *testing.T) {
	var ok, failed atomic.Uint64
	ok.Store(1500)
	failed.Store(2)
	cfg := defaultBenchConfig()
	var log strings.Builder
	p := newBenchProgress(&log, cfg, &ok, &failed)
	p.show(5*time.Second, 1500, 300, false)
	if got := log.String(); !strings.HasPrefix(got, "bench:   5.0s/10s") || !strings.Contains(got, "1500 ok") || !strings.Contains(got, "2 errors") || !strings.HasSuffix(got, "\n") || strings.Contains(got, "\r") {
		t.Errorf("a log gets a plain line, got %q", got)
	}
	var tty strings.Builder
	p = newBenchProgress(&tty, cfg, &ok, &failed)
	p.tty = true
	p.show(5*time.Second, 1500, 300, false)
	if got := tty.String(); !strings.HasPrefix(got, "\r\x1b[K[===============               ]  50%") || strings.HasSuffix(got, "\n") {
		t.Errorf("a terminal gets a bar redrawn in place, got %q", got)
	}
	tty.Reset()
	p.show(10*time.Second, 1500, 300, true)
	if got := tty.String(); !strings.Contains(got, "[==============================] 100%") || !strings.HasSuffix(got, "\n") {
		t.Errorf("the final bar is full and ends the line, got %q", got)
	}
}

func TestBenchReportTable(t *testing.T) {
	lines := []benchResult{
		{Target: "etcd", Workload: "write", Clients: 64, OpsPerSec: 2000, Latency: latencySummary{P50: 30, P99: 90}},
		{Target: "arbor", Workload: "write", Clients: 64, OpsPerSec: 1, Errors: 3},
		{Target: "arbor", Workload: "write", Clients: 64, OpsPerSec: 4000, Latency: latencySummary{P50: 15, P99: 40}}, // the best run wins
		{Target: "arbor", Workload: "write", Clients: 64, OpsPerSec: 3000},
		{Target: "bare", Workload: "write", Clients: 64, OpsPerSec: 40000},
		{Target: "etcd", Workload: "write", Clients: 1, OpsPerSec: 500, Latency: latencySummary{P50: 1.5, P99: 4}},
		{Target: "etcd", Workload: "read-local", Clients: 1, OpsPerSec: 1000, Errors: 2},
	}
	var in strings.Builder
	for _, r := range lines {
		if err := r.writeJSON(&in); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(file, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := Run([]string{"--report", file}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rows := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	want := []string{
		"| write | 1 | — | 500 | — | — | — | — | — | 1.50 / 4.00 |",
		"| write | 64 | 4000 | 2000 | 2.00 | 40000 | 0.10 | 0.05 | 15.00 / 40.00 | 30.00 / 90.00 |",
		"| read-local | 1 | — | 1000 (2 err) | — | — | — | — | — | 0.00 / 0.00 |",
	}
	if len(rows) != 2+len(want) {
		t.Fatalf("table:\n%s", stdout.String())
	}
	for i, w := range want {
		if rows[2+i] != w {
			t.Errorf("row %d:\n got %s\nwant %s", i, rows[2+i], w)
		}
	}
	var stdout2, stderr2 strings.Builder
	if code := Run([]string{"--report", filepath.Join(t.TempDir(), "missing.jsonl")}, &stdout2, &stderr2); code != exitFailure {
		t.Errorf("a missing results file: exit %d", code)
	}
}

func TestBenchReportsRaftStages(t *testing.T) {
	f := newFakeArbor(t, "")
	res, _ := runBenchJSON(t, "--addr", f.addr(), "--insecure", "--workload", "write", "--clients", "2", "--max-ops", "40")
	if len(res.RaftStages) != 1 {
		t.Fatalf("raft stages = %+v, want one node", res.RaftStages)
	}
	ns := res.RaftStages[0]
	// Only the run's 40 writes count, not the 7 from before it.
	if got := ns.Stages["leader_store"]; got.Count != 40 || got.MeanMs != 2 || !ns.Leader || ns.Addr != "https://"+f.addr() {
		t.Errorf("stages = %+v", ns)
	}
	var stdout, stderr strings.Builder
	Run([]string{"--addr", f.addr(), "--insecure", "--workload", "write", "--clients", "1", "--max-ops", "5"}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), "leader_store") || !strings.Contains(stdout.String(), "2.000 (5)") {
		t.Errorf("text summary lacks the stage table:\n%s", stdout.String())
	}
}

func TestParseStagesIgnoresOtherMetrics(t *testing.T) {
	s, err := parseStages(strings.NewReader("# TYPE go_goroutines gauge\ngo_goroutines 12\n"))
	if err != nil || s.leader || len(s.count) != 0 {
		t.Errorf("parseStages = %+v, %v", s, err)
	}
	if _, err := parseStages(strings.NewReader("not prometheus {")); err == nil {
		t.Error("garbage parsed without error")
	}
	// A node restarted between the scrapes has lower counts: left out.
	before := stageSnapshot{count: map[string]uint64{"commit": 10}, sum: map[string]float64{"commit": 1}}
	after := stageSnapshot{count: map[string]uint64{"commit": 3}, sum: map[string]float64{"commit": 0.1}}
	if ns := stagesBetween("a", before, after); len(ns.Stages) != 0 {
		t.Errorf("restarted node: %+v", ns)
	}
}

func TestBenchReportStageTables(t *testing.T) {
	stages := []nodeStages{
		{Addr: "https://127.0.0.1:1", Leader: true, Stages: map[string]stageStat{"commit": {Count: 9, MeanMs: 2.5}, "leader_store": {Count: 9, MeanMs: 1}}},
		{Addr: "https://127.0.0.1:2", Stages: map[string]stageStat{"follower_store": {Count: 9, MeanMs: 1.25}}},
	}
	rows := reportRows([]benchResult{
		{Target: "arbor", Workload: "write", Clients: 1, OpsPerSec: 300, Latency: latencySummary{P50: 3}, RaftStages: stages},
		{Target: "arbor", Workload: "read-local", Clients: 1, OpsPerSec: 9000, RaftStages: stages},
	})
	var b strings.Builder
	if err := writeStageTables(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "| node | leader_store | commit | follower_store |\n|---|--:|--:|--:|\n" +
		"| 127.0.0.1:1 (leader) | 1.000 (9) | 2.500 (9) | — |\n" +
		"| 127.0.0.1:2 | — | — | 1.250 (9) |\n"
	if got := b.String(); !strings.Contains(got, want) || strings.Count(got, "| node |") != 1 || !strings.Contains(got, "at 1 client(s), p50 3.00 ms") {
		t.Errorf("stage tables:\n%s\nwant (once, write only):\n%s", got, want)
	}
}

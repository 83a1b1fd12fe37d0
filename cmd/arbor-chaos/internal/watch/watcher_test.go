package watch

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
)

// sseServer answers each stream request with the next script: its frames
// written as they are, then the stream ends — or, for the last script,
// keep-alives until the client goes (silence, if silent).
type sseServer struct {
	t       *testing.T
	silent  bool
	mu      sync.Mutex
	scripts []string
	seen    []string // the Last-Event-ID of each request
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Accept") != "text/event-stream" || r.URL.Query().Get("resume") != "true" || r.Header.Get("Authorization") != "Bearer s3cret" {
		s.t.Errorf("request %s %v", r.URL, r.Header)
	}
	s.mu.Lock()
	s.seen = append(s.seen, r.Header.Get("Last-Event-ID"))
	n := len(s.seen)
	script, last := "", n >= len(s.scripts)
	if n <= len(s.scripts) {
		script = s.scripts[n-1]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, script)
	w.(http.Flusher).Flush()
	if !last {
		return
	}
	for range 200 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
		if s.silent {
			continue
		}
		if _, err := io.WriteString(w, "event: keep-alive\ndata: null\n\n"); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

func putFrame(id int, path, data string) string {
	return fmt.Sprintf("id: %d\nevent: put\ndata: {\"path\":%q,\"data\":%s}\n\n", id, path, data)
}

func startWatcher(t *testing.T, scripts ...string) (*sseServer, *Set) {
	t.Helper()
	return startWatcherOn(t, &sseServer{t: t, scripts: scripts}, 2*time.Second)
}

func startWatcherOn(t *testing.T, s *sseServer, idle time.Duration) (*sseServer, *Set) {
	t.Helper()
	srv := httptest.NewTLSServer(s)
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	start := time.Now()
	set := Start(context.Background(), Config{
		Watchers:  1,
		Endpoints: []client.Endpoint{{Node: "example.com", Addr: srv.Listener.Addr().String()}},
		CA:        pool,
		Secret:    "s3cret",
		Idle:      idle,
		MaxAge:    time.Minute,
		Clock:     func() int64 { return time.Since(start).Nanoseconds() },
	})
	return s, set
}

// eventually polls cond until it holds, at most 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no %s within 10 s", what)
		}
	}
}

// await polls the first watcher's record until cond holds.
func await(t *testing.T, set *Set, what string, cond func(r *Record) bool) {
	t.Helper()
	eventually(t, what, func() bool {
		set.ws[0].mu.Lock()
		defer set.ws[0].mu.Unlock()
		return cond(&set.ws[0].rec)
	})
}

func TestWatcherResumesAndRebases(t *testing.T) {
	srv, set := startWatcher(t,
		// The first stream: the initial put, two events, then it ends.
		putFrame(5, "/", `{"reg":{"g0":{"k0":"c0-1"}}}`)+
			"id: 6\nevent: patch\ndata: {\"path\":\"/reg/g0\",\"data\":{\"k0\":\"c1-1\"}}\n\n"+
			putFrame(7, "/list/g0/k0/-A", `"c2-1"`),
		// Resumed after 7: the missed event.
		putFrame(8, "/ctr/s0/n0", "1"),
		// After 8 the history is gone: a fresh put, then keep-alives.
		putFrame(11, "/", `{"ctr":{"s0":{"n0":3}},"list":{"g0":{"k0":{"-A":"c2-1"}}},"reg":{"g0":{"k0":"c3-1"}}}`),
	)
	await(t, set, "to id 11", func(r *Record) bool { return r.Last >= 11 })
	recs := set.Stop()
	r := recs[0]
	if len(r.Problems) != 0 {
		t.Errorf("problems: %q", r.Problems)
	}
	srv.mu.Lock()
	if got := strings.Join(srv.seen, ","); got != ",7,8" {
		t.Errorf("Last-Event-ID headers %q, want \",7,8\"", got)
	}
	srv.mu.Unlock()
	var hows []string
	for _, s := range r.Streams {
		hows = append(hows, s.How)
	}
	if got := strings.Join(hows, ","); got != "initial,resumed,fresh" {
		t.Errorf("streams %q (%+v)", got, r.Streams)
	}
	if len(r.Puts) != 2 || r.Puts[0].Index != 5 || r.Puts[1].After != 8 || r.Puts[1].Index != 11 {
		t.Errorf("puts %+v", r.Puts)
	}
	want := map[string][]Obs{
		"reg/g0/k0":  {{Index: 5, Rebase: true, Value: `"c0-1"`}, {Index: 6, Value: `"c1-1"`}, {Index: 11, Rebase: true, Value: `"c3-1"`}},
		"list/g0/k0": {{Index: 7, Added: []history.Item{{Name: "-A", Value: "c2-1"}}}},
		"ctr/s0/n0":  {{Index: 8, Value: "1"}, {Index: 11, Rebase: true, Value: "3"}},
	}
	for k, w := range want {
		got := r.Keys[k]
		if len(got) != len(w) {
			t.Errorf("%s: %+v, want %+v", k, got, w)
			continue
		}
		for i := range w {
			if !eqObs(got[i], w[i]) {
				t.Errorf("%s[%d]: %+v, want %+v", k, i, got[i], w[i])
			}
		}
	}
	if r.Last != 11 || !strings.Contains(r.Copy, `"c3-1"`) {
		t.Errorf("last %d, copy %s", r.Last, r.Copy)
	}
}

func TestWatcherReportsProtocolProblems(t *testing.T) {
	_, set := startWatcher(t,
		putFrame(5, "/", `{"a":1}`)+putFrame(5, "/b", "2"),   // an id that does not increase
		"event: put\ndata: {\"path\":\"/c\",\"data\":3}\n\n", // no id on a resumable stream
		"retry: 100\n\n",       // a field arbor never sends
		putFrame(4, "/", `{}`), // a fresh put older than what was seen
	)
	await(t, set, "four problems", func(r *Record) bool { return len(r.Problems) >= 4 })
	r := set.Stop()[0]
	got := strings.Join(r.Problems, "\n")
	for _, w := range []string{"id 5 after 5", "without an id", "malformed frame: unknown field \"retry\"", "older than index 5"} {
		if !strings.Contains(got, w) {
			t.Errorf("no %q in problems:\n%s", w, got)
		}
	}
}

func TestSpreadPrefersNodesWithoutWatchers(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	s := newSpread(3)
	s.set(1, "n2")
	if got := s.next(0, nodes, 0); got != 2 {
		t.Errorf("watcher 0 after n1, n2 taken: %s, want n3", nodes[got])
	}
	s.set(2, "n3")
	if got := s.next(0, nodes, 0); got != 1 {
		t.Errorf("watcher 0 after n1, n2 and n3 taken: %s, want the next one, n2", nodes[got])
	}
	s.set(0, "n1")
	s.set(1, "")
	if got := s.next(2, nodes, 2); got != 1 {
		t.Errorf("watcher 2 after n3, n1 taken, n2 free: %s, want n2", nodes[got])
	}
}

// TestWatcherLeavesASilentStream: a stream that sends nothing, not even
// keep-alives, is on a node that hangs; the watcher moves on.
func TestWatcherLeavesASilentStream(t *testing.T) {
	srv, set := startWatcherOn(t, &sseServer{t: t, silent: true, scripts: []string{putFrame(5, "/", "{}")}}, 200*time.Millisecond)
	eventually(t, "second request", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.seen) >= 2
	})
	r := set.Stop()[0]
	if r.Streams[0].End != "idle" {
		t.Errorf("the silent stream ended %q, want idle", r.Streams[0].End)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.seen) < 2 || srv.seen[1] != "5" {
		t.Errorf("requests %q: want a second one with Last-Event-ID 5", srv.seen)
	}
}

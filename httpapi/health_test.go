package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// TestReadyz checks /readyz against the database's readiness and draining.
func TestReadyz(t *testing.T) {
	var notReady atomic.Pointer[error]
	db := &fakeDB{
		ready: func(context.Context) error {
			if p := notReady.Load(); p != nil {
				return *p
			}
			return nil
		},
		read: func(context.Context, fsm.Read) (fsm.ReadResult, error) {
			return fsm.ReadResult{Value: tree.Int(7)}, nil
		},
	}
	h := newHarness(t, db, nil)
	check := func(what string, status int, body string) {
		t.Helper()
		r := h.do(req{method: "GET", path: "/readyz", anon: true})
		if r.status != status || r.body != body {
			t.Errorf("%s: /readyz %d %q, want %d %q", what, r.status, r.body, status, body)
		}
	}
	check("ready", 200, `{"status":"ok"}`)
	err := errors.New("leader: no leader known")
	notReady.Store(&err)
	check("no leader", 503, `{"status":"not ready","reason":"[-]ready: leader: no leader known"}`)
	notReady.Store(nil)
	h.s.SetDraining(true)
	check("draining", 503, `{"status":"not ready","reason":"[-]draining: shutting down"}`)
	r := h.get("/a.json")
	if r.status != 503 || r.body != errBody("Service unavailable: shutting down") || r.header.Get("Retry-After") != "1" {
		t.Errorf("data request while draining: %d %q %v", r.status, r.body, r.header)
	}
	if r := h.do(req{method: "GET", path: "/livez", anon: true}); r.status != 200 {
		t.Errorf("livez while draining: %d", r.status)
	}
	h.s.SetDraining(false)
	check("back", 200, `{"status":"ok"}`)
	if r := h.get("/a.json"); r.status != 200 || r.body != "7" {
		t.Errorf("data request after draining: %d %q", r.status, r.body)
	}
}

// TestReadyzAnswersWithinASecond: a readiness check that blocks, whether
// it honours its context or not, is answered 503 within a second (a
// Kubernetes probe's default timeout), not after WriteTimeout; one that
// honours its context gives its own reason.
func TestReadyzAnswersWithinASecond(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	for _, c := range []struct {
		name   string
		ready  func(context.Context) error
		reason string
	}{
		{"ignores its context", func(context.Context) error { <-release; return nil },
			`{"status":"not ready","reason":"[-]ready: the readiness check did not finish within 800ms"}`},
		{"honours its context", func(ctx context.Context) error {
			<-ctx.Done()
			return errors.New("leader has not yet committed an entry of its term")
		}, `{"status":"not ready","reason":"[-]ready: leader has not yet committed an entry of its term"}`},
	} {
		h := newHarness(t, &fakeDB{ready: c.ready}, nil)
		if h.s.cfg.WriteTimeout <= time.Second {
			t.Fatalf("the harness's WriteTimeout %s does not show the bound", h.s.cfg.WriteTimeout)
		}
		start := time.Now()
		r := h.do(req{method: "GET", path: "/readyz", anon: true})
		took := time.Since(start)
		if r.status != 503 || r.body != c.reason {
			t.Errorf("%s: /readyz %d %q, want 503 %q", c.name, r.status, r.body, c.reason)
		}
		if took >= time.Second || took < readyzWait {
			t.Errorf("%s: /readyz answered after %s, want between %s and 1s", c.name, took, readyzWait)
		}
	}
}

// TestStatusErrors checks /status when the database cannot answer.
func TestStatusErrors(t *testing.T) {
	db := &fakeDB{status: func(context.Context) (any, error) { return nil, fsm.ErrNoLeader }}
	h := newHarness(t, db, nil)
	if r := h.get("/status"); r.status != 503 || r.body != errBody("Service unavailable: no leader") {
		t.Errorf("status without leader: %d %q", r.status, r.body)
	}
	db.status = func(context.Context) (any, error) { return func() {}, nil }
	if r := h.get("/status"); r.status != 500 || r.body != errBody("Internal error") {
		t.Errorf("unencodable status: %d %q", r.status, r.body)
	}
}

// TestMetrics checks that requests are counted by method (after override)
// and status, with latencies, in the Prometheus text format.
func TestMetrics(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.do(req{method: "PUT", path: "/a.json", body: str(`1`)})
	h.do(req{method: "POST", path: "/a.json", headers: map[string]string{"X-HTTP-Method-Override": "GET"}})
	h.do(req{method: "GET", path: "/a.json", anon: true})
	h.do(req{method: "BREW", path: "/a.json"})
	r := h.do(req{method: "GET", path: "/metrics", anon: true})
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, want := range []string{
		`arbor_http_requests_total{code="200",method="PUT"} 1`,
		`arbor_http_requests_total{code="200",method="GET"} 1`,
		`arbor_http_requests_total{code="401",method="GET"} 1`,
		`arbor_http_requests_total{code="400",method="other"} 1`,
		`arbor_http_request_duration_seconds_count{method="GET"} 2`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestCORSAndCommonHeaders checks the preflight answer and the headers
// every response carries (SPEC §7).
func TestCORSAndCommonHeaders(t *testing.T) {
	h := newHarness(t, nil, nil)
	r := h.do(req{method: "OPTIONS", path: "/a/b.json", anon: true,
		headers: map[string]string{"Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "authorization,x-custom"}})
	want := map[string]string{
		"Access-Control-Allow-Origin":  "*",
		"Access-Control-Allow-Methods": "GET, PUT, POST, PATCH, DELETE, OPTIONS",
		"Access-Control-Allow-Headers": "authorization,x-custom",
		"Access-Control-Max-Age":       "86400",
	}
	if r.status != 200 || r.body != "" {
		t.Errorf("preflight: %d %q", r.status, r.body)
	}
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			t.Errorf("preflight %s = %q, want %q", k, got, v)
		}
	}
	r = h.do(req{method: "OPTIONS", path: "/anything", anon: true})
	allow := r.header.Get("Access-Control-Allow-Headers")
	for _, hd := range []string{"Authorization", "Content-Type", "X-HTTP-Method-Override", "X-Firebase-ETag", "If-Match", "If-None-Match"} {
		if !strings.Contains(allow, hd) {
			t.Errorf("default Allow-Headers %q lacks %s", allow, hd)
		}
	}
	h.do(req{method: "PUT", path: "/a.json", body: str(`1`)})
	for _, rq := range []req{
		{method: "GET", path: "/a.json"},
		{method: "GET", path: "/a.json?print=silent"},
		{method: "GET", path: "/a.json", headers: map[string]string{"If-None-Match": tree.Int(1).ETag()}},
		{method: "PUT", path: "/a.json", body: str(`{`)},
		{method: "GET", path: "/a.json", anon: true},
		{method: "GET", path: "/nope"},
		{method: "GET", path: "/livez"},
		{method: "GET", path: "/readyz"},
		{method: "GET", path: "/status"},
		{method: "PUT", path: "/a.json", body: str(`2`), headers: map[string]string{"If-Match": "x"}},
	} {
		r := h.do(rq)
		for k, v := range map[string]string{"Content-Type": jsonContentType, "Cache-Control": "no-cache",
			"Access-Control-Allow-Origin": "*"} {
			if k == "Content-Type" && r.status == http.StatusNotModified {
				continue // net/http drops it: a 304 has no content
			}
			if got := r.header.Get(k); got != v {
				t.Errorf("%s %s (%d): %s = %q, want %q", rq.method, rq.path, r.status, k, got, v)
			}
		}
	}
	if r := h.get("/metrics"); r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("/metrics headers %v", r.header)
	}
	if r := h.get("/a.json"); r.status != http.StatusOK || r.body != "1" {
		t.Errorf("after 412: %d %q", r.status, r.body)
	}
}

package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestLargeReadsShareARenderBudget: while the budget is spent, a read of
// a large node waits and then gets a 503; small reads are not held up;
// once the budget is back the large read succeeds.
func TestLargeReadsShareARenderBudget(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) {
		c.RenderBudgetBytes = 4 << 20
		c.WriteTimeout = 200 * time.Millisecond
	})
	big := `"` + strings.Repeat("x", 2<<20) + `"`
	h.do(req{method: "PUT", path: "/big.json?writeSizeLimit=large", body: str(big)})
	h.do(req{method: "PUT", path: "/small.json", body: str(`1`)})
	if err := h.s.render.sem.Acquire(context.Background(), 4<<20); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if r := h.do(req{method: "GET", path: "/big.json"}); r.status != 503 {
		t.Fatalf("a large read with the budget spent: %d", r.status)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("refused after %s without waiting", waited)
	}
	if r := h.do(req{method: "GET", path: "/small.json"}); r.status != 200 || r.body != "1" {
		t.Fatalf("a small read while the budget is spent: %d %s", r.status, r.body)
	}
	h.s.render.sem.Release(4 << 20)
	if r := h.do(req{method: "GET", path: "/big.json"}); r.status != 200 || len(r.body) != len(big) {
		t.Fatalf("the large read after the budget came back: %d, %d bytes", r.status, len(r.body))
	}
}

// TestLargeRendersTakeACoreSlot: while every render slot is taken (half
// the cores), a large read and a large query wait and then get a 503,
// small reads go on, and once a slot is free the large read renders.
func TestLargeRendersTakeACoreSlot(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.WriteTimeout = 200 * time.Millisecond })
	big := `"` + strings.Repeat("x", 2<<20) + `"`
	h.do(req{method: "PUT", path: "/big/a.json?writeSizeLimit=large", body: str(big)})
	h.do(req{method: "PUT", path: "/small.json", body: str(`1`)})
	slots := int64(max(1, runtime.GOMAXPROCS(0)/2))
	if err := h.s.render.cpu.Acquire(context.Background(), slots); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/big.json", `/big.json?orderBy="$key"&limitToFirst=1`} {
		if r := h.do(req{method: "GET", path: path}); r.status != 503 {
			t.Fatalf("GET %s with every render slot taken: %d %s", path, r.status, r.body)
		}
	}
	if r := h.do(req{method: "GET", path: "/small.json"}); r.status != 200 || r.body != "1" {
		t.Fatalf("a small read while the slots are taken: %d %s", r.status, r.body)
	}
	h.s.render.cpu.Release(slots)
	if r := h.do(req{method: "GET", path: "/big/a.json"}); r.status != 200 || len(r.body) != len(big) {
		t.Fatalf("the large read once a slot is free: %d, %d bytes", r.status, len(r.body))
	}
}

// deadlineWriter records the write deadline a handler sets.
type deadlineWriter struct {
	http.ResponseWriter
	deadline time.Time
}

func (w *deadlineWriter) SetWriteDeadline(t time.Time) error { w.deadline = t; return nil }

// TestAnswerDeadline: a large answer must be written at no less than
// minAnswerRate after a grace period; a small one keeps no deadline.
func TestAnswerDeadline(t *testing.T) {
	now := time.Unix(1700000000, 0)
	for _, tt := range []struct {
		size int64
		want time.Duration
	}{
		{renderSmall - 1, 0},
		{renderSmall, answerGrace + 4*time.Second},
		{64 << 20, answerGrace + 256*time.Second},
	} {
		w := &deadlineWriter{}
		answerDeadline(w, tt.size, now)
		if got := w.deadline.Sub(now); (tt.want == 0 && !w.deadline.IsZero()) || (tt.want != 0 && got != tt.want) {
			t.Errorf("size %d: deadline %v after now, want %v", tt.size, got, tt.want)
		}
	}
}

// TestLargeAnswersStreamLikeSmallOnes: an answer over renderSmall goes out
// in pieces, chunked, and its bytes are exactly those rendered at once, in
// every form a read can ask for.
func TestLargeAnswersStreamLikeSmallOnes(t *testing.T) {
	h := newHarness(t, nil, nil)
	var b strings.Builder
	b.WriteString("{")
	for i := range 20_000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%05d":{"n":%d,"s":"%s"}`, i, i, strings.Repeat("v", 60))
	}
	b.WriteString("}")
	if r := h.do(req{method: "PUT", path: "/big.json?print=silent", body: str(b.String())}); r.status != 204 {
		t.Fatalf("setup: %d %s", r.status, r.body)
	}
	for _, tt := range []struct{ path, ctype string }{
		{"/big.json", jsonContentType},
		{"/big.json?print=pretty", jsonContentType},
		{"/big.json?format=export", jsonContentType},
		{"/big.json?callback=cb", jsContentType},
		{"/big.json?download=big.json", jsonContentType},
		{`/big.json?orderBy="$key"&limitToLast=15000`, jsonContentType},
		{`/big.json?orderBy="n"&startAt=100&print=pretty`, jsonContentType},
	} {
		r := h.do(req{method: "GET", path: tt.path})
		if r.status != 200 || r.header.Get("Content-Type") != tt.ctype {
			t.Fatalf("GET %s: %d %s", tt.path, r.status, r.header.Get("Content-Type"))
		}
		if len(r.body) < renderSmall {
			t.Fatalf("GET %s: %d bytes, not a large answer", tt.path, len(r.body))
		}
		if r.header.Get("Content-Length") != "" {
			t.Fatalf("GET %s: Content-Length %s; a streamed answer has none", tt.path, r.header.Get("Content-Length"))
		}
		// The same read in parts small enough to be rendered at once.
		want := h.referenceAnswer(t, tt.path)
		if r.body != want {
			t.Fatalf("GET %s: streamed answer (%d bytes) differs from the one rendered at once (%d bytes)", tt.path, len(r.body), len(want))
		}
	}
	if r := h.do(req{method: "GET", path: "/big.json?print=silent"}); r.status != 204 || r.body != "" {
		t.Fatalf("print=silent: %d %q", r.status, r.body)
	}
}

// referenceAnswer renders what GET path answers with the whole answer in
// one buffer (no spill), through the same parsing of the request.
func (h *harness) referenceAnswer(t *testing.T, path string) string {
	t.Helper()
	h.s.render.streamFrom = 1 << 62
	defer func() { h.s.render.streamFrom = renderSmall }()
	r := h.do(req{method: "GET", path: path})
	if r.status != 200 {
		t.Fatalf("reference GET %s: %d", path, r.status)
	}
	return r.body
}

// TestClientGoneMidAnswer: a client that hangs up while a large answer is
// streamed to it ends the answer (its connection is cut, never completed)
// and gives back its share of the render budget and its render slot.
func TestClientGoneMidAnswer(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.RenderBudgetBytes = answerChunk })
	big := `{"a":"` + strings.Repeat("x", 3<<20) + `","b":"` + strings.Repeat("y", 3<<20) + `","c":"` + strings.Repeat("z", 3<<20) + `"}`
	h.do(req{method: "PUT", path: "/big.json?print=silent&writeSizeLimit=large", body: str(big)})
	for range 3 {
		hr, err := http.NewRequest("GET", h.ts.URL+"/big.json", nil)
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Authorization", "Bearer "+adminSecret)
		resp, err := h.ts.Client().Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := resp.Body.Read(make([]byte, 1024)); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() // hangs up with megabytes still to come
	}
	slots := int64(max(1, runtime.GOMAXPROCS(0)/2))
	waitFor(t, "the budget and the slots to come back", func() bool {
		if !h.s.render.sem.TryAcquire(answerChunk) {
			return false
		}
		h.s.render.sem.Release(answerChunk)
		if !h.s.render.cpu.TryAcquire(slots) {
			return false
		}
		h.s.render.cpu.Release(slots)
		return true
	})
	if r := h.do(req{method: "GET", path: "/big.json"}); r.status != 200 || len(r.body) != len(big) {
		t.Fatalf("a whole read after the hang-ups: %d, %d bytes", r.status, len(r.body))
	}
}

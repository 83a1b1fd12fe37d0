package httpapi

import (
	"context"
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

package httpapi

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// trickle returns one byte per Read and advances a fake clock by step.
type trickle struct {
	clock *time.Time
	step  time.Duration
	left  int
}

func (t *trickle) Read(p []byte) (int, error) {
	if t.left == 0 {
		return 0, io.EOF
	}
	*t.clock = t.clock.Add(t.step)
	t.left--
	p[0] = 'x'
	return 1, nil
}

// TestBodyPace: a body slower than the minimum rate after the grace
// period is cut off with errSlowBody; a steady one is read whole.
func TestBodyPace(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	slow := newBodyReader(httptest.NewRecorder(), &trickle{clock: &clock, step: time.Second, left: 100}, now)
	if _, err := io.ReadAll(slow); !errors.Is(err, errSlowBody) {
		t.Fatalf("a byte a second: %v", err)
	}
	clock = time.Unix(0, 0)
	fast := newBodyReader(httptest.NewRecorder(), strings.NewReader(strings.Repeat("x", 1<<20)), now)
	if b, err := io.ReadAll(fast); err != nil || len(b) != 1<<20 {
		t.Fatalf("a steady body: %d bytes, %v", len(b), err)
	}
}

// TestMaxBodyBytesCapsEveryLimit: a body over MaxBodyBytes is a 413 even
// with writeSizeLimit=unlimited, declared or not.
func TestMaxBodyBytesCapsEveryLimit(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.MaxBodyBytes = 1 << 10 })
	body := `"` + strings.Repeat("x", 2<<10) + `"`
	r := h.do(req{method: "PUT", path: "/x.json?writeSizeLimit=unlimited", body: str(body)})
	if r.status != 413 {
		t.Fatalf("a 2 KiB body over a 1 KiB cap: %d %s", r.status, r.body)
	}
	if r := h.do(req{method: "PUT", path: "/x.json?writeSizeLimit=unlimited", body: str(`"small"`)}); r.status != 200 {
		t.Fatalf("a small body: %d", r.status)
	}
}

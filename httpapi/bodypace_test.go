package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
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
// with writeSizeLimit=unlimited, declared or not, naming the limit and
// the way out; over a lower write size limit the 413 is Firebase's.
func TestMaxBodyBytesCapsEveryLimit(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.MaxBodyBytes = 1 << 10 })
	body := `"` + strings.Repeat("x", 2<<10) + `"`
	const way = ". Send it as several PATCHes of a part each, or load a whole database with `arbor restore`."
	const firebase = "Error: WRITE_TOO_BIG: Data to write exceeds the maximum size that can be modified with a single request: "
	r := h.do(req{method: "PUT", path: "/x.json?writeSizeLimit=unlimited", body: str(body)})
	if want := errBody(firebase + "this write's body is 2050 bytes of JSON, and one write carries at most 1024 bytes" + way); r.status != 413 || r.body != want {
		t.Fatalf("a declared 2 KiB body over a 1 KiB cap: %d %s, want %s", r.status, r.body, want)
	}
	// Without a declared length (chunked), refused once read past the cap.
	hr, err := http.NewRequest("PUT", h.ts.URL+"/x.json?writeSizeLimit=unlimited", io.MultiReader(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+adminSecret)
	resp, err := http.DefaultTransport.RoundTrip(hr)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := errBody(firebase + "this write's body is over 1024 bytes of JSON, and one write carries at most 1024 bytes" + way); resp.StatusCode != 413 || string(got) != want {
		t.Fatalf("an undeclared 2 KiB body over a 1 KiB cap: %d %s, want %s", resp.StatusCode, got, want)
	}
	big := newHarness(t, nil, func(c *Config) { c.MaxBodyBytes = 1 << 20 })
	if r := big.do(req{method: "PUT", path: "/x.json?writeSizeLimit=tiny", body: str(strings.Repeat(" ", 70<<10) + "1")}); r.status != 413 || r.body != errBody(tree.MsgWriteTooBig) {
		t.Fatalf("a body over writeSizeLimit=tiny: %d %s", r.status, r.body)
	}
	if r := h.do(req{method: "PUT", path: "/x.json?writeSizeLimit=unlimited", body: str(`"small"`)}); r.status != 200 {
		t.Fatalf("a small body: %d", r.status)
	}
}

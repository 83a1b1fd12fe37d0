package realtime

import (
	"testing"
)

// TestWriteOfUnknownOutcomeIsResent: a set whose answer was lost with
// the leader is proposed again and answered ok; an increment, which would
// count twice, is answered unavailable and applied once.
func TestWriteOfUnknownOutcomeIsResent(t *testing.T) {
	r := newRig(t, nil)
	c := r.dial()
	r.db.lostAnswers.Store(1)
	if st, _, _ := c.do("p", map[string]any{"p": "/x", "d": map[string]any{"v": 1, "at": map[string]any{".sv": "timestamp"}}}); st != "ok" {
		t.Fatalf("a set of unknown outcome: %s, want ok once proposed again", st)
	}
	if st, _, _ := c.do("m", map[string]any{"p": "/x", "d": map[string]any{"w": 2}}); st != "ok" {
		t.Fatalf("an update: %s", st)
	}
	r.db.lostAnswers.Store(1)
	if st, _, _ := c.do("m", map[string]any{"p": "/x", "d": map[string]any{"n": map[string]any{".sv": map[string]any{"increment": 1}}}}); st != "unavailable" {
		t.Fatalf("an increment of unknown outcome: %s, want unavailable", st)
	}
	st, data, _ := c.do("g", map[string]any{"p": "/x", "q": map[string]any{}})
	if st != "ok" {
		t.Fatalf("get: %s", st)
	}
	got := data.(map[string]any)
	if got["v"] != float64(1) || got["w"] != float64(2) || got["n"] != float64(1) {
		t.Fatalf("stored %v, want v 1, w 2 and the increment applied once", got)
	}
}

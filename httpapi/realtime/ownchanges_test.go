package realtime

import (
	"testing"
	"time"
)

// TestWriteThatChangesNothingIsAnsweredAtOnce: a write under a listen
// waits for its own changes to reach the listens before its ok; a write
// that changes nothing has none, and must not wait for them until the
// bound (ownChangesWait) runs out.
func TestWriteThatChangesNothingIsAnsweredAtOnce(t *testing.T) {
	r := newRig(t, nil)
	r.db.lagFeeds(10 * time.Millisecond) // as a follower's feeds lag
	c := r.dial()
	if st, _, _ := c.do("p", map[string]any{"p": "/same", "d": 1}); st != "ok" {
		t.Fatalf("first write: %s", st)
	}
	if st, _, _ := c.do("q", map[string]any{"p": "/same", "h": ""}); st != "ok" {
		t.Fatalf("listen: %s", st)
	}
	for i := range 3 {
		start := time.Now()
		if st, _, _ := c.do("p", map[string]any{"p": "/same", "d": 1}); st != "ok" {
			t.Fatalf("write %d of the same value: %s", i, st)
		}
		if took := time.Since(start); took >= ownChangesWait/2 {
			t.Fatalf("write %d of the same value answered after %s: it waited for changes it has none of", i, took)
		}
	}
}

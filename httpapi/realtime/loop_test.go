package realtime

import (
	"runtime"
	"testing"
	"time"
)

// An idle session holds one goroutine, its reader: the loop and the
// writer run only while they have work, and end after it. The test's
// client holds one more per connection (its reader).
func TestIdleSessionHoldsOneGoroutine(t *testing.T) {
	r := newRig(t, nil)
	r.dial() // the first connection starts the server's own goroutines
	base := runtime.NumGoroutine()
	const conns = 20
	for i := range conns {
		c := r.dial()
		if st, _, _ := c.do("q", map[string]any{"p": "/idle/" + itoa(i), "h": ""}); st != statusOK {
			t.Fatalf("listen %d: %s", i, st)
		}
	}
	if err := r.db.set("/idle/3", `"changed"`); err != nil { // a change wakes one loop, which ends after it
		t.Fatal(err)
	}
	want := base + 2*conns
	got := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = runtime.NumGoroutine(); got <= want {
			return
		}
	}
	t.Fatalf("%d goroutines for %d idle connections, want at most %d (%d before them, two per connection)", got, conns, want, base)
}

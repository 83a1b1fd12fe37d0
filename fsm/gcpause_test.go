package fsm

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestLargeCommandAppliedWithTheCollectorPaused: the garbage collector is
// held off exactly while a chunked command is applied (its last chunk),
// and turned back on as it was.
func TestLargeCommandAppliedWithTheCollectorPaused(t *testing.T) {
	var paused, resumed int
	gcPause = func() func() {
		paused++
		return func() { resumed++ }
	}
	t.Cleanup(func() { gcPause = pauseGC })
	c, _ := parsedTwin(cmd(t, CmdSet, "/big", `"`+strings.Repeat("x", 5000)+`"`))
	f := New()
	logs := chunkLogs(ChunkID{7}, c.EncodeParsed(), 1000, 1, 1)
	for i, l := range logs {
		if r := f.Apply(l); r.Err != nil {
			t.Fatalf("chunk %d: %v", i, r.Err)
		}
		if want := i / (len(logs) - 1); paused != want || resumed != want {
			t.Fatalf("after chunk %d of %d: paused %d, resumed %d times", i+1, len(logs), paused, resumed)
		}
	}
	if f.Apply(Entry{Index: 100, Term: 1, Command: true, Data: c.EncodeParsed()}).Err != nil || paused != 1 {
		t.Fatalf("a command of one entry paused the collector (%d)", paused)
	}
}

// TestPauseGCRestores: pauseGC turns collection off and its resume
// restores the setting it found.
func TestPauseGCRestores(t *testing.T) {
	orig := debug.SetGCPercent(150)
	defer debug.SetGCPercent(orig)
	resume := pauseGC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("while paused GC percent is %d", got)
	}
	resume()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("after resume GC percent is %d, want 150", got)
	}
}

package main

import (
	"io"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, maxGCPercent},
		{1 << 20, maxGCPercent},                // 64 MiB over 1 MiB would be 6400
		{16 << 20, 400},                        // 64 MiB over 16 MiB
		{32 << 20, 200},                        // 64 MiB over 32 MiB
		{minGCHeadroom, 100},                   // from here on, Go's default
		{1 << 30, 100},                         // never below it
		{(minGCHeadroom * 100 / 150) + 1, 150}, // rounded up, not down
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

func TestGCHeadroomFollowsTheLiveHeap(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if h := keepGCHeadroom(func(string) (string, bool) { return "50", true }, quiet); h != nil {
		t.Fatal("started although the operator set GOGC")
	}
	h := keepGCHeadroom(func(string) (string, bool) { return "", false }, quiet)
	defer h.stop()
	// This test process holds far less than minGCHeadroom, so the floor
	// must lift GOGC above 100 once a collection has run.
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		metrics.Read(gogc)
		if got := gogc[0].Value.Uint64(); got > 100 {
			h.mu.Lock()
			set := h.percent
			h.mu.Unlock()
			if int(got) != set {
				t.Fatalf("GOGC %d, but the floor last set %d", got, set)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after collections", gogc[0].Value.Uint64())
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.stop()
	metrics.Read(gogc)
	if got := gogc[0].Value.Uint64(); got != 100 {
		t.Fatalf("GOGC %d after stop, want 100", got)
	}
}

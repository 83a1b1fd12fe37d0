package main

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"
)

// releaseMemoryOnceReady waits until ready first answers nil, then runs a
// full collection and returns the freed pages to the operating system,
// once. Replaying a long log at start-up (after a kill -9) leaves the heap
// goal at twice the live data of the replay's peak, so without this a
// freshly restarted node shows far more RSS than its data needs until
// enough allocation happens to trigger the next cycles. It gives up when
// ctx ends; polling stops after maxWait.
func releaseMemoryOnceReady(ctx context.Context, ready func(context.Context) error, logger *slog.Logger, poll, maxWait time.Duration) {
	deadline := time.Now().Add(maxWait)
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, poll)
		err := ready(rctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	logger.Info("caught up: returned unused memory to the OS",
		"heap_live_mb", after.HeapAlloc>>20, "released_mb", (after.HeapReleased-min(after.HeapReleased, before.HeapReleased))>>20,
		"took", time.Since(start).Round(time.Millisecond))
}

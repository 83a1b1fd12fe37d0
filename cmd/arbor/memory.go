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
//
// This release comes after the replay; it is the memory limit that keeps
// the replay itself from doubling the heap. applyMemoryLimit sets one
// before the log is opened (from GOMEMLIMIT, --memory-limit or the
// container's cgroup limit), and under it the collector runs as often as
// it must to hold the heap below the limit instead of letting the goal
// reach twice the live data. scripts/bench/leaves.sh (1,000,000 leaves,
// n3 killed with SIGKILL and restarted; docs/PERFORMANCE.md, "Memory and
// restart"): the replaying node's peak RSS was 380 MB with --memory-limit
// 350MiB and 428 MB with 400MiB, against 447 MB without a limit (about
// twice the 225 MB of a node restarted from a snapshot); a limit this
// close to the live data costs replay time (ready in 4.2 s instead of
// 2.6 s), which the default share of a container sized to the data does
// not. Without any limit (no container limit, no flag) only this release
// helps.
func releaseMemoryOnceReady(ctx context.Context, ready func(context.Context) error, logger *slog.Logger, poll, maxWait time.Duration) {
	if !waitUntilReady(ctx, ready, poll, maxWait) {
		return
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

// waitUntilReady polls ready every poll until it first answers nil (true),
// ctx ends or maxWait passes (false).
func waitUntilReady(ctx context.Context, ready func(context.Context) error, poll, maxWait time.Duration) bool {
	deadline := time.Now().Add(maxWait)
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, poll)
		err := ready(rctx)
		cancel()
		if err == nil {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-ticker.C:
		}
	}
}

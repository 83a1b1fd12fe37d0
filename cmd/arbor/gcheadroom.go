package main

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector's headroom floor. With Go's default GOGC=100 the heap may
// grow by as much as is live before the next collection, so a node
// holding 20 MB collects after every 20 MB allocated: at thousands of
// writes a second, each allocating a few KB on every replica, that is
// many collections a second, and the marking competes with the fsync
// pipeline for the CPU. A node instead lets the heap grow
// by at least minGCHeadroom over what is live: above minGCHeadroom of
// live data that is Go's default GOGC=100, below it GOGC rises, up to
// maxGCPercent. The cost is at most minGCHeadroom of memory more than
// GOGC=100 would use; the memory limit (applyMemoryLimit) still bounds
// the whole. An operator's GOGC wins. docs/PERFORMANCE.md ("The
// collector's headroom") has the measurements.
const (
	minGCHeadroom = 64 << 20
	maxGCPercent  = 800
)

// gcPercentFor is the GOGC that leaves live bytes of heap at least
// minGCHeadroom to grow into, never below Go's default of 100 and never
// above maxGCPercent.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := (uint64(minGCHeadroom)*100 + live - 1) / live
	return int(min(max(p, 100), maxGCPercent))
}

// gcHeadroom re-sets GOGC after every collection from the live heap that
// collection found. It runs on the runtime's cleanup goroutine: each
// collection frees the sentinel that the previous retune allocated.
type gcHeadroom struct {
	mu      sync.Mutex // guards what follows; orders retune and stop
	stopped bool
	percent int // the GOGC last set
	sample  []metrics.Sample
}

// gcSentinel is the object whose collection marks a finished GC cycle. It
// holds a pointer and is larger than 16 bytes, so the runtime never puts
// it in a tiny block, whose cleanups may never run.
type gcSentinel struct {
	_ *byte
	_ [16]byte
}

// keepGCHeadroom starts the headroom floor unless the operator set GOGC,
// and returns it (nil when not started).
func keepGCHeadroom(lookupEnv func(string) (string, bool), logger *slog.Logger) *gcHeadroom {
	if v, ok := lookupEnv("GOGC"); ok && v != "" {
		logger.Info("GOGC set by the operator; the collector's headroom floor is off", "gogc", v)
		return nil
	}
	h := &gcHeadroom{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	h.percent = 100
	h.arm()
	logger.Info("collector headroom: the heap may grow by at least this much over the live data before a collection",
		"min_headroom_mb", minGCHeadroom>>20, "max_gogc", maxGCPercent)
	return h
}

// arm allocates the next sentinel, whose cleanup retunes after the
// collection that frees it.
func (h *gcHeadroom) arm() {
	runtime.AddCleanup(new(gcSentinel), func(h *gcHeadroom) {
		if h.retune() {
			h.arm()
		}
	}, h)
}

// retune sets GOGC for the live heap of the last collection. It reports
// false once stopped.
func (h *gcHeadroom) retune() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false
	}
	metrics.Read(h.sample)
	if h.sample[0].Value.Kind() != metrics.KindUint64 {
		return true
	}
	p := gcPercentFor(h.sample[0].Value.Uint64())
	if p != h.percent {
		h.percent = p
		debug.SetGCPercent(p)
	}
	return true
}

// stop ends the retuning and puts GOGC back to Go's default.
func (h *gcHeadroom) stop() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped {
		h.stopped = true
		debug.SetGCPercent(100)
	}
}

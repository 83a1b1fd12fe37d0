package fsm

import "runtime/debug"

// pauseGC turns the garbage collector off and returns the function that
// turns it back on as it was. A large command holds the serial apply loop
// while it allocates a few hundred bytes per key, and collecting during it
// (mark assists on the apply goroutine, mark workers on the other cores)
// lengthened the wait of every write behind it: a million-key PATCH on
// three nodes sharing two cores stalled others 0.71–0.74 s with the
// default GOGC, 0.44–0.62 s with the collector held off (docs/RELIABILITY.md).
// The collection runs right after, concurrently. What a command may
// allocate meanwhile is bounded by the command size limit, and the memory
// limit (GOMEMLIMIT, --memory-limit, or the container's) still triggers
// a collection.
func pauseGC() (resume func()) {
	prev := debug.SetGCPercent(-1)
	return func() { debug.SetGCPercent(prev) }
}

// gcPause is pauseGC, replaced by tests.
var gcPause = pauseGC

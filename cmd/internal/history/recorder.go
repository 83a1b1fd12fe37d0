package history

import (
	"slices"
	"sync"
	"time"
)

// Recorder collects the operations of concurrent clients. Times come from
// one monotonic clock started with the recorder, so intervals of
// different clients are comparable.
type Recorder struct {
	start time.Time

	mu  sync.Mutex
	ops []Op
}

// NewRecorder returns an empty recorder whose clock starts now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now()}
}

// Now is the time since the recorder started, in nanoseconds.
func (r *Recorder) Now() int64 {
	return time.Since(r.start).Nanoseconds()
}

// Add records a finished operation and returns its id.
func (r *Recorder) Add(op Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = len(r.ops)
	r.ops = append(r.ops, op)
	return op.ID
}

// Ops returns a copy of the operations recorded so far, in the order they
// were added.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

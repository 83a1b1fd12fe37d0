package realtime

import "sync"

// outbox is a session's queue of messages for the client. It is bounded
// in bytes: a client that does not read lets the queue grow, and is cut
// off when it passes Config.MaxOutboundBytes, so a stalled client never
// holds more than that of the node's memory nor slows anyone else.
//
// A writer goroutine runs only while there is something to write: it is
// started by the push that finds none running and ends when the queue is
// empty, so an idle connection holds no goroutine (nor its stack) for
// writing. At most one runs at a time, which keeps the messages' order.
type outbox struct {
	limit int64
	write func(msg []byte) error // writes one message, framed

	mu      sync.Mutex
	queue   [][]byte
	queued  int64
	writing bool   // a writer goroutine is running
	full    bool   // over the bound, or a write failed: nothing more is taken
	failed  func() // told that a write failed
	guard   func() // deferred by the writer goroutine (recovers a panic)
}

// newOutbox returns an outbox of limit bytes whose messages write
// writes; failed is called when a write fails, and guard is deferred by
// each writer goroutine.
func newOutbox(limit int64, write func([]byte) error, failed, guard func()) *outbox {
	return &outbox{limit: limit, write: write, failed: failed, guard: guard}
}

// push queues msg and reports false when the queue is over its bound
// (the session must then be cut off). A message larger than the bound
// is taken when nothing else waits, so one large answer is never refused
// for its size alone.
func (o *outbox) push(msg []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.full {
		return false
	}
	if o.queued > 0 && o.queued+int64(len(msg)) > o.limit {
		o.full, o.queue, o.queued = true, nil, 0
		return false
	}
	o.queue = append(o.queue, msg)
	o.queued += int64(len(msg))
	if !o.writing {
		o.writing = true
		go o.drain()
	}
	return true
}

// drain writes queued messages until the queue is empty or a write
// fails. The messages taken count against the bound until written.
func (o *outbox) drain() {
	defer o.guard()
	for {
		o.mu.Lock()
		batch := o.queue
		o.queue = nil
		if len(batch) == 0 || o.full {
			o.writing = false
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		for _, msg := range batch {
			if err := o.write(msg); err != nil {
				o.mu.Lock()
				o.full, o.queue, o.queued, o.writing = true, nil, 0, false
				o.mu.Unlock()
				o.failed()
				return
			}
			o.mu.Lock()
			if !o.full {
				o.queued -= int64(len(msg))
			}
			o.mu.Unlock()
		}
	}
}

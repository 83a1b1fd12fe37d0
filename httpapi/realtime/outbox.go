package realtime

import (
	"context"
	"sync"

	"github.com/coder/websocket"
)

// outbox is a session's queue of messages for the client, written by one
// goroutine. It is bounded in bytes: a client that does not read lets
// the queue grow, and is cut off when it passes Config.MaxOutboundBytes,
// so a stalled client never holds more than that of the node's memory
// nor slows anyone else.
type outbox struct {
	limit int64

	mu     sync.Mutex
	queue  [][]byte
	queued int64
	wake   chan struct{} // signalled (non-blocking) when a message is queued
	full   bool
}

func newOutbox(limit int64) *outbox {
	return &outbox{limit: limit, wake: make(chan struct{}, 1)}
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
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return true
}

// take removes and returns the queued messages; they count against the
// bound until sent says they were written.
func (o *outbox) take() [][]byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queue
	o.queue = nil
	return q
}

// sent records that a message of n bytes was written.
func (o *outbox) sent(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.full {
		o.queued -= int64(n)
	}
}

// writeLoop writes queued messages, framed, until ctx ends or a write
// fails (then it reports the error to fail). A write blocked on a client
// that stopped reading ends when ctx does: the library closes the
// connection then.
func (o *outbox) writeLoop(ctx context.Context, conn *websocket.Conn, s *session) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		}
		for _, msg := range o.take() {
			for _, f := range splitFrames(msg) {
				wctx, cancel := context.WithTimeout(ctx, s.srv.cfg.WriteTimeout)
				err := conn.Write(wctx, websocket.MessageText, f)
				cancel()
				if err != nil {
					s.end(errWriteFailed)
					return
				}
			}
			o.sent(len(msg))
		}
	}
}

package httpapi

import "context"

// A realtime client's write is answered only once the node's hub has
// routed the write's events, so that the client's own listens carry the
// new data before its ok. The Firebase SDKs rely on that order: on the ok
// they drop their local copy of the write and show the server's data,
// which would otherwise still be the old value for a moment (a follower
// applies a write it forwarded only after the leader has answered it).

// markDelivered records that the events of every entry up to applied
// were routed (entries that changed nothing included) and wakes the
// waiters. h.mu is held.
func (h *hub) markDelivered(applied uint64) {
	h.delivered = max(h.delivered, applied)
	h.wakeDeliveredLocked()
}

// wakeDeliveredLocked wakes every waitDelivered. h.mu is held.
func (h *hub) wakeDeliveredLocked() {
	if h.deliveredCh != nil {
		close(h.deliveredCh)
		h.deliveredCh = nil
	}
}

// waitDelivered returns once the events of every entry up to index have
// been routed to their subscribers, or when ctx ends or the hub closes.
func (h *hub) waitDelivered(ctx context.Context, index uint64) error {
	for {
		h.mu.Lock()
		if h.delivered >= index {
			h.mu.Unlock()
			return nil
		}
		if h.closed {
			h.mu.Unlock()
			return errStreamsClosed
		}
		if h.deliveredCh == nil {
			h.deliveredCh = make(chan struct{})
		}
		ch := h.deliveredCh
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

package httpapi

import (
	"context"
	"errors"
	"sync"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
	"github.com/arbordb/arbor/httpapi/realtime"
)

// The realtime protocol's listens are the hub's second kind of
// subscriber. A listen's subscription is judged and routed as a stream's
// is; after each batch that concerned it, still on the apply goroutine
// where the node's state is the one right after that batch, the changes
// it was handed become one realtime.Change, with the location's value and
// indexes read then (O(depth), as a query stream's capture).

// feedCaptureCost is what one pending change counts against a feed's
// budget beyond its values: the captured version of the location keeps
// the copied path of its tree alive.
const feedCaptureCost = queryCaptureCost

// realtimeEvents is the hub as realtime.Events.
type realtimeEvents struct{ s *Server }

// Subscribe implements realtime.Events.
func (e realtimeEvents) Subscribe(loc tree.Path, as *fsm.Access, wake func()) (realtime.Feed, error) {
	s := e.s
	f := &feed{s: s, loc: loc, wake: wake, budget: int64(s.cfg.StreamBufferBytes)}
	var judge func() (bool, bool)
	if as != nil {
		judge = func() (bool, bool) {
			a := *as
			a.Now = s.cfg.Now().UnixMilli()
			res, err := s.db.Read(context.Background(), fsm.Read{Path: loc, Access: &a, Watch: true})
			return !errors.Is(err, fsm.ErrPermissionDenied), res.AccessFixed
		}
	}
	f.sub = newSubscriber(loc, s.cfg.StreamBufferBytes, judge)
	f.sub.batchEnd = f.capture
	f.sub.notify = wake
	if !s.hub.subscribe(f.sub) {
		return nil, errStreamsClosed
	}
	s.metrics.realtimeListens.Inc()
	return f, nil
}

// WaitDelivered implements realtime.Events.
func (e realtimeEvents) WaitDelivered(ctx context.Context, index uint64) error {
	return e.s.hub.waitDelivered(ctx, index)
}

// feed is one listen's subscription.
type feed struct {
	s      *Server
	loc    tree.Path
	sub    *subscriber
	wake   func()
	budget int64

	mu      sync.Mutex
	pending []realtime.Change
	held    int64
	ended   bool // the end was taken
	closed  bool
}

// capture turns the changes the hub queued for this batch into one
// Change. It runs on the apply goroutine, under the hub's lock, right
// after the batch's events were routed.
func (f *feed) capture() {
	frames := f.sub.take()
	if len(frames) == 0 {
		return
	}
	res, err := f.s.db.Read(context.Background(), fsm.Read{Path: f.loc})
	if err != nil {
		f.sub.finish("")
		return
	}
	c := realtime.Change{Index: frames[len(frames)-1].index, Value: res.Value, Indexes: res.Indexes}
	cost := int64(feedCaptureCost)
	for _, fr := range frames {
		ch := fr.change
		p := append(append(tree.Path{}, f.loc...), ch.rel...)
		if ch.patch {
			c.Events = append(c.Events, fsm.Event{Index: fr.index, Kind: fsm.EventPatch, Path: p, Fields: ch.fields})
		} else {
			c.Events = append(c.Events, fsm.Event{Index: fr.index, Kind: fsm.EventPut, Path: p, Value: ch.value})
		}
		cost += int64(ch.size)
	}
	f.mu.Lock()
	over := f.held+cost > f.budget
	if !over {
		f.pending = append(f.pending, c)
		f.held += cost
	}
	f.mu.Unlock()
	if over {
		f.sub.tooSlow()
		return
	}
	f.wake()
}

// Take implements realtime.Feed: the changes so far, then the end.
func (f *feed) Take() []realtime.Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.pending
	f.pending, f.held = nil, 0
	if len(out) > 0 || f.ended {
		return out
	}
	select {
	case <-f.sub.done:
	default:
		return nil
	}
	f.ended = true
	end := realtime.EndShutdown
	switch f.sub.reason {
	case tree.MsgPermission:
		end = realtime.EndDenied
	case msgTooSlow:
		end = realtime.EndTooSlow
	}
	return []realtime.Change{{End: end}}
}

// Close implements realtime.Feed.
func (f *feed) Close() {
	f.mu.Lock()
	closed := f.closed
	f.closed = true
	f.mu.Unlock()
	if !closed {
		f.s.metrics.realtimeListens.Dec()
		f.s.hub.unsubscribe(f.sub)
		f.sub.finish("")
	}
}

package httpapi

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// The stream hub (SPEC §5): change events of the applied log, in commit
// order, queued for each subscriber they concern as changes relative to
// its location. Subscribers are indexed by path in a trie, so an event
// reaches the subscribers at, above and below its path without looking at
// any other (10,000 streams on unrelated paths cost little per write).
// Publish runs on the state machine's apply goroutine and never blocks: it
// renders nothing (a change is rendered by the first subscriber that sends
// it, for all), and a subscriber whose queue would pass its byte budget is
// cancelled instead.
//
// Every frame a subscriber is handed was readable by it in the state right
// after the batch of entries that made it, under the rules in force then:
// publish runs while that state is the node's current one, so a reader
// whose permission could depend on the data or the time is judged there,
// once per batch that concerns it, and a batch that changes the rules
// judges every reader. A reader found denied is cancelled before the
// batch's frames reach it, and nothing later is queued for it.

// subscriber is one open stream.
type subscriber struct {
	path   tree.Path
	budget int // bytes of queued frames allowed
	// judge reads the stream's location as its reader in the node's
	// current state: whether it may, and whether that verdict is fixed
	// (fsm.ReadResult.AccessFixed). nil for an admin.
	judge func() (allowed, fixed bool)

	// Guarded by the hub's lock: dynamic is true while the reader's
	// permission could change with the data (it is judged per batch);
	// judged is the batch it was last judged in, with that verdict.
	dynamic  bool
	judged   uint64
	admitted bool

	mu       sync.Mutex
	queue    []frame
	queued   int
	wake     chan struct{} // signalled (non-blocking) when frames arrive
	recheck  chan struct{} // signalled (non-blocking) when the rules change
	done     chan struct{} // closed when the stream must end
	reason   string        // why it ended, for a cancel frame ("" on shutdown)
	finished bool
	// cut (a func()) makes the stream's blocked write fail at once.
	cut atomic.Value
	// dropped counts the streams cancelled for falling behind; nil in
	// tests that need no metrics.
	dropped prometheus.Counter

	// A realtime listen's (realtimefeed.go): batchEnd runs under the
	// hub's lock after each batch that queued it anything, and notify
	// (never blocking) whenever it should look at its feed.
	batchEnd func()
	notify   func()
	touched  uint64 // the last batch that queued it anything; hub's lock
}

// push queues f, or cancels the subscriber when it is over budget.
func (s *subscriber) push(f frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	if s.queued+f.size() > s.budget {
		s.tooSlowLocked()
		return
	}
	s.queue = append(s.queue, f)
	s.queued += f.size()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take removes and returns the queued frames.
func (s *subscriber) take() []frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue, s.queued = nil, 0
	return q
}

// finish ends the stream; reason is sent as a cancel frame when not empty.
func (s *subscriber) finish(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishLocked(reason)
}

// tooSlowLocked ends a stream that fell behind its budget. If its loop
// is blocked writing to a client that stopped reading, the write is cut
// short (on a goroutine of its own: publish must never wait on a
// connection), which frees what the stream holds at once.
func (s *subscriber) tooSlowLocked() {
	if s.finished {
		return
	}
	s.finishLocked(msgTooSlow)
	if s.dropped != nil {
		s.dropped.Inc()
	}
	if cut, _ := s.cut.Load().(func()); cut != nil {
		go cut()
	}
}

// tooSlow is tooSlowLocked for a caller that does not hold s.mu.
func (s *subscriber) tooSlow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tooSlowLocked()
}

func (s *subscriber) finishLocked(reason string) {
	if s.finished {
		return
	}
	s.finished, s.reason = true, reason
	close(s.done)
	if s.notify != nil {
		go s.notify() // not under s.mu: the listen takes it to read its feed
	}
}

// trieNode holds the subscribers of one path and its children's nodes.
type trieNode struct {
	subs     map[*subscriber]struct{}
	children map[string]*trieNode
}

// newSubscriber returns a stream's subscription at path, not yet
// registered; judge is nil for an admin. Until the stream knows better
// (hub.settle), its reader is judged on every batch.
func newSubscriber(path tree.Path, budget int, judge func() (bool, bool)) *subscriber {
	return &subscriber{path: path, budget: budget, judge: judge, dynamic: judge != nil,
		wake: make(chan struct{}, 1), recheck: make(chan struct{}, 1), done: make(chan struct{})}
}

// hub fans the applied log's events out to subscribers.
type hub struct {
	mu      sync.Mutex
	root    trieNode
	count   int
	closed  bool
	batch   uint64        // batches published
	rulesAt uint64        // log index of the last rules change published
	ended   []*subscriber // realtime listens the batch being published queued anything for
	recent  history       // for resumes (streamresume.go)
	// detached are the HTTP/1.1 streams on connections of their own
	// (streamconn.go).
	detached detachedStreams
	// delivered is the highest log index whose events were routed, and
	// deliveredCh (made by a waiter, closed by publish) wakes the writes
	// waiting for it (hubdelivered.go).
	delivered   uint64
	deliveredCh chan struct{}
}

// subscribeSince registers s and returns the recent events after index,
// atomically with the registration so that none is missed or sent twice;
// inHistory is false when the history does not reach back to index.
// rulesAt is the log index of the last rules change known then.
func (h *hub) subscribeSince(s *subscriber, index uint64) (missed []fsm.Event, inHistory bool, rulesAt uint64, open bool) {
	open = h.subscribeLocked(s, func() { missed, inHistory = h.recent.since(index); rulesAt = h.rulesAt })
	return missed, inHistory, rulesAt, open
}

// subscribe registers s; it reports false once the hub is closed.
func (h *hub) subscribe(s *subscriber) bool { return h.subscribeLocked(s, nil) }

// subscribeLocked registers s and runs also (if any) under the same lock.
func (h *hub) subscribeLocked(s *subscriber, also func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	n := &h.root
	for _, k := range s.path {
		if n.children == nil {
			n.children = map[string]*trieNode{}
		}
		c := n.children[k]
		if c == nil {
			c = &trieNode{}
			n.children[k] = c
		}
		n = c
	}
	if n.subs == nil {
		n.subs = map[*subscriber]struct{}{}
	}
	n.subs[s] = struct{}{}
	h.count++
	if also != nil {
		also()
	}
	return true
}

// settle records what the stream's first read found: a fixed verdict
// spares s the judging of every batch, unless the rules changed after
// that read (whose state was at index), when the change judged it anew.
func (h *hub) settle(s *subscriber, fixed bool, index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.judge != nil && h.rulesAt <= index {
		s.dynamic = !fixed
	}
}

// unsubscribe removes s and prunes the trie.
func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var remove func(n *trieNode, p tree.Path) bool
	remove = func(n *trieNode, p tree.Path) bool {
		if len(p) == 0 {
			if _, ok := n.subs[s]; ok {
				delete(n.subs, s)
				h.count--
			}
		} else if c := n.children[p[0]]; c != nil && remove(c, p[1:]) {
			delete(n.children, p[0])
		}
		return len(n.subs) == 0 && len(n.children) == 0
	}
	remove(&h.root, s.path)
}

// close ends every stream (the node is shutting down) and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.root.each(func(s *subscriber) { s.finish("") })
	h.wakeDeliveredLocked()
}

// each calls fn for every subscriber at or below n.
func (n *trieNode) each(fn func(*subscriber)) {
	for s := range n.subs {
		fn(s)
	}
	for _, c := range n.children {
		c.each(fn)
	}
}

// credentialsChanged asks every stream to check that its credential is
// still trusted.
func (h *hub) credentialsChanged() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.root.each(func(s *subscriber) {
		select {
		case s.recheck <- struct{}{}:
		default:
		}
	})
}

// rejudgeAll judges every reader in the current state, after a batch that
// changed the rules: those denied now are cancelled, the others learn
// whether their verdict is fixed under the new rules.
func (h *hub) rejudgeAll() {
	h.root.each(func(s *subscriber) {
		if s.judge == nil {
			return
		}
		allowed, fixed := s.judge()
		s.judged, s.admitted, s.dynamic = h.batch, allowed, !fixed
		if !allowed {
			s.finish(tree.MsgPermission)
		}
	})
}

// admitted is admit for a caller outside publish, right after it: a query
// stream's captures are judged with the batch that made them.
func (h *hub) admitted(s *subscriber) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.admit(s)
}

// admit reports whether s may be handed this batch's frames, judging it
// once per batch if its permission could have changed; a reader judged
// denied is cancelled.
func (h *hub) admit(s *subscriber) bool {
	if !s.dynamic {
		return true
	}
	if s.judged != h.batch {
		allowed, _ := s.judge()
		s.judged, s.admitted = h.batch, allowed
		if !allowed {
			s.finish(tree.MsgPermission)
		}
	}
	return s.admitted
}

// publish delivers the events of one batch of applied entries, in order.
// It runs while the state after the batch is the node's current one, so
// that readers are judged against it (see the top of this file).
func (h *hub) publish(applied uint64, events []fsm.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(events) == 0 {
		h.markDelivered(applied)
		return
	}
	h.batch++
	rules := false
	for i := range events {
		if events[i].Kind == fsm.EventRules {
			rules, h.rulesAt = true, events[i].Index
		}
	}
	if rules {
		h.rejudgeAll()
	}
	for i := range events {
		if events[i].Kind == fsm.EventRules {
			continue
		}
		h.recent.add(events[i])
		h.deliver(&events[i])
	}
	for _, s := range h.ended {
		s.batchEnd()
	}
	h.ended = h.ended[:0]
	h.markDelivered(applied)
}

// deliver sends e to the subscribers it concerns: those at or above its
// path (the change is inside their location) and those below it (their
// location changed with it).
func (h *hub) deliver(e *fsm.Event) {
	n := &h.root
	for depth := 0; ; depth++ {
		if len(n.subs) > 0 { // at or above the change: one rendering for all of them
			h.pushAll(n, frame{index: e.Index, change: eventChange(e, e.Path[depth:])})
		}
		if depth == len(e.Path) {
			break
		}
		if n = n.children[e.Path[depth]]; n == nil {
			return
		}
	}
	// n is the node of e.Path: subscribers strictly below it.
	switch e.Kind {
	case fsm.EventPut:
		for k, c := range n.children {
			h.deliverBelow(c, tree.Path{k}, e.Index, e.Value)
		}
	case fsm.EventPatch:
		for _, f := range e.Fields {
			h.deliverPatchField(n, f, e.Index)
		}
	}
}

// deliverPatchField sends field f of a PATCH to the subscribers strictly
// below the PATCH's location: those between it and the field's path get
// a put at the field's path relative to theirs; those at or below the
// field's path get their location's new value.
func (h *hub) deliverPatchField(n *trieNode, f tree.Field, index uint64) {
	for i, k := range f.Path {
		if n = n.children[k]; n == nil {
			return
		}
		if i == len(f.Path)-1 {
			break
		}
		if len(n.subs) > 0 {
			h.pushAll(n, frame{index: index, change: newPut(f.Path[i+1:], f.Value)})
		}
	}
	h.deliverBelow(n, nil, index, f.Value)
}

// deliverBelow sends every subscriber in n's subtree (n is rel below the
// changed location, whose new value is v) a put at its root.
func (h *hub) deliverBelow(n *trieNode, rel tree.Path, index uint64, v *tree.Node) {
	if len(n.subs) > 0 {
		h.pushAll(n, frame{index: index, change: newPut(nil, v.Get(rel))})
	}
	for k, c := range n.children {
		h.deliverBelow(c, append(rel[:len(rel):len(rel)], k), index, v)
	}
}

// pushAll queues f for every subscriber of n that may read it (frames
// are read-only, so they share it).
func (h *hub) pushAll(n *trieNode, f frame) {
	for s := range n.subs {
		if h.admit(s) {
			s.push(f)
			if s.batchEnd != nil && s.touched != h.batch {
				s.touched = h.batch
				h.ended = append(h.ended, s)
			}
		}
	}
}

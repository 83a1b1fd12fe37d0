package httpapi

import (
	"sync"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// The stream hub (SPEC §5): change events of the applied log, in commit
// order, turned into each subscriber's frames. Subscribers are indexed by
// path in a trie, so an event reaches the subscribers at, above and below
// its path without looking at any other (10,000 streams on unrelated paths
// cost little per write). Publish runs on the state machine's apply
// goroutine and never blocks: a subscriber whose queue would pass its byte
// budget is cancelled instead.

// frame is one server-sent event, rendered.
type frame struct {
	index uint64 // log index of the entry (0: not from the log)
	data  []byte
}

// subscriber is one open stream.
type subscriber struct {
	path   tree.Path
	budget int // bytes of queued frames allowed

	mu       sync.Mutex
	queue    []frame
	queued   int
	wake     chan struct{} // signalled (non-blocking) when frames arrive
	recheck  chan struct{} // signalled (non-blocking) when the rules change
	done     chan struct{} // closed when the stream must end
	reason   string        // why it ended, for a cancel frame ("" on shutdown)
	finished bool
}

// push queues f, or cancels the subscriber when it is over budget.
func (s *subscriber) push(f frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	if s.queued+len(f.data) > s.budget {
		s.finishLocked("Too slow: the stream fell behind; reconnect to start again")
		return
	}
	s.queue = append(s.queue, f)
	s.queued += len(f.data)
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

func (s *subscriber) finishLocked(reason string) {
	if s.finished {
		return
	}
	s.finished, s.reason = true, reason
	close(s.done)
}

// trieNode holds the subscribers of one path and its children's nodes.
type trieNode struct {
	subs     map[*subscriber]struct{}
	children map[string]*trieNode
}

// hub fans the applied log's events out to subscribers.
type hub struct {
	mu     sync.Mutex
	root   trieNode
	count  int
	closed bool
	recent history // for resumes (streamresume.go)
	// detached are the HTTP/1.1 streams on connections of their own
	// (streamconn.go).
	detached detachedStreams
}

// subscribeSince registers a stream at path and returns the recent events
// after index, atomically with the registration so that none is missed or
// sent twice; ok is false when the history does not reach back to index.
func (h *hub) subscribeSince(path tree.Path, budget int, index uint64) (s *subscriber, missed []fsm.Event, ok, open bool) {
	s, open = h.subscribeLocked(path, budget, func() { missed, ok = h.recent.since(index) })
	return s, missed, ok, open
}

// subscribe registers a stream at path; budget bounds its queue.
func (h *hub) subscribe(path tree.Path, budget int) (*subscriber, bool) {
	return h.subscribeLocked(path, budget, nil)
}

// subscribeLocked registers a stream at path and runs also (if any) under
// the same lock.
func (h *hub) subscribeLocked(path tree.Path, budget int, also func()) (*subscriber, bool) {
	s := &subscriber{path: path, budget: budget, wake: make(chan struct{}, 1), recheck: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	n := &h.root
	for _, k := range path {
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
	return s, true
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

// rulesChanged asks every stream to check that its reader may still read.
func (h *hub) rulesChanged() {
	h.root.each(func(s *subscriber) {
		select {
		case s.recheck <- struct{}{}:
		default:
		}
	})
}

// open is the number of open streams.
func (h *hub) open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// publish delivers the events of applied entries, in order.
func (h *hub) publish(events []fsm.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range events {
		if events[i].Kind == fsm.EventRules {
			h.rulesChanged()
			continue
		}
		h.recent.add(events[i])
		h.deliver(&events[i])
	}
}

// deliver sends e to the subscribers it concerns: those at or above its
// path (the change is inside their location) and those below it (their
// location changed with it).
func (h *hub) deliver(e *fsm.Event) {
	n := &h.root
	for depth := 0; ; depth++ {
		if len(n.subs) > 0 { // at or above the change: one rendering for all of them
			pushAll(n, frame{index: e.Index, data: eventFrame(e, e.Path[depth:])})
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
			deliverBelow(c, tree.Path{k}, e.Index, e.Value)
		}
	case fsm.EventPatch:
		for _, f := range e.Fields {
			deliverPatchField(n, f, e.Index)
		}
	}
}

// deliverPatchField sends field f of a PATCH to the subscribers strictly
// below the PATCH's location: those between it and the field's path get
// a put at the field's path relative to theirs; those at or below the
// field's path get their location's new value.
func deliverPatchField(n *trieNode, f tree.Field, index uint64) {
	for i, k := range f.Path {
		if n = n.children[k]; n == nil {
			return
		}
		if i == len(f.Path)-1 {
			break
		}
		if len(n.subs) > 0 {
			pushAll(n, frame{index: index, data: putFrame(f.Path[i+1:], f.Value)})
		}
	}
	deliverBelow(n, nil, index, f.Value)
}

// deliverBelow sends every subscriber in n's subtree (n is rel below the
// changed location, whose new value is v) a put at its root.
func deliverBelow(n *trieNode, rel tree.Path, index uint64, v *tree.Node) {
	if len(n.subs) > 0 {
		pushAll(n, frame{index: index, data: putFrame(nil, v.Get(rel))})
	}
	for k, c := range n.children {
		deliverBelow(c, append(rel[:len(rel):len(rel)], k), index, v)
	}
}

// pushAll queues f for every subscriber of n (frames are read-only, so
// they share it).
func pushAll(n *trieNode, f frame) {
	for s := range n.subs {
		s.push(f)
	}
}

// eventFrame renders e for a subscriber rel above the change.
func eventFrame(e *fsm.Event, rel tree.Path) []byte {
	if e.Kind == fsm.EventPatch {
		return patchFrame(rel, e.Fields)
	}
	return putFrame(rel, e.Value)
}

// putFrame is `event: put` with {"path": rel, "data": v}.
func putFrame(rel tree.Path, v *tree.Node) []byte {
	b := append([]byte("event: put\ndata: {\"path\":"), pathJSON(rel)...)
	b = append(b, `,"data":`...)
	b = tree.AppendJSON(b, v, tree.RenderOptions{})
	return append(b, "}\n\n"...)
}

// patchFrame is `event: patch` with the fields as a multi-path object.
func patchFrame(rel tree.Path, fields []tree.Field) []byte {
	b := append([]byte("event: patch\ndata: {\"path\":"), pathJSON(rel)...)
	b = append(b, `,"data":`...)
	b = tree.AppendFields(b, fields, tree.RenderOptions{})
	return append(b, "}\n\n"...)
}

// pathJSON renders a relative path as a JSON string ("/" for none).
func pathJSON(p tree.Path) []byte { return jsonStringBytes(p.String()) }

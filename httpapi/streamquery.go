package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// Query parameters on a stream (SPEC §5): a stream with orderBy, a limit, a
// range, equalTo or shallow=true serves the query's window. Its first
// frame is a put at "/" of exactly what a GET with the same query answers;
// after that, each batch of applied log entries that changes the stream's
// location is answered by re-running the query on the node's state right
// after that batch and sending the difference from the window last sent:
//
//   - nothing when the window did not change;
//   - a patch at "/" with the children that entered the window or changed
//     (each child's whole value; true under shallow) and null for those
//     that left it, in query order and then in the old window's order;
//   - a put at "/" of the whole window when it was or becomes a value that
//     is not a set of children (null, or a non-object location answered as
//     is by a query that only orders).
//
// So the client's copy always equals the query re-run at a log position,
// positions only move forward, and no change is skipped. A batch is what
// the state machine applied at once (fsm.FSM.ApplyBatch): its intermediate
// states are never visible on the node — no read could see them either —
// so two changes of the location in one batch arrive as one frame, at the
// index of the last. Writes acknowledged one after the other are applied
// in batches of their own on every replica, so a leader and its followers
// send the same frames.
//
// How the states are captured: PublishEvents runs on the state machine's
// apply goroutine right after the batch's state is installed and before
// the next batch is applied, so a local read there (Read without
// Linearizable, which loads the state machine's current state) sees
// exactly the state after these events. captureQueryStreams reads each
// concerned location there once (O(depth)): the value and the `.indexOn`
// indexes of that immutable state, kept by pointer, never copied. The
// query itself runs later on the stream's own goroutine, never on the
// apply goroutine, with the index when the rules declare one (as a GET
// does), else by scanning the location's children.
//
// The rest is the plain stream's: the same hub subscription gives the
// wake-ups, the end on shutdown, the byte budget of a slow subscriber
// (cancel), the keep-alives, the judging of its reader (a capture is kept
// only if the reader could read the location in the batch's state; one
// that may no longer read gets cancel; `query.*` in .read rules sees the
// stream's query) and auth_revoked. Under StrictIndexes a query without its `.indexOn` is
// refused with the GET's 400 when the stream opens; rules changed later do
// not end the stream (it scans instead).
//
// Resume with a query: with ?resume=true or Last-Event-ID every frame
// carries "id: <log index>", the index of the state its window reflects,
// but a window's history is not kept, so a client that reconnects with
// Last-Event-ID always gets a fresh put at "/" of the current window
// (SPEC §5's "or sends a fresh put at /"), never a replay.
//
// Every combination of the query parameters that a GET accepts is served.

// queryCaptureCost is what one pending capture counts against a stream's
// byte budget beyond its events' values: a captured version of the
// location keeps the copied path of its tree alive.
const queryCaptureCost = 4 << 10

// queryStream is the state of one stream with query parameters.
type queryStream struct {
	path    tree.Path   // the request's path (may end in .priority)
	loc     tree.Path   // the node watched: path without a final .priority
	query   *tree.Query // nil: shallow=true alone
	shallow bool        // children are sent as true
	sub     *subscriber // its hub subscription
	budget  int64       // bytes of pending captures allowed
	key     string      // its location and query: streams alike share windows
	shared  *sharedWindow
	cpu     *semaphore.Weighted // the render slots evaluations take turns in

	mu      sync.Mutex
	pending []queryCapture // captured states not yet evaluated, in commit order
	held    int64          // their cost against budget

	sent queryWindow // what the client holds; only the stream's goroutine uses it
}

// queryCapture is the stream's location in the state right after a batch
// of entries that changed it.
type queryCapture struct {
	index   uint64 // the last entry of the batch that concerned the location
	value   *tree.Node
	indexes *fsm.IndexSet
}

// newQueryStream returns the query state of a stream request, or nil when
// it has no query parameters.
func newQueryStream(rq *request) *queryStream {
	if rq.opts.query == nil && !rq.opts.shallow {
		return nil
	}
	q := rq.opts.query
	return &queryStream{
		path:    rq.path,
		loc:     rq.nodePath(),
		query:   q,
		shallow: q == nil || q.Shallow(),
	}
}

// start checks the query against the state first read (the strict-index
// 400 of a GET, after the read as a GET does it) and returns the initial
// put: the query's answer on that state.
func (qs *queryStream) start(ctx context.Context, res fsm.ReadResult, strictIndexes bool) ([]byte, error) {
	if qs.query != nil && strictIndexes && !qs.path.IsPriority() {
		if err := res.Rules.MissingIndex(qs.path, qs.query); err != nil {
			return nil, fmt.Errorf("stream query %s: %w", qs.path, err)
		}
	}
	w, err := qs.evaluate(ctx, res.Value, res.Indexes)
	if err != nil {
		return nil, fmt.Errorf("stream query %s: %w", qs.path, err)
	}
	qs.sent = w
	return rawPutFrame(w.body()), nil
}

// window evaluates the stream's query on v, the location's value in a
// state whose indexes are ixs, as getQuery does for a GET.
func (qs *queryStream) window(ctx context.Context, v *tree.Node, ixs *fsm.IndexSet) (queryWindow, error) {
	if qs.path.IsPriority() {
		v = v.Priority() // a priority has no children: nothing to index
	}
	w := queryWindow{nodes: map[string]*tree.Node{}}
	if qs.query == nil {
		w.node = v
		v.Each(func(k string, c *tree.Node) bool {
			w.keys = append(w.keys, k)
			w.nodes[k] = c
			return true
		})
	} else {
		res, err := qs.query.EvalWith(ctx, v, ixs.Lookup(qs.path, qs.query))
		if err != nil {
			return queryWindow{}, err
		}
		w.res, w.isQuery = res, true
		res.Each(func(k string, c *tree.Node) bool {
			w.keys = append(w.keys, k)
			w.nodes[k] = c
			return true
		})
	}
	if len(w.keys) == 0 {
		w.whole = w.body()
	}
	return w, nil
}

// push queues a captured state; a stream that lets more than its budget
// of them pile up is cancelled like a slow plain stream.
func (qs *queryStream) push(c queryCapture, cost int64) {
	qs.mu.Lock()
	over := qs.held+cost > qs.budget
	if !over {
		qs.pending = append(qs.pending, c)
		qs.held += cost
	}
	qs.mu.Unlock()
	if over {
		qs.sub.tooSlow()
		return
	}
	select {
	case qs.sub.wake <- struct{}{}:
	default:
	}
}

// frames evaluates the newest captured state after index after and
// returns the frame that brings the client's copy to it. A stream that
// fell behind skips the states in between, as a batch does: what it sends
// is always the query re-run at a log position, positions only move
// forward, and its work is bounded by how fast it can go, not by how
// often the location changes.
func (qs *queryStream) frames(ctx context.Context, after uint64) ([]frame, error) {
	qs.mu.Lock()
	pending := qs.pending
	qs.pending, qs.held = nil, 0
	qs.mu.Unlock()
	if len(pending) == 0 {
		return nil, nil
	}
	c := pending[len(pending)-1]
	if c.index <= after {
		return nil, nil // the initial put already reflects it
	}
	w, err := qs.evaluate(ctx, c.value, c.indexes)
	if err != nil {
		return nil, fmt.Errorf("stream query %s at %d: %w", qs.path, c.index, err)
	}
	f := qs.diff(w)
	qs.sent = w
	if f == nil {
		return nil, nil
	}
	return []frame{{index: c.index, data: f}}, nil
}

// evaluate is window, shared by the streams of the same location and
// query: the first to evaluate a version of the location does it for the
// others, in one of the render slots (renderbudget.go), so query streams
// never take more than the cores large answers may.
func (qs *queryStream) evaluate(ctx context.Context, v *tree.Node, ixs *fsm.IndexSet) (queryWindow, error) {
	e := qs.shared
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done && e.value == v {
		return e.w, nil
	}
	if err := qs.cpu.Acquire(ctx, 1); err != nil {
		return queryWindow{}, err
	}
	w, err := qs.window(ctx, v, ixs)
	qs.cpu.Release(1)
	if err != nil {
		return queryWindow{}, err
	}
	e.value, e.w, e.done = v, w, true
	return w, nil
}

// sharedWindow is the latest window evaluated for the streams of one
// location and query. Windows are never changed once made, so streams
// share them.
type sharedWindow struct {
	refs int // streams using it; guarded by queryWatches.mu

	mu    sync.Mutex
	value *tree.Node // the location's version it was evaluated on
	w     queryWindow
	done  bool
}

// queryKey identifies what a query stream evaluates: its path and the
// query parameters, in a canonical order.
func queryKey(path tree.Path, q url.Values) string {
	keep := url.Values{}
	for name, v := range q {
		if queryParamNames[name] {
			keep[name] = v
		}
	}
	return path.String() + "?" + keep.Encode()
}

// queryParamNames are the parameters that shape a stream's window.
var queryParamNames = map[string]bool{
	"orderBy": true, "startAt": true, "startAfter": true, "endAt": true, "endBefore": true,
	"equalTo": true, "limitToFirst": true, "limitToLast": true, "shallow": true,
}

// diff returns the frame that turns the window last sent into w, or nil
// when they are the same.
func (qs *queryStream) diff(w queryWindow) []byte {
	old := qs.sent
	if len(w.keys) == 0 || len(old.keys) == 0 {
		if len(w.keys) == 0 && len(old.keys) == 0 && bytes.Equal(w.whole, old.whole) {
			return nil
		}
		return rawPutFrame(w.body())
	}
	var fields []tree.Field
	for _, k := range w.keys {
		n := w.nodes[k]
		if o, had := old.nodes[k]; had && (qs.shallow || o.Equal(n)) {
			continue
		}
		if qs.shallow {
			n = tree.Bool(true)
		}
		fields = append(fields, tree.Field{Path: tree.Path{k}, Value: n})
	}
	for _, k := range old.keys {
		if _, kept := w.nodes[k]; !kept {
			fields = append(fields, tree.Field{Path: tree.Path{k}}) // null: it left
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return patchFrame(nil, fields)
}

// queryWindow is one evaluation of a stream's query: the chosen children
// in query order, or, when there are none, the whole answer rendered.
type queryWindow struct {
	keys  []string
	nodes map[string]*tree.Node
	whole []byte // the answer when keys is empty: null or a leaf

	res     tree.QueryResult // the query's result (isQuery)
	isQuery bool
	node    *tree.Node // the location, for shallow=true alone
}

// body renders the whole window as a GET with the same query answers it.
func (w *queryWindow) body() []byte {
	if w.isQuery {
		return tree.AppendQueryResult(nil, w.res, tree.RenderOptions{})
	}
	return tree.AppendShallow(nil, w.node, tree.RenderOptions{})
}

// rawPutFrame is `event: put` at "/" with data already rendered.
func rawPutFrame(data []byte) []byte {
	b := append([]byte(`event: put`+"\n"+`data: {"path":"/","data":`), data...)
	return append(b, "}\n\n"...)
}

// msgTooSlow is the cancel reason of a stream that fell behind (the
// hub's own, streamhub.go).
const msgTooSlow = "Too slow: the stream fell behind; reconnect to start again"

// queryWatches finds the query streams that a change concerns, by path:
// those at or above the change (looked up by each prefix of its path) and
// those below it (registered under every strict ancestor of their
// location), so an event costs O(depth) lookups whatever the number of
// streams, and nothing at all while no query stream is open.
type queryWatches struct {
	mu     sync.Mutex
	n      int
	at     map[string]map[*queryStream]struct{} // by location
	below  map[string]map[*queryStream]struct{} // by each strict ancestor of the location
	shared map[string]*sharedWindow             // by queryStream.key
}

// pathKey is p as a map key (keys never contain "/").
func pathKey(p tree.Path) string { return strings.Join(p, "/") }

// add registers qs.
func (w *queryWatches) add(qs *queryStream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at, w.below = map[string]map[*queryStream]struct{}{}, map[string]map[*queryStream]struct{}{}
		w.shared = map[string]*sharedWindow{}
	}
	if qs.shared = w.shared[qs.key]; qs.shared == nil {
		qs.shared = &sharedWindow{}
		w.shared[qs.key] = qs.shared
	}
	qs.shared.refs++
	addTo(w.at, pathKey(qs.loc), qs)
	for i := range qs.loc {
		addTo(w.below, pathKey(qs.loc[:i]), qs)
	}
	w.n++
}

// remove unregisters qs.
func (w *queryWatches) remove(qs *queryStream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if qs.shared.refs--; qs.shared.refs == 0 {
		delete(w.shared, qs.key)
	}
	removeFrom(w.at, pathKey(qs.loc), qs)
	for i := range qs.loc {
		removeFrom(w.below, pathKey(qs.loc[:i]), qs)
	}
	w.n--
}

func addTo(m map[string]map[*queryStream]struct{}, key string, qs *queryStream) {
	if m[key] == nil {
		m[key] = map[*queryStream]struct{}{}
	}
	m[key][qs] = struct{}{}
}

func removeFrom(m map[string]map[*queryStream]struct{}, key string, qs *queryStream) {
	delete(m[key], qs)
	if len(m[key]) == 0 {
		delete(m, key)
	}
}

// queryTouch is what a batch did to one query stream's location.
type queryTouch struct {
	index uint64 // the last event that concerned it
	cost  int64  // approximate bytes of the values of those events
}

// concerned returns, for each query stream whose location events change,
// the last such event's index.
func (w *queryWatches) concerned(events []fsm.Event) map[*queryStream]*queryTouch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return nil
	}
	touched := map[*queryStream]*queryTouch{}
	mark := func(qs *queryStream, e *fsm.Event) {
		t := touched[qs]
		if t == nil {
			t = &queryTouch{cost: queryCaptureCost}
			touched[qs] = t
		}
		t.index = e.Index
		t.cost += eventBytes(e)
	}
	for i := range events {
		e := &events[i]
		if e.Kind == fsm.EventRules {
			continue
		}
		for d := 0; d <= len(e.Path); d++ { // locations at or above the change
			for qs := range w.at[pathKey(e.Path[:d])] {
				mark(qs, e)
			}
		}
		for qs := range w.below[pathKey(e.Path)] { // locations below it
			if e.Kind == fsm.EventPut || patchConcerns(e.Fields, qs.loc[len(e.Path):]) {
				mark(qs, e)
			}
		}
	}
	return touched
}

// patchConcerns reports whether a PATCH's fields change rest, a location
// below the PATCH's path (rest relative to it): a field at, above or below
// it.
func patchConcerns(fields []tree.Field, rest tree.Path) bool {
	for _, f := range fields {
		if f.Path.HasPrefix(rest) || rest.HasPrefix(f.Path) {
			return true
		}
	}
	return false
}

// captureQueryStreams hands each query stream that events concern the
// state of its location after them. It runs in PublishEvents, on the apply
// goroutine, where a local read sees exactly that state (see the top of
// this file); each location is read once, in O(depth). A stream whose
// location cannot be read (the node is shutting down) is ended.
func (s *Server) captureQueryStreams(events []fsm.Event) {
	touched := s.queries.concerned(events)
	if len(touched) == 0 {
		return
	}
	reads := make(map[string]fsm.ReadResult, len(touched))
	for qs, t := range touched {
		if !s.hub.admitted(qs.sub) {
			continue // its reader may not read this batch: it is cancelled
		}
		key := pathKey(qs.loc)
		res, ok := reads[key]
		if !ok {
			var err error
			if res, err = s.db.Read(context.Background(), fsm.Read{Path: qs.loc}); err != nil {
				s.log.Warn("query stream: could not read its location", "path", qs.loc.String(), "err", err)
				qs.sub.finish("")
				continue
			}
			reads[key] = res
		}
		qs.push(queryCapture{index: t.index, value: res.Value, indexes: res.Indexes}, t.cost)
	}
}

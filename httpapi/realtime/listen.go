package realtime

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// listenKey names a listen on its connection: its path and tag (0 for a
// default listen, one without a query).
type listenKey struct {
	path string
	tag  int64
}

// listen is one open listen: its location, its query, its feed of
// changes and what the client was last sent.
type listen struct {
	key     listenKey
	rawPath string          // the path as the client wrote it (echoed in c)
	rawQ    json.RawMessage // the query object as the client sent it
	path    tree.Path
	query   *tree.Query // nil: the whole location
	tagged  bool

	mu     sync.Mutex // held while the listen starts and while its changes are sent
	feed   Feed
	index  uint64 // the log position the client's copy reflects
	sent   window // a query's window last sent
	closed bool
}

// listenBody is the body of q and n.
type listenBody struct {
	P string          `json:"p"`
	Q json.RawMessage `json:"q"`
	T *int64          `json:"t"`
	H string          `json:"h"`
}

// listenRequest reads q's or n's body.
func listenRequest(rq request) (listenBody, tree.Path, error) {
	var b listenBody
	if err := decodeBody(rq, &b); err != nil {
		return b, nil, err
	}
	path, err := parsePath(b.P)
	return b, path, err
}

// listen serves q: the listen is judged by the rules, subscribed to the
// changes of its location, and the location read after a read barrier;
// the client gets the data (unless its hash says it has it), then the ok
// (with a no_index warning when the query's index is not declared), then
// every change in commit order.
func (s *session) listen(rq request) {
	b, path, err := listenRequest(rq)
	if err != nil {
		s.fail(rq, err)
		return
	}
	q, err := parseQueryObject(b.Q)
	if err != nil {
		s.fail(rq, err)
		return
	}
	key := listenKey{path: path.String()}
	if b.T != nil {
		key.tag = *b.T
	}
	if old := s.listens[key]; old != nil {
		s.dropListen(old) // the client listens again: start afresh
	} else if len(s.listens) >= s.srv.cfg.MaxListens {
		s.respond(rq, statusTooBig, appendString(nil, fmt.Sprintf("too many listens on one connection (at most %d)", s.srv.cfg.MaxListens)))
		return
	}
	l := &listen{key: key, rawPath: b.P, rawQ: b.Q, path: path, query: q, tagged: b.T != nil}
	l.mu.Lock()
	defer l.mu.Unlock()
	warnings, err := s.startListen(l, b.H)
	if err != nil {
		// The feed may have woken the loop before the listen failed: it
		// must find l closed, with no feed to take from.
		l.closed = true
		s.forgetReady(l)
		s.fail(rq, err)
		return
	}
	s.listens[key] = l
	answer := []byte("{}")
	if len(warnings) > 0 {
		answer, _ = json.Marshal(map[string][]string{"w": warnings}) // strings always encode
	}
	s.ok(rq, answer)
}

// startListen subscribes l as the session's identity, reads its location
// and sends the client its data unless its hash is the data's (hash "":
// the client has nothing). It returns the answer's warnings. l.mu is held.
func (s *session) startListen(l *listen, hash string) ([]string, error) {
	res, err := s.subscribe(l)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", l.path, err)
	}
	if h, err := l.sent.hash(); err != nil || hash == "" || h != hash {
		s.sendData(l, "d", "", l.sent.render())
	}
	if l.query != nil && res.Rules.MissingIndex(l.path, l.query) != nil {
		return []string{"no_index"}, nil
	}
	return nil, nil
}

// unlisten serves n: the listen ends (the SDKs ask for no answer; one
// that does gets ok).
func (s *session) unlisten(rq request) {
	b, path, err := listenRequest(rq)
	if err != nil {
		s.fail(rq, err)
		return
	}
	key := listenKey{path: path.String()}
	if b.T != nil {
		key.tag = *b.T
	}
	if l := s.listens[key]; l != nil {
		s.dropListen(l)
	}
	s.ok(rq, nil)
}

// dropListen ends l and forgets it.
func (s *session) dropListen(l *listen) {
	delete(s.listens, l.key)
	l.close()
	s.forgetReady(l)
}

// forgetReady drops l from the listens with changes to send.
func (s *session) forgetReady(l *listen) {
	s.readyMu.Lock()
	delete(s.ready, l)
	s.readyMu.Unlock()
}

// close ends l's feed.
func (l *listen) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.feed != nil {
		l.feed.Close()
	}
}

// markReady is a feed's wake: l has changes for the session loop.
func (s *session) markReady(l *listen) {
	s.readyMu.Lock()
	s.ready[l] = struct{}{}
	s.readyMu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.kick()
}

// pump sends the changes of every listen that has some.
func (s *session) pump() {
	s.readyMu.Lock()
	ready := s.ready
	s.ready = map[*listen]struct{}{}
	s.readyMu.Unlock()
	for l := range ready {
		s.sendChanges(l)
	}
}

// sendChanges sends the client what l's new changes did to its location.
func (s *session) sendChanges(l *listen) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.sendChangesLocked(l)
}

// sendChangesLocked is sendChanges with l.mu held.
func (s *session) sendChangesLocked(l *listen) {
	if l.closed || l.feed == nil {
		return
	}
	changes := l.feed.Take()
	var last *Change
	for i := range changes {
		c := &changes[i]
		switch c.End {
		case EndDenied:
			s.revoke(l)
			return
		case EndTooSlow:
			s.end(errTooSlow)
			return
		case EndShutdown:
			s.end(errShutdown)
			return
		}
		if c.Index <= l.index {
			continue // the data sent already shows it
		}
		if l.query == nil {
			s.sendEvents(l, c)
		}
		l.index, last = c.Index, c
	}
	if l.query != nil && last != nil {
		s.sendWindow(l, last)
	}
}

// revoke ends a listen its reader may no longer read: the client is
// told with c (and raises permission_denied on it). l.mu is held.
func (s *session) revoke(l *listen) {
	l.closed = true
	l.feed.Close()
	delete(s.listens, l.key)
	body := append([]byte(`{"p":`), appendString(nil, l.rawPath)...)
	if l.tagged && !isNull(l.rawQ) {
		body = append(body, `,"q":[`...)
		body = append(body, l.rawQ...)
		body = append(body, ']')
	}
	s.send(appendPush(nil, "c", append(body, '}')))
}

// sendData pushes action (d or m) at rel below l's location with data,
// tagged for a tagged listen.
func (s *session) sendData(l *listen, action, rel string, data []byte) {
	s.sendRendered(l, action, rel, int64(len(data)), func(b []byte) []byte { return append(b, data...) })
}

// sendRendered is sendData with the data rendered by render straight into
// the message, whose buffer is sized for size bytes of data (the value's
// approximate JSON size): a large value is rendered once per client, with
// no copies left behind as garbage.
func (s *session) sendRendered(l *listen, action, rel string, size int64, render func([]byte) []byte) {
	p := l.path.String()
	if rel != "" {
		p += "/" + rel
	}
	msg := make([]byte, 0, 64+2*len(p)+int(min(max(size, 0), 1<<30)))
	msg = append(appendPushHead(msg, action), `{"p":`...)
	msg = appendString(msg, p)
	msg = append(msg, `,"d":`...)
	msg = render(msg)
	if l.tagged {
		msg = append(msg, `,"t":`...)
		msg = strconv.AppendInt(msg, l.key.tag, 10)
	}
	s.send(append(msg, "}}}"...))
}

// sendEvents pushes one batch's events to a listen without a query, as
// one message, so that the SDK raises one event for the batch (a
// multi-path update is atomic for every listener): a change at or above
// the location sends its new value whole; a single change below it is
// sent where it happened, a set as d and an update as m; several are one
// m of their paths relative to the location, or, where one path lies
// within another (their order would matter), one d of the value after the
// batch at the paths' common ancestor.
func (s *session) sendEvents(l *listen, c *Change) {
	var below []fsm.Event
	for _, e := range c.Events {
		switch {
		case e.Kind == fsm.EventRules:
		case l.path.HasPrefix(e.Path):
			s.sendRendered(l, "d", "", c.Value.Size(), func(b []byte) []byte { return tree.AppendJSON(b, c.Value, exportJSON) })
			return // the value after the batch shows the batch's other events
		case e.Path.HasPrefix(l.path) && (e.Kind == fsm.EventPut || e.Kind == fsm.EventPatch):
			below = append(below, e)
		}
	}
	if len(below) == 1 {
		e := below[0]
		rel := tree.Path(e.Path[len(l.path):]).String()[1:]
		if e.Kind == fsm.EventPut {
			s.sendRendered(l, "d", rel, e.Value.Size(), func(b []byte) []byte { return tree.AppendJSON(b, e.Value, exportJSON) })
		} else {
			s.sendRendered(l, "m", rel, fieldsSize(e.Fields), func(b []byte) []byte { return tree.AppendFields(b, e.Fields, exportJSON) })
		}
		return
	}
	if len(below) == 0 {
		return
	}
	fields := batchFields(l.path, below)
	if common, overlap := overlapping(fields); overlap {
		v := c.Value.Get(common)
		rel := common.String()[1:]
		s.sendRendered(l, "d", rel, v.Size(), func(b []byte) []byte { return tree.AppendJSON(b, v, exportJSON) })
		return
	}
	s.sendRendered(l, "m", "", fieldsSize(fields), func(b []byte) []byte { return tree.AppendFields(b, fields, exportJSON) })
}

// batchFields is every value the events set, at its path relative to loc.
func batchFields(loc tree.Path, events []fsm.Event) []tree.Field {
	var fields []tree.Field
	for _, e := range events {
		rel := tree.Path(e.Path[len(loc):])
		if e.Kind == fsm.EventPut {
			fields = append(fields, tree.Field{Path: rel, Value: e.Value})
			continue
		}
		for _, f := range e.Fields {
			fields = append(fields, tree.Field{Path: append(append(tree.Path{}, rel...), f.Path...), Value: f.Value})
		}
	}
	return fields
}

// overlapping reports whether a field's path lies within (or is)
// another's, and the fields' longest common ancestor. Sorted, a path is
// followed by those within it, so neighbours tell.
func overlapping(fields []tree.Field) (tree.Path, bool) {
	paths := make([]tree.Path, len(fields))
	for i, f := range fields {
		paths[i] = f.Path
	}
	slices.SortFunc(paths, func(a, b tree.Path) int { return slices.Compare(a, b) })
	overlap := false
	for i := 1; i < len(paths); i++ {
		if paths[i].HasPrefix(paths[i-1]) {
			overlap = true
		}
	}
	// The first and last in order share what all share.
	first, last := paths[0], paths[len(paths)-1]
	n := 0
	for n < len(first) && n < len(last) && first[n] == last[n] {
		n++
	}
	return first[:n], overlap
}

// sendWindow re-runs a listen's query on the location after the last of
// a run of changes and sends what changed in its window: an m with the
// children that entered or changed (whole) and null for those that left,
// or a d of the whole window when it is or was not a set of children.
func (s *session) sendWindow(l *listen, c *Change) {
	ctx, cancel := s.requestContext()
	defer cancel()
	w, err := evaluate(ctx, l.path, l.query, c.Value, c.Indexes)
	if err != nil {
		s.srv.cfg.Logger.Warn("realtime: query listen", "path", l.path.String(), "err", err)
		s.revoke(l)
		return
	}
	old := l.sent
	l.sent = w
	if len(w.keys) == 0 || len(old.keys) == 0 {
		if len(w.keys) == 0 && len(old.keys) == 0 && string(w.leaf) == string(old.leaf) {
			return
		}
		s.sendData(l, "d", "", w.render())
		return
	}
	var fields []tree.Field
	for _, k := range w.keys {
		if o, had := old.nodes[k]; had && o.Equal(w.nodes[k]) {
			continue
		}
		fields = append(fields, tree.Field{Path: tree.Path{k}, Value: w.nodes[k]})
	}
	for _, k := range old.keys {
		if _, kept := w.nodes[k]; !kept {
			fields = append(fields, tree.Field{Path: tree.Path{k}})
		}
	}
	if len(fields) > 0 {
		s.sendRendered(l, "m", "", fieldsSize(fields), func(b []byte) []byte { return tree.AppendFields(b, fields, exportJSON) })
	}
}

// reauthorize judges every listen again as the session's identity (its
// token changed): a listen still allowed is subscribed again as the new
// identity and brought up to date; one no longer allowed is revoked.
func (s *session) reauthorize() {
	for _, l := range s.listens {
		s.restartListen(l)
	}
}

// restartListen re-subscribes l as the session's identity.
func (s *session) restartListen(l *listen) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// The changes pending for the old identity are sent first: they were judged
	// for it when they were made, before the client changed its token.
	s.sendChangesLocked(l)
	if l.closed {
		return
	}
	old, oldIndex, oldSent := l.feed, l.index, l.sent
	_, err := s.subscribe(l)
	old.Close()
	switch {
	case denied(err):
		l.feed = old // closed: revoke closes it again, harmlessly
		s.revoke(l)
	case err != nil:
		s.srv.cfg.Logger.Warn("realtime: listen not judged again", "path", l.path.String(), "err", err)
		l.feed = old
		s.revoke(l)
	case l.index != oldIndex || !sameWindow(oldSent, l.sent):
		s.sendData(l, "d", "", l.sent.render())
	}
}

// subscribe subscribes l to its location's changes as the session's
// identity and reads the location as it (after a read barrier), so that
// no change after the read is missed; l.feed, l.index and l.sent are set
// from them. l.mu is held.
func (s *session) subscribe(l *listen) (*fsm.ReadResult, error) {
	access := s.who.readAccess(s.srv.cfg.Now(), l.query)
	feed, err := s.srv.deps.Events.Subscribe(l.path, access, func() { s.markReady(l) })
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.requestContext()
	defer cancel()
	res, err := s.srv.deps.DB.Read(ctx, fsm.Read{Path: l.path, Linearizable: true, Access: access, Watch: true})
	if err == nil {
		var w window
		if w, err = evaluate(ctx, l.path, l.query, res.Value, res.Indexes); err == nil {
			l.feed, l.index, l.sent = feed, res.Index, w
			return &res, nil
		}
	}
	feed.Close()
	return nil, err
}

// sameWindow reports whether two evaluations of a listen show the same
// data.
func sameWindow(a, b window) bool {
	if !a.query {
		return a.value.Equal(b.value)
	}
	if len(a.keys) != len(b.keys) || string(a.leaf) != string(b.leaf) {
		return false
	}
	for i, k := range a.keys {
		if b.keys[i] != k || !a.nodes[k].Equal(b.nodes[k]) {
			return false
		}
	}
	return true
}

// fieldsSize is the approximate JSON size of an update's fields.
func fieldsSize(fields []tree.Field) int64 {
	n := int64(2)
	for _, f := range fields {
		n += 8 + int64(len(f.Path))*8 + f.Value.Size()
	}
	return n
}

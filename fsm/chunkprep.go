package fsm

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// A chunked command (chunk.go) takes effect when its last chunk is
// applied. Decoding it and building what it writes all at that moment
// held every other write up on every node: a million-key PATCH is ~0.3 s
// of one core on each of them, and three nodes sharing two cores turned
// that into a one-second stall (issue 19). A chunkPrep does that work as
// the chunks come instead: each chunk's apply decodes the fields (a
// PATCH's) or members (a PUT's object's) its bytes complete and merges
// them into the value being built, so the last chunk's apply decodes and
// merges only its own share and puts the value in place.
//
// The result is exactly the one-step apply's, for the shapes prepared:
//
//   - a PATCH's fields applied batch after batch, in order, are the
//     fields applied in order, which is what an Update is (tree.Update);
//     a field sets nothing outside the node the PATCH names, so that
//     node's new value can be built on its own, and put in place at the
//     end as a PATCH of one field would — except when the node died on
//     the way (its children all deleted; tree.Updated.Died), which its
//     ancestors that had only it share (rebornAt);
//   - fields into an absent node, in path order, are appended to a new
//     object as they come (pathTrie); the echo is built alongside;
//   - increments are resolved against the node as the batch found it;
//     timestamps need the clock, which travels after the body, so a
//     proposer resolves them before it chunks the command
//     (WithTimestampsResolved); the write limit is checked at the end,
//     over the batches' sums;
//   - a PATCH is merged into its node as it was at the first batch; when
//     other writes change that node before the last chunk, the prepared
//     value is rebased on what they changed (chunkrebase.go);
//   - a PUT's value is built by a streaming decoder, from nothing.
//
// One difference is left, for log entries the parser never makes: a
// PATCH writing one path twice (or a path and one below it) counts, for
// the write limit, what the node held before the PATCH in one step but
// what the earlier field left when the two fields are in different
// batches; the tree is the same.
//
// A write judged when applied (CmdAs) gathers the paths the rules judge
// as its chunks come; a PUT its node judged ahead (CmdAsPrejudged) only
// checks the rules are still those it was judged by. Anything else —
// other kinds, bytes that do not decode, a rebase that cannot be done —
// is applied in one step when the last chunk comes, as before, which
// decides errors as it always has. chunkprep_test.go compares both ways.

// nilSize is the size of no value (tree.Node.Size), which a field
// writing where there is nothing counts as replaced.
var nilSize = (*tree.Node)(nil).Size()

// preparedApplies counts the chunked commands applied from their
// prepared value, oneStepApplies those applied in one step at their last
// chunk (tests tell the two ways apart by them).
var preparedApplies, oneStepApplies, refusedApplies atomic.Uint64

// ChunkedApplies reports how many chunked commands this process applied
// from the value prepared as their chunks came, how many in one step at
// their last chunk (a rebase that could not be done, a shape not
// prepared: that stalls every write behind it for the whole apply), and
// how many it refused instead (CmdChunkStrict).
func ChunkedApplies() (prepared, oneStep, refused uint64) {
	return preparedApplies.Load(), oneStepApplies.Load(), refusedApplies.Load()
}

// errPrepStale says the prepared value cannot be used: the one-step apply
// decides.
var errPrepStale = errors.New("chunk preparation: the written node changed")

// chunkPrep is the work done so far on one chunked command. It belongs to
// the pendingChunks it was made for and is only ever extended by the
// chunk that follows the ones it took (parts says how many).
type chunkPrep struct {
	parts int
	off   bool // not (or no longer) prepared: the one-step apply decides
	// sizeHint bounds the room made for fields at once (a field takes at
	// least a few bytes).
	sizeHint int
	pieceLen int // the last piece's length: room for the next one
	// head says the entry's header is read: kind, path, if-match flag,
	// and for a PATCH the count of its fields.
	head       bool
	kind       CommandKind // CmdUpdateParsed, CmdSetParsed or CmdPushParsed
	hasIfMatch bool
	path       tree.Path
	// as says the write came wrapped with who it acts as (asFlags are
	// the wrapper's flags): a PUT judged already (CmdAsPrejudged), by the
	// rules of rulesIndex, or a write judged when applied (CmdAs, judged)
	// by the rules in force then, acting as auth (JSON). judgePaths
	// gathers a judged PATCH's paths for that judgement.
	as         bool
	asFlags    byte
	rulesIndex uint64
	judged     bool
	auth       []byte
	judgePaths *rules.WriteSet
	left       uint64 // a PATCH's fields not decoded yet
	tail       []byte // bytes received and not decoded yet
	// value is a PUT's value (decoded by stream), or the node a PATCH
	// writes with its batches merged so far. stream decodes the value
	// being read: the PUT's, or the current field's (whose path is
	// fieldPath; inField says one is being read). paths is a block the
	// fields' paths are cut from.
	stream    wireStream
	inField   bool
	fieldPath tree.Path
	paths     []string
	// based says base is the node the PATCH writes, as it was when its
	// first batch was merged; echo is the PATCH's echo when base is not
	// nil (when it is, value is the echo too).
	based       bool
	base, value *tree.Node
	echo        *tree.Node
	// trie builds value while the fields come in order into a node that
	// was absent; started says whether that was decided (at the first
	// batch). echoApp builds the echo once a field of several keys makes
	// it differ from value.
	trie         *pathTrie
	echoApp      *tree.Appender
	echoImplicit bool // the echo is value (one-key fields, into nothing)
	// echoPrio is the echo's member ".priority" (a priority field's value)
	// once the echo is merged rather than appended: added at the end.
	echoPrio  *tree.Node
	deletes   bool // a field is null
	prioField bool // a field sets the node's priority
	// nullKeys holds the first key of every null field, unless there are
	// more than nullKeysMax of them (nullKeysMany): a child of the node
	// not among them never dies during the PATCH (chunkrebase.go).
	nullKeys     map[string]struct{}
	nullKeysMany bool
	// valueFresh says value's size holds its children alone (a rebase
	// built it anew: chunkrebase.go).
	valueFresh bool
	// died says the node died on the way (tree.Updated.Died): its
	// ancestors that had only it died too (rebornAt).
	died          bool
	nonFlat, incs bool // a field of several keys; an increment
	// dirty, prioWritten, replaced and unrebasable note the writes
	// applied between the chunks below, to the priority of, at or above
	// the node (chunkrebase.go).
	dirty            map[string]struct{}
	prioWritten      bool
	replaced         bool
	unrebasable      bool
	orig             map[int]*tree.Node // fields' values with increments, as decoded
	started          bool
	fields           []tree.Field
	written, removed int64
	// stale says the prepared value could not be used at the last chunk:
	// a write between the chunks changed the node in a way it cannot
	// follow (errPrepStale).
	stale bool
	// err is the first failing field's error: later fields are decoded
	// (a decoding error comes first) but not merged.
	err error
}

// take adds the next chunk's piece and prepares what it completes,
// against root, the tree as this chunk is applied. total is the number
// of chunks: with the first piece's size, it bounds the fields to come.
func (pr *chunkPrep) take(root *tree.Node, piece []byte, total int) {
	defer func() {
		if recover() != nil {
			pr.off = true // see contained
		}
	}()
	if pr.parts == 0 {
		pr.sizeHint = total * len(piece) / 8
	}
	pr.pieceLen = len(piece)
	pr.parts++
	if pr.off {
		return
	}
	pr.tail = append(pr.tail, piece...)
	if !pr.head && !pr.readHead() {
		return
	}
	pr.decode(root)
}

// valueKind says the command carries a value (a PUT's or a POST's), built
// by the stream decoder, rather than a PATCH's fields.
func (pr *chunkPrep) valueKind() bool { return pr.kind == CmdSetParsed || pr.kind == CmdPushParsed }

// readHead reads the entry's header once its bytes are in; false while
// they are not (or when the entry is not prepared).
func (pr *chunkPrep) readHead() bool {
	b := pr.tail
	if len(b) < 3 {
		return false
	}
	if wrap := CommandKind(b[1]); (wrap == CmdAsPrejudged || wrap == CmdAs) && !pr.as {
		// A judged write: the wrapper — the rules version a PUT was
		// judged by ahead (judgeahead.go), or who the write acts as, to
		// be judged when applied —, then the write's own entry.
		if int(b[0]) < wrap.EntryFormat() || b[0] > CommandVersion {
			pr.off = true
			return false
		}
		d := decoder{b: b[3:]}
		if wrap == CmdAsPrejudged {
			pr.rulesIndex = d.uvarint()
		} else {
			pr.auth = slices.Clone(d.bytes())
			pr.judged = true
		}
		if d.err != nil {
			pr.off = len(b) > ChunkBytes
			return false
		}
		pr.as, pr.asFlags = true, b[2]
		pr.tail, b = d.b, d.b
	}
	if len(b) < 3 {
		return false
	}
	pr.kind = CommandKind(b[1])
	if (pr.kind != CmdUpdateParsed && !pr.valueKind()) || (pr.as && !pr.judged && pr.kind != CmdSetParsed) ||
		int(b[0]) < pr.kind.EntryFormat() || b[0] > CommandVersion || b[2]&^1 != 0 {
		pr.off = true
		return false
	}
	pr.hasIfMatch = b[2]&1 != 0
	d := decoder{b: b[3:]}
	n := d.uvarint()
	if n > tree.MaxDepth+1 {
		pr.off = true
		return false
	}
	path := make(tree.Path, n)
	for i := range path {
		path[i] = string(d.bytes())
		if path[i] == ".priority" || !utf8.ValidString(path[i]) {
			pr.off = true
			return false
		}
	}
	var count uint64
	if pr.kind == CmdUpdateParsed {
		count = d.uvarint() - 1 // 0 is a null body, 1 no fields
	} else if len(d.b) > 0 && d.b[0]&^wireFlags != wireObject {
		pr.off = true // a leaf: nothing to build
		return false
	}
	if d.err != nil || len(d.b) == 0 {
		// The header is short of bytes (or malformed: the one-step
		// apply will say so); it is tiny next to a chunk.
		pr.off = len(b) > ChunkBytes
		return false
	}
	if pr.kind == CmdUpdateParsed && (count < 1 || count+1 == 0) {
		pr.off = true
		return false
	}
	pr.head, pr.path, pr.left = true, path, count
	if pr.judged && pr.kind == CmdUpdateParsed {
		pr.judgePaths = rules.NewWriteSet(path, int(min(count, uint64(pr.sizeHint))))
	}
	pr.stream.reset(len(path))
	pr.tail = d.b
	return true
}

// decode decodes what the bytes hold — a PUT's value as far as they go,
// a PATCH's whole fields — and merges the fields.
func (pr *chunkPrep) decode(root *tree.Node) {
	d := decoder{b: pr.tail}
	if pr.valueKind() {
		pr.stream.feed(&d)
		if pr.stream.done {
			pr.value = pr.stream.value
		}
	} else {
		from := len(pr.fields)
		if cap(pr.fields) == 0 {
			pr.fields = make([]tree.Field, 0, min(pr.left, uint64(pr.sizeHint)))
		}
		for pr.left > 0 && !pr.stream.bad {
			if !pr.inField && !pr.fieldHead(&d) {
				break
			}
			pr.stream.feed(&d)
			if !pr.stream.done {
				break
			}
			pr.fields = append(pr.fields, tree.Field{Path: pr.fieldPath, Value: pr.stream.value})
			pr.inField = false
			pr.left--
		}
		if batch := pr.fields[from:]; len(batch) > 0 && !pr.stream.bad {
			pr.merge(root, batch)
		}
	}
	if pr.stream.bad {
		pr.off = true
		return
	}
	// Keep the rest (a field's beginning) in a buffer of its own, so the
	// bytes decoded are not held.
	pr.tail = append(make([]byte, 0, len(d.b)+pr.pieceLen), d.b...)
}

// fieldHead reads the next field's path, as readFields does; false while
// the bytes do not hold it.
func (pr *chunkPrep) fieldHead(d *decoder) bool {
	probe := *d
	segs := probe.uvarint()
	if segs > tree.MaxDepth+1 {
		pr.stream.bad = true
		return false
	}
	for range segs {
		probe.bytes()
	}
	if probe.err != nil {
		return false
	}
	segs = d.uvarint()
	if uint64(len(pr.paths)) < segs {
		pr.paths = make([]string, max(segs, 1024))
	}
	p := tree.Path(pr.paths[:segs:segs])
	pr.paths = pr.paths[segs:]
	for i := range p {
		p[i] = string(d.bytes())
	}
	pr.fieldPath, pr.inField = p, true
	pr.stream.reset(len(p))
	return true
}

// merge merges a batch of a PATCH's decoded fields.
func (pr *chunkPrep) merge(root *tree.Node, batch []tree.Field) {
	for _, f := range batch {
		// A field of no keys (crafted) and timestamps (they need the
		// clock, which comes last; proposers resolve them ahead:
		// WithTimestampsResolved) are left to the one-step apply.
		// Increments are resolved as the fields are merged, against the
		// node as it was, which the last chunk checks is still there.
		if len(f.Path) == 0 || tree.HasTimestamps(f.Value) {
			pr.off = true
			return
		}
		if f.Value == nil {
			pr.deletes = true
			pr.noteNull(f.Path[0])
		}
		pr.prioField = pr.prioField || len(f.Path) == 1 && f.Path[0] == ".priority"
		pr.nonFlat = pr.nonFlat || len(f.Path) != 1
		pr.incs = pr.incs || f.Value.HasServerValues()
	}
	if !pr.based {
		pr.based, pr.base = true, root.Get(pr.path)
		pr.value = pr.base
	}
	if pr.judgePaths != nil {
		for _, f := range batch {
			pr.judgePaths.Add(f.Path.NodePath())
		}
	}
	if pr.err != nil {
		return
	}
	if !pr.started {
		pr.started = true
		if pr.value == nil {
			pr.trie = newPathTrie() // a PATCH into nothing
			pr.echoImplicit = true
		}
	}
	if pr.trie != nil {
		// Paths in order, into a new object: appended as they come.
		i := pr.addToTrie(batch)
		if i == len(batch) {
			return
		}
		// The rest is merged: into the object so far, and its echo.
		v, ok := pr.trie.build()
		if !ok {
			pr.off = true
			return
		}
		pr.value, pr.trie, batch = v, nil, batch[i:]
		if pr.echoImplicit {
			pr.echo, pr.echoImplicit = v, false // one-key fields into nothing: the echo is the object
		}
	}
	u, err := tree.UpdateCounted(pr.value, tree.Write{CheckIncrements: true}, batch)
	if err != nil {
		pr.err = err
		return
	}
	pr.value = u.Root
	pr.died = pr.died || u.Died
	pr.written += u.Written
	pr.removed += u.Removed
	if pr.incs {
		// The increments as decoded, should a rebase resolve them anew.
		at := len(pr.fields) - len(batch)
		for j, f := range batch {
			if f.Value.HasServerValues() {
				if pr.orig == nil {
					pr.orig = map[int]*tree.Node{}
				}
				pr.orig[at+j] = f.Value
			}
		}
	}
	copy(batch, u.Resolved) // batch is part of fields: now the resolved fields
	pr.mergeEcho(batch)
}

// mergeEcho adds fields to the echo once the trie is left (or was never
// used): an object of the fields' paths joined with "/" and their values,
// nulls left out, appended while the names come in key order, merged
// after.
func (pr *chunkPrep) mergeEcho(batch []tree.Field) {
	if pr.echo == nil && pr.echoApp == nil {
		pr.echoApp = tree.NewAppender()
	}
	if pr.echoApp != nil {
		i := 0
		for i < len(batch) && (batch[i].Value == nil || pr.echoApp.AppendOne(strings.Join(batch[i].Path, "/"), batch[i].Value)) {
			i++
		}
		if i == len(batch) {
			return
		}
		pr.echo, pr.echoApp, batch = pr.echoApp.Build(), nil, batch[i:]
	}
	members := make([]tree.Field, 0, len(batch))
	for _, f := range batch {
		name := strings.Join(f.Path, "/")
		if name == ".priority" {
			// A member of that name (a priority field's): merging would
			// set the echo's priority. Added when the echo is done.
			if f.Value != nil {
				pr.echoPrio = f.Value
			}
			continue
		}
		if f.Value != nil {
			members = append(members, tree.Field{Path: tree.Path{name}, Value: f.Value})
		}
	}
	e, err := tree.UpdateCounted(pr.echo, tree.Write{}, members)
	if err != nil {
		pr.off = true
		return
	}
	pr.echo = e.Root
}

// addToTrie adds the batch's fields to the new object being built and
// returns how many it took: all, unless a path came out of order, or a
// field deletes or sets a priority.
func (pr *chunkPrep) addToTrie(batch []tree.Field) int {
	i, from := 0, -1 // from: the first field the echo still needs
	for ; i < len(batch); i++ {
		f := batch[i]
		if f.Value == nil || f.Value.HasServerValues() || slices.Contains(f.Path, ".priority") || !pr.trie.fits(f.Path) {
			break
		}
		if pr.echoImplicit && len(f.Path) > 1 {
			// The echo is no longer the object itself: its members are
			// the paths joined with "/", the one-key fields so far (in
			// key order: they were appended so) first.
			pr.echoImplicit = false
			pr.echoApp = tree.NewAppender()
			for _, g := range pr.fields[:len(pr.fields)-len(batch)+i] {
				pr.echoApp.AppendOne(g.Path[0], g.Value)
			}
		}
		if !pr.echoImplicit && from < 0 {
			from = i
		}
		pr.trie.add(f.Path, f.Value)
		pr.written += f.Value.Size()
		pr.removed += nilSize // what a field replaces where there is nothing
	}
	if from >= 0 {
		pr.mergeEcho(batch[from:i])
	}
	return i
}

// pathTrie builds a new object from fields (none null) whose paths come
// in order: at the first key where a path parts from the one before, its
// key comes after (fits). The objects along the last path stay open,
// each an Appender; one is closed — built and added to the one above —
// when a path parts from it.
type pathTrie struct {
	keys []string         // the open path
	apps []*tree.Appender // apps[i]: the object at keys[:i]
	last tree.Path
}

func newPathTrie() *pathTrie { return &pathTrie{apps: []*tree.Appender{tree.NewAppender()}} }

// fits reports whether p comes after the last path added: neither is the
// other or below it, and where they part, p's key is the later.
func (t *pathTrie) fits(p tree.Path) bool {
	if t.last == nil {
		return true
	}
	n := 0
	for n < len(p) && n < len(t.last) && p[n] == t.last[n] {
		n++
	}
	return n < len(p) && n < len(t.last) && tree.CompareKeys(t.last[n], p[n]) < 0
}

// add puts v (not null) at p, which fits.
func (t *pathTrie) add(p tree.Path, v *tree.Node) {
	n := 0
	for n < len(t.keys) && n < len(p)-1 && t.keys[n] == p[n] {
		n++
	}
	for len(t.keys) > n {
		t.close()
	}
	for _, k := range p[n : len(p)-1] {
		t.keys = append(t.keys, k)
		t.apps = append(t.apps, tree.NewAppender())
	}
	t.apps[len(t.apps)-1].AppendOne(p[len(p)-1], v)
	t.last = p
}

// close closes the innermost open object: added to the one above after
// every key there so far (fits saw to it).
func (t *pathTrie) close() {
	last := len(t.keys) - 1
	obj := t.apps[last+1].Build()
	k := t.keys[last]
	t.keys, t.apps = t.keys[:last], t.apps[:last+1]
	t.apps[last].AppendOne(k, obj)
}

// build closes every open object and returns the whole.
func (t *pathTrie) build() (*tree.Node, bool) {
	for len(t.keys) > 0 {
		t.close()
	}
	return t.apps[0].Build(), true
}

// apply applies the prepared command to s once its last chunk is taken;
// ok false leaves it to the one-step apply.
func (pr *chunkPrep) apply(s *state) (next *state, res Result, events []Event, err error, ok bool) {
	defer func() {
		if recover() != nil { // see contained
			pr.off = true
			next, res, events, err, ok = nil, Result{}, nil, nil, false
		}
	}()
	if pr.off || !pr.head || pr.left != 0 || pr.valueKind() && !pr.stream.done {
		return nil, Result{}, nil, nil, false
	}
	if pr.trie != nil {
		v, ok := pr.trie.build()
		if !ok {
			return nil, Result{}, nil, nil, false
		}
		pr.value, pr.trie = v, nil
		if pr.echoImplicit {
			pr.echo = v
		}
	}
	if pr.echoApp != nil {
		pr.echo, pr.echoApp = pr.echoApp.Build(), nil
	}
	if pr.echoPrio != nil {
		pr.echo, pr.echoPrio = pr.echo.WithMember(".priority", pr.echoPrio), nil
	}
	c := Command{Kind: pr.kind.PlainKind(), Path: pr.path, Parsed: true, HasIfMatch: pr.hasIfMatch}
	d := decoder{b: pr.tail}
	if pr.valueKind() {
		c.Value = pr.value
	} else {
		c.Fields = pr.fields
	}
	c.IfMatch = string(d.bytes())
	c.Now = d.varint()
	copy(c.Rand[:], d.take(12))
	c.WriteLimit = d.varint()
	if d.err != nil || c.Value == nil && c.Fields == nil {
		return nil, Result{}, nil, nil, false
	}
	if pr.as {
		c.As = &Access{OpenIfUnset: pr.asFlags&asOpenIfUnset != 0}
		if pr.judged {
			var aerr error
			if c.As.Auth, aerr = authCache.decode(pr.auth); aerr != nil {
				return nil, Result{}, nil, nil, false // the one-step apply refuses it
			}
		} else {
			c.Prejudged, c.PrejudgedRules = true, pr.rulesIndex
		}
	}
	if pr.valueKind() {
		next, res, events, err = applyCommand(s, &c)
		preparedApplies.Add(1)
		return next, res, events, err, true
	}
	update := func(st *state, c *Command) (Result, []Event, error) { return updateWith(st, c, pr.update) }
	next, res, events, err = applyCommandWith(s, &c, update, pr.judgePaths)
	if errors.Is(err, errPrepStale) {
		pr.stale = true
		return nil, Result{}, nil, nil, false
	}
	preparedApplies.Add(1)
	return next, res, events, err, true
}

// contained: take and apply turn a panic of the preparation into the
// one-step apply, which every node then takes alike (the preparation is
// deterministic): a slip here must not stop the cluster when the
// one-step apply stands behind it (TestChunkPrepContainsPanics).

// update is tree.Update for the prepared fields, which are the fields.
func (pr *chunkPrep) update(root *tree.Node, w tree.Write, _ []tree.Field) (*tree.Node, []tree.Field, *tree.Node, error) {
	value, removed, died := pr.value, pr.removed, pr.died
	if cur := root.Get(w.Path); cur != pr.base {
		v, r, d, ok := pr.rebase(root, w.Path, cur) // written between the chunks
		if !ok {
			return nil, nil, nil, errPrepStale
		}
		value, removed, died = v, r, d
	}
	if pr.err != nil {
		return nil, nil, nil, pr.err
	}
	if err := tree.CheckWriteLimit(w.WriteLimit, pr.written, removed); err != nil {
		return nil, nil, nil, err
	}
	if died && value != nil {
		newRoot, err := rebornAt(root, w.Path, value)
		if err != nil {
			return nil, nil, nil, errPrepStale
		}
		return newRoot, pr.fields, pr.echo, nil
	}
	newRoot := value
	if n := len(w.Path); n > 0 {
		// The node's parent takes the new value as a PATCH of one field
		// would: the same merge, for the ancestors, as the whole PATCH's.
		u, err := tree.UpdateCounted(root, tree.Write{Path: w.Path[:n-1]}, []tree.Field{{Path: w.Path[n-1:], Value: value}})
		if err != nil {
			return nil, nil, nil, errPrepStale
		}
		newRoot = u.Root
	}
	return newRoot, pr.fields, pr.echo, nil
}

// rebornAt puts value at p in root for a PATCH whose node died on the
// way and came back (value is what it came back as): each ancestor it was
// the only child of died with it and came back as a new object, without
// its priority (tree/merge.go), up to the first ancestor that has another
// child, which takes the chain as a PATCH of one field would.
func rebornAt(root *tree.Node, p tree.Path, value *tree.Node) (*tree.Node, error) {
	v, n := value, len(p)
	for n > 0 {
		parent := root.Get(p[:n-1])
		others := parent.Len()
		if parent.Child(p[n-1]) != nil {
			others--
		}
		if others > 0 {
			break
		}
		a := tree.NewAppender()
		a.AppendOne(p[n-1], v)
		v = a.Build()
		n--
	}
	if n == 0 {
		return v, nil
	}
	u, err := tree.UpdateCounted(root, tree.Write{Path: p[:n-1]}, []tree.Field{{Path: p[n-1 : n], Value: v}})
	if err != nil {
		return nil, err
	}
	return u.Root, nil
}

// WithTimestampsResolved returns c with its {".sv":"timestamp"}
// placeholders replaced by its clock reading (tree.ResolveTimestamps), and
// whether there were any. Applying it gives exactly what applying c does;
// a proposer logs it instead of c when c is chunked, since the clock
// travels after the body and a value with placeholders can only be
// built once the last chunk is in (chunkprep.go).
func (c Command) WithTimestampsResolved() (Command, bool) {
	if !c.Parsed {
		return c, false
	}
	if c.Kind == CmdUpdate {
		if !slices.ContainsFunc(c.Fields, func(f tree.Field) bool { return f.Value.HasServerValues() }) {
			return c, false
		}
		fields := make([]tree.Field, len(c.Fields))
		for i, f := range c.Fields {
			fields[i] = tree.Field{Path: f.Path, Value: tree.ResolveTimestamps(f.Value, c.Now)}
		}
		c.Fields = fields
		return c, true
	}
	if !c.Value.HasServerValues() {
		return c, false
	}
	c.Value = tree.ResolveTimestamps(c.Value, c.Now)
	return c, true
}

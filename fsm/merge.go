package fsm

import (
	"cmp"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/btree"
)

// An Update's fields are applied as if one after the other, in the order
// the client sent them (updateInOrder does exactly that, and is the
// definition): each field's current value, server values, increments and
// size are those of the tree before the update, and each later field
// sees the tree the earlier ones left. Field by field, though, a write
// walks from the root, looks its parent up and rehashes every ancestor:
// a PATCH of a million keys under one node took seconds on the Raft
// apply loop while every other read and write waited (issue 19).
//
// mergeUpdate computes the same tree in one pass instead: it groups the
// fields by their key at each level (sorted in key order), walks the old
// tree alongside, builds every changed object once — its B-tree bulk
// loaded from sorted children, its lane sum and size adjusted by the
// children that changed — and hashes every new child once.
//
// Order still matters in a few places, and the merge keeps it: a node
// whose children are all deleted disappears, so a field that comes
// after the deletes recreates it as a new object without its priority;
// a priority set on a leaf before a field turns it into an object is
// counted in the object's size, one set after is not; and a priority set
// on a node that does not exist at that moment is lost. None of these
// needs more than two moments per node: when it (first) became null and
// when it (first) became non-null again. Paths never overlap, so a node
// that comes into being during an update never disappears again in the
// same update, and a node that disappears does so once: both moments are
// enough to know, for every node, what the fields in order would have
// made of it.
//
// The children of a large object are merged in batches: the subtrees of
// a batch and their entry digests by several goroutines (subtrees share
// nothing), while the batch before is loaded into the B-tree, which only
// one goroutine can do. The result does not depend on the scheduling.
//
// Inputs the parser never produces (overlapping paths, ".priority"
// inside a path, keys that are not UTF-8: possible only in a crafted log
// entry) go to updateInOrder, so every entry keeps its exact result.

type (
	btreeChildren = btree.BTreeG[entry]
	btreeIter     = btree.IterG[entry]
)

// never is the moment of something that does not happen: later than
// every field.
const never = math.MaxInt

// errInOrder tells applyUpdate that only updateInOrder handles the input.
var errInOrder = errors.New("update: fields need in-order application")

// mergeItem is one field in a group being split by key: the field's index
// (its moment) and its key at the level being grouped.
type mergeItem struct {
	ki keyInfo
	i  int32
}

type merger struct {
	c      *Command
	fields []Field
	base   int // len(c.Path): fields' absolute paths start with it
	// resolved holds each field with its server values resolved; without
	// any server value, it is fields itself (resolving changes nothing),
	// and sv is false.
	resolved         []Field
	sv               bool
	written, removed int64
	// errAt is the index of the first failing field (len(fields) when
	// none fails), err its error: the one the fields in order would
	// have stopped at.
	errAt int
	err   error
	// fallback is set by an input only updateInOrder handles.
	fallback bool
	// flat says that every field is one key (not ".priority") below the
	// update's node: the echo's members are then that node's touched
	// children, and object builds it on the way (echoNode).
	flat     bool
	echoNode *Node
	// echoDigest holds, for a one-key field, the entry digest of its
	// value under its key, computed for the tree and reused by the echo
	// whose member it also is (echoHas says which are set).
	echoDigest [][4]uint64
	echoHas    []bool
	// levels holds what object uses at each depth.
	levels []*mergeLevel
}

// mergeLevel is what object needs at one depth, reused by every object
// there.
type mergeLevel struct {
	batches [2][]mergeRun
	placer  placer
	placing sync.WaitGroup
}

// mergeUpdate applies fields at c.Path to root. It returns errInOrder for
// inputs it leaves to updateInOrder.
func mergeUpdate(root *Node, c *Command, fields []Field) (*Node, []Field, *Node, error) {
	if !mergeable(c, fields) {
		return nil, nil, nil, errInOrder
	}
	m := &merger{
		c: c, fields: fields, base: len(c.Path),
		resolved: fields,
		errAt:    len(fields),
		flat:     true,
	}
	for _, f := range fields {
		if len(f.Path) != 1 || f.Path[0] == ".priority" {
			m.flat = false
		}
		if f.Value != nil && f.Value.hasSV {
			m.sv = true
		}
	}
	if m.sv {
		m.resolved = make([]Field, len(fields))
	}
	if !m.flat {
		m.echoDigest = make([][4]uint64, len(fields))
		m.echoHas = make([]bool, len(fields))
	}
	grp := make([]mergeItem, len(fields))
	for i := range grp {
		grp[i].i = int32(i)
	}
	newRoot, _, _ := m.node(root, grp, 0)
	if m.fallback {
		return nil, nil, nil, errInOrder
	}
	if m.err != nil {
		return nil, nil, nil, m.err
	}
	if err := checkWriteLimit(c.WriteLimit, m.written, m.removed); err != nil {
		return nil, nil, nil, err
	}
	echo := m.echoNode
	if !m.flat {
		echo = m.echo()
	}
	return newRoot, m.resolved, echo, nil
}

// mergeable reports whether the fields are the parser's kind: none empty,
// ".priority" only as a field's last key, every key UTF-8 (the key order
// is only a total order on those; sorting relies on it).
func mergeable(c *Command, fields []Field) bool {
	if len(fields) > math.MaxInt32 {
		return false
	}
	for _, k := range c.Path {
		if k == ".priority" || !utf8.ValidString(k) {
			return false
		}
	}
	for _, f := range fields {
		if len(f.Path) == 0 {
			return false
		}
		for j, k := range f.Path {
			if (k == ".priority" && j != len(f.Path)-1) || !utf8.ValidString(k) {
				return false
			}
		}
	}
	return true
}

// fail records err for field i; the first field's error wins.
func (m *merger) fail(i int32, err error) {
	if int(i) < m.errAt {
		m.errAt, m.err = int(i), err
	}
}

// seg is field i's key at depth d >= m.base of its absolute path.
func (m *merger) seg(i int32, d int) string { return m.fields[i].Path[d-m.base] }

// depth is the length of field i's absolute path.
func (m *merger) depth(i int32) int { return m.base + len(m.fields[i].Path) }

// node returns what the fields in grp — every field whose path goes
// through or ends at this node, at depth d, whose value before the update
// is old — make of it, with the moments (field indices) at which it first
// became null (died) and first became non-null again (born); never for
// what does not happen. grp's keys are scratch space for the levels below.
func (m *merger) node(old *Node, grp []mergeItem, d int) (n *Node, died, born int) {
	if len(grp) == 1 && m.depth(grp[0].i) == d {
		return m.set(old, grp[0].i)
	}
	if d < m.base {
		// Above the update's path every field goes through one child.
		return m.object(old, grp, d, 1, -1, nil)
	}
	// Split off the priority field, if any, and key the others by their
	// child's key, in key order (often the order they came in).
	prio := int32(-1)
	for j := 0; j < len(grp); j++ {
		i := grp[j].i
		if m.depth(i) == d { // a field here and others below: overlap
			m.fallback = true
			return old, never, never
		}
		k := m.seg(i, d)
		if k == ".priority" {
			if prio >= 0 { // twice the same path
				m.fallback = true
				return old, never, never
			}
			prio = i
			last := len(grp) - 1
			grp[j], grp[last] = grp[last], grp[j]
			grp = grp[:last]
			j--
			continue
		}
		grp[j].ki = newKeyInfo(k)
	}
	if !slices.IsSortedFunc(grp, cmpMergeItem) {
		slices.SortFunc(grp, cmpMergeItem)
	}
	var p *Node
	if prio >= 0 {
		p = m.priority(old, prio)
	}
	runs := 0
	for j := range grp {
		if j == 0 || grp[j].ki.key != grp[j-1].ki.key {
			runs++
		}
	}
	return m.object(old, grp, d, runs, prio, p)
}

func cmpMergeItem(a, b mergeItem) int { return compareKeyInfo(&a.ki, &b.ki) }

// set applies field i, which replaces the node (old) at its path.
func (m *merger) set(old *Node, i int32) (*Node, int, int) {
	f := m.fields[i]
	if err := checkIncrements(m.c, f.Value, old); err != nil {
		m.fail(i, err)
		return old, never, never
	}
	v := resolve(f.Value, old, m.c.Now)
	m.written += v.Size()
	m.removed += old.Size()
	if m.sv {
		m.resolved[i] = Field{Path: f.Path, Value: v}
	}
	died, born := never, never
	switch {
	case old != nil && v == nil:
		died = int(i)
	case old == nil && v != nil:
		born = int(i)
	}
	return v, died, born
}

// priority resolves field i, which sets the priority of old's node, and
// returns the priority.
func (m *merger) priority(old *Node, i int32) *Node {
	f := m.fields[i]
	cur := old.Priority()
	if err := checkIncrements(m.c, f.Value, cur); err != nil {
		m.fail(i, err)
		return nil
	}
	v := resolve(f.Value, cur, m.c.Now)
	m.written += v.Size()
	m.removed += cur.Size()
	if err := checkPriority(v); err != nil {
		m.fail(i, err)
	}
	if m.sv {
		m.resolved[i] = Field{Path: f.Path, Value: v}
	}
	return v
}

// mergeBatch is how many children object merges at a time: their
// subtrees and entry digests are computed together, by several
// goroutines when there are enough of them (parallelMin), while the
// batch before is put in place (a variable for tests).
var mergeBatch = 8192

// mergeRun is one child being merged: its key, its fields (grp[lo:hi]),
// its old value, what the fields make of it and when, and the entry
// digests object needs.
type mergeRun struct {
	ki          keyInfo
	lo, hi      int
	skip        int // old children left alone just before this one
	was, child  *Node
	died, born  int
	digest      [4]uint64 // of child, when it changed and is not null
	wasDigest   [4]uint64 // of was, when it changed in place
	digestKnown bool
}

// placer puts an object's merged children in place, batch after batch
// in key order, and adds up what the object's node is made of.
type placer struct {
	m        *merger
	grp      []mergeItem
	inPlace  bool
	oneKey   bool // one-key fields are also members of a (non-flat) echo
	children *btreeChildren
	load     btreeIter // the old children, when loading
	loadOK   bool
	dropped  []entry // changed old children, when loading
	// echo is the echo of a flat update (the children loaded alongside),
	// or nil; echoing says that there is one to sum up, in echo or in
	// children (when every child of the node is touched).
	echo       *btreeChildren
	echoing    bool
	echoSum    [4]uint64
	echoHasSV  bool
	added      [4]uint64 // lane sum of the changed children's new entries
	removed    [4]uint64 // lane sum of the changed children's old entries (in place)
	oldSize    int64     // sizes of the changed children's old entries
	newSize    int64     // sizes of the changed children's new entries
	bornSize   int64     // sizes of all touched children's entries after
	hasSV      bool
	changed    bool
	kept       int // old children the fields left as they were
	oldDeaths  int // old children that died
	lastDeath  int
	firstBirth int
}

// place puts batch in place.
func (pl *placer) place(batch []mergeRun) {
	m := pl.m
	for bi := range batch {
		r := &batch[bi]
		for range r.skip {
			pl.children.Load(pl.load.Item())
			pl.loadOK = pl.load.Next()
			pl.kept++
		}
		if r.was != nil && !pl.inPlace {
			pl.loadOK = pl.load.Next()
		}
		ki, was, child := r.ki, r.was, r.child
		if was != nil && r.died != never {
			pl.oldDeaths++
			pl.lastDeath = max(pl.lastDeath, r.died)
		}
		pl.firstBirth = min(pl.firstBirth, r.born)
		if child != nil {
			pl.bornSize += entrySize(ki.key, child)
		}
		if child != was {
			pl.changed = true
			if was != nil {
				pl.oldSize += entrySize(ki.key, was)
				switch {
				case pl.inPlace:
					pl.removed = addLanes(pl.removed, r.wasDigest)
				case pl.dropped != nil:
					pl.dropped = append(pl.dropped, entry{keyInfo: ki, node: was})
				}
			}
			if child != nil {
				pl.newSize += entrySize(ki.key, child)
				pl.added = addLanes(pl.added, r.digest)
				pl.hasSV = pl.hasSV || child.hasSV
				if pl.oneKey && r.hi == r.lo+1 && len(m.fields[pl.grp[r.lo].i].Path) == 1 {
					m.echoDigest[pl.grp[r.lo].i], m.echoHas[pl.grp[r.lo].i] = r.digest, true
				}
			}
			if pl.inPlace {
				if child == nil {
					pl.children.Delete(entry{keyInfo: ki})
				} else {
					pl.children.Set(entry{keyInfo: ki, node: child})
				}
			}
		} else if was != nil {
			pl.kept++
		}
		if child == nil {
			continue
		}
		if !pl.inPlace {
			pl.children.Load(entry{keyInfo: ki, node: child})
		}
		if pl.echoing {
			dg := r.digest
			if !r.digestKnown {
				dg = entryDigest(ki.key, child)
			}
			pl.echoSum = addLanes(pl.echoSum, dg)
			pl.echoHasSV = pl.echoHasSV || child.hasSV
			if pl.echo != nil {
				pl.echo.Load(entry{keyInfo: ki, node: child})
			}
		}
	}
}

// object merges the children's fields, grouped in runs of one key (runs
// of them) and sorted — or, above the update's node (d < m.base), all of
// them through one child — and the priority p set by field prio (if >= 0)
// into old.
func (m *merger) object(old *Node, grp []mergeItem, d, runs int, prio int32, p *Node) (*Node, int, int) {
	oldObj := old.Kind() == KindObject
	oldLen := old.Len()
	// Batches alternate between two buffers, and the placer is reused:
	// both are kept per depth for the next object there (a million small
	// objects would otherwise allocate them a million times).
	for len(m.levels) <= d {
		m.levels = append(m.levels, new(mergeLevel))
	}
	lv := m.levels[d]
	pl := &lv.placer
	*pl = placer{
		m: m, grp: grp, oneKey: d == m.base && !m.flat,
		lastDeath: -1, firstBirth: never,
		// A few changes to a large object copy its B-tree (copy on
		// write) and change it key by key; otherwise the children are
		// loaded, in order, into a new B-tree, the old object's
		// unchanged ones between the changed ones.
		inPlace: oldObj && runs*8 < oldLen,
	}
	var (
		find   btreeIter // the old children, looked up
		findOK bool
	)
	if pl.inPlace {
		pl.children = old.children.Copy()
	} else {
		pl.children = newChildren()
		if oldObj {
			find, pl.load = old.children.Iter(), old.children.Iter()
			findOK, pl.loadOK = find.First(), pl.load.First()
			defer find.Release()
			defer pl.load.Release()
		}
	}
	// The echo of a flat update is made of the touched children of the
	// update's node, in the same order: when they are all its children,
	// the same B-tree serves both (and the node's lane sum is the echo's);
	// otherwise the echo is loaded alongside.
	if m.flat && d == m.base {
		pl.echoing = true
		if oldObj && (pl.inPlace || !touchesAll(old, grp)) {
			pl.echo = newChildren()
		}
	}
	if oldObj && !pl.inPlace && (!pl.echoing || pl.echo != nil) {
		pl.dropped = make([]entry, 0, min(runs, oldLen))
	}
	// While one batch is put in place, the next one is merged.
	bufs := &lv.batches
	pipelined := runs > mergeBatch && runtime.GOMAXPROCS(0) > 1
	placing := &lv.placing
	defer placing.Wait() // before anything returns, fallback included
	for j, k := 0, 0; j < len(grp); k++ {
		// Cut the next batch of runs and find their old values.
		batch := bufs[k%2][:0]
		for j < len(grp) && len(batch) < mergeBatch {
			r := mergeRun{lo: j, hi: len(grp)}
			if d < m.base {
				r.ki = newKeyInfo(m.c.Path[d])
			} else {
				r.ki = grp[j].ki
				r.hi = j + 1
				for r.hi < len(grp) && grp[r.hi].ki.key == r.ki.key {
					r.hi++
				}
			}
			switch {
			case pl.inPlace:
				if e, ok := old.children.Get(entry{keyInfo: r.ki}); ok {
					r.was = e.node
				}
			case findOK:
				for findOK {
					e := find.Item()
					c := compareKeyInfo(&e.keyInfo, &r.ki)
					if c > 0 {
						break
					}
					findOK = find.Next()
					if c == 0 {
						r.was = e.node
						break
					}
					r.skip++
				}
			}
			batch = append(batch, r)
			j = r.hi
		}
		bufs[k%2] = batch
		m.mergeRuns(batch, grp, d+1, pl.inPlace)
		placing.Wait()
		if m.fallback {
			return old, never, never
		}
		if pipelined {
			placing.Go(func() { pl.place(batch) })
		} else {
			pl.place(batch)
		}
	}
	placing.Wait()
	for ; pl.loadOK; pl.loadOK = pl.load.Next() {
		pl.children.Load(pl.load.Item())
		pl.kept++
	}
	children := pl.children
	if pl.echoing {
		// Every touched child is a member, and only those: the echo's
		// size is that of an object made of them.
		switch {
		case pl.echo != nil && pl.echo.Len() > 0:
			m.echoNode = newObject(pl.echo, pl.echoSum, 2+pl.bornSize, nil, pl.echoHasSV)
		case pl.echo == nil && children.Len() > 0:
			m.echoNode = newObject(children, pl.echoSum, 2+pl.bornSize, nil, pl.echoHasSV)
		}
	}

	tp := never // the priority field's moment
	if prio >= 0 {
		tp = int(prio)
	}
	hasSV, firstBirth, lastDeath := pl.hasSV, pl.firstBirth, pl.lastDeath
	if children.Len() == 0 {
		switch {
		case old == nil:
			return nil, never, never
		case !oldObj: // a leaf that no field turned into an object
			if tp != never {
				return old.WithPriority(p), never, never
			}
			return old, never, never
		}
		// Every old child died, and none was born again: the node died
		// with the last of them.
		return nil, lastDeath, never
	}
	switch {
	case oldObj && !(pl.oldDeaths == oldLen && lastDeath < firstBirth):
		// The same object throughout: what changed is its children and
		// maybe its priority, set on the object whenever it came.
		if !pl.changed && tp == never {
			return old, never, never
		}
		var sum [4]uint64
		switch {
		case pl.echoing && pl.echo == nil:
			sum = pl.echoSum // the echo's members are all the children
		case pl.inPlace || len(pl.dropped) <= pl.kept:
			sum = subLanes(addLanes(old.sumLanes(), pl.added), addLanes(pl.removed, sumDigests(pl.dropped)))
		default:
			// Most old children changed: hashing the few kept ones
			// costs less than hashing every dropped one.
			sum = addLanes(pl.added, keptLanes(old, pl.dropped))
		}
		n := newObject(children, sum, old.size-pl.oldSize+pl.newSize, old.prio, old.hasSV || hasSV)
		if tp != never {
			n = n.WithPriority(p)
		}
		return n, never, never
	case old != nil && !oldObj:
		// A leaf turned into an object when its first child was born,
		// keeping the priority it had then.
		pc := old.prio
		if tp < firstBirth {
			pc = old.WithPriority(p).prio
		}
		size := 2 + pl.bornSize
		if pc != nil {
			size += pc.size + 16
			hasSV = hasSV || pc.hasSV
		}
		n := newObject(children, pl.added, size, pc, hasSV)
		if tp != never && tp > firstBirth {
			n = n.WithPriority(p)
		}
		return n, never, never
	}
	// A new object, made when its first child was born (for an old
	// object: again, after all its children died): every child it has is
	// one the fields touched, and a priority only counts if it came after.
	n := newObject(children, pl.added, 2+pl.bornSize, nil, hasSV)
	if tp != never && tp > firstBirth {
		n = n.WithPriority(p)
	}
	died := never
	if oldObj {
		died = lastDeath
	}
	return n, died, firstBirth
}

// touchesAll reports whether grp, sorted one field per key (a flat
// update's), has a field for every child of object old.
func touchesAll(old *Node, grp []mergeItem) bool {
	if len(grp) < old.Len() {
		return false
	}
	it := old.children.Iter()
	defer it.Release()
	ok, j := it.First(), 0
	for ; ok; ok = it.Next() {
		e := it.Item()
		for j < len(grp) && compareKeyInfo(&grp[j].ki, &e.keyInfo) < 0 {
			j++
		}
		if j == len(grp) || grp[j].ki.key != e.key {
			return false
		}
	}
	return true
}

// mergeRuns merges each run's subtree at depth d and computes the
// digests its parent needs. Subtrees share nothing but the merger's
// totals, so a large batch is split among goroutines, each with totals of
// its own, added up after: the result does not depend on how.
func (m *merger) mergeRuns(batch []mergeRun, grp []mergeItem, d int, inPlace bool) {
	workers := workersFor(len(batch))
	if workers < 2 {
		m.mergeRunsOn(batch, grp, d, inPlace)
		return
	}
	ws := make([]merger, workers)
	var wg sync.WaitGroup
	for w := range ws {
		ws[w] = *m
		ws[w].levels = nil
		ws[w].written, ws[w].removed = 0, 0
		ws[w].errAt, ws[w].err = len(m.fields), nil
		lo, hi := w*len(batch)/workers, (w+1)*len(batch)/workers
		if w == 0 {
			continue // this goroutine's share, below
		}
		wg.Go(func() { ws[w].mergeRunsOn(batch[lo:hi], grp, d, inPlace) })
	}
	ws[0].mergeRunsOn(batch[:len(batch)/workers], grp, d, inPlace)
	wg.Wait()
	for w := range ws {
		m.written += ws[w].written
		m.removed += ws[w].removed
		if ws[w].err != nil {
			m.fail(int32(ws[w].errAt), ws[w].err)
		}
		m.fallback = m.fallback || ws[w].fallback
	}
}

func (m *merger) mergeRunsOn(batch []mergeRun, grp []mergeItem, d int, inPlace bool) {
	for bi := range batch {
		r := &batch[bi]
		r.child, r.died, r.born = m.node(r.was, grp[r.lo:r.hi], d)
		if m.fallback {
			return
		}
		if r.child != r.was {
			if r.child != nil {
				r.digest, r.digestKnown = entryDigest(r.ki.key, r.child), true
			}
			if r.was != nil && inPlace {
				r.wasDigest = entryDigest(r.ki.key, r.was)
			}
		}
	}
}

// keptLanes is the lane sum of old's children other than dropped (a
// subsequence of them, in order).
func keptLanes(old *Node, dropped []entry) [4]uint64 {
	kept := make([]entry, 0, old.Len()-len(dropped))
	j := 0
	old.children.Scan(func(e entry) bool {
		if j < len(dropped) && dropped[j].node == e.node && dropped[j].key == e.key {
			j++
		} else {
			kept = append(kept, e)
		}
		return true
	})
	return sumDigests(kept)
}

// echo builds the update's echo: an object whose members are the fields'
// paths joined with "/" and their resolved values (nulls left out; of
// fields joined to the same name, the last one).
func (m *merger) echo() *Node {
	type member struct {
		ki keyInfo
		i  int32
	}
	members := make([]member, 0, len(m.resolved))
	for i, f := range m.resolved {
		if f.Value == nil {
			continue
		}
		key := f.Path[0]
		if len(f.Path) > 1 {
			key = joinPath(f.Path)
		}
		members = append(members, member{newKeyInfo(key), int32(i)})
	}
	if len(members) == 0 {
		return nil
	}
	cmp := func(a, b member) int {
		if c := compareKeyInfo(&a.ki, &b.ki); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	}
	if !slices.IsSortedFunc(members, cmp) {
		slices.SortFunc(members, cmp)
	}
	// A later field of the same name replaces an earlier one.
	last := func(j int) bool { return j+1 == len(members) || members[j+1].ki.key != members[j].ki.key }
	var (
		size  = int64(2)
		hasSV bool
	)
	children := newChildren()
	for j, mb := range members {
		if last(j) {
			v := m.resolved[mb.i].Value
			size += entrySize(mb.ki.key, v)
			hasSV = hasSV || v.hasSV
			children.Load(entry{keyInfo: mb.ki, node: v})
		}
	}
	// The digests the tree's merge computed already are reused.
	sum := parallelLanes(len(members), func(lo, hi int) [4]uint64 {
		var sum [4]uint64
		for j, mb := range members[lo:hi] {
			switch {
			case !last(lo + j):
			case m.echoHas[mb.i]:
				sum = addLanes(sum, m.echoDigest[mb.i])
			default:
				sum = addLanes(sum, entryDigest(mb.ki.key, m.resolved[mb.i].Value))
			}
		}
		return sum
	})
	return newObject(children, sum, size, nil, hasSV)
}

// updateInOrder applies the fields one after the other: the definition
// of an Update, kept for the inputs mergeUpdate leaves to it.
func updateInOrder(s *state, c *Command, fields []Field) (*Node, []Field, *Node, error) {
	root := s.root
	echo := newObjectBuilder()
	resolved := make([]Field, len(fields))
	var written, removed int64
	// The fields' paths never overlap but often share their parents: the
	// first field copies them, the others change those copies in place.
	mine := owned{}
	for i, f := range fields {
		abs := append(append(Path{}, c.Path...), f.Path...)
		cur := s.root.Get(abs)
		if abs.IsPriority() {
			cur = s.root.Get(nodePath(abs)).Priority()
		}
		if err := checkIncrements(c, f.Value, cur); err != nil {
			return nil, nil, nil, err
		}
		v := resolve(f.Value, cur, c.Now)
		written += v.Size()
		removed += cur.Size()
		var err error
		if root, err = setValue(root, abs, v, mine); err != nil {
			return nil, nil, nil, err
		}
		resolved[i] = Field{Path: f.Path, Value: v}
		echo.set(joinPath(f.Path), v)
	}
	if err := checkWriteLimit(c.WriteLimit, written, removed); err != nil {
		return nil, nil, nil, err
	}
	return root, resolved, echo.build(nil), nil
}

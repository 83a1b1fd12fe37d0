package tree

import (
	"runtime"
	"sync"
)

// The children of one object of a merge (merge.go): the fields that go
// below it, grouped by child key, merged in batches — the batch's
// subtrees and entry digests by several goroutines, while the batch
// before is put in place in the object's new B-tree.

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
					pl.dropped = append(pl.dropped, entry{key: ki.key, node: was})
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
					pl.children.Delete(entry{key: ki.key})
				} else {
					pl.children.Set(entry{key: ki.key, node: child})
				}
			}
		} else if was != nil {
			pl.kept++
		}
		if child == nil {
			continue
		}
		if !pl.inPlace {
			pl.children.Load(entry{key: ki.key, node: child})
		}
		if pl.echoing {
			dg := r.digest
			if !r.digestKnown {
				dg = entryDigest(ki.key, child)
			}
			pl.echoSum = addLanes(pl.echoSum, dg)
			pl.echoHasSV = pl.echoHasSV || child.hasSV
			if pl.echo != nil {
				pl.echo.Load(entry{key: ki.key, node: child})
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
		pl.children = old.obj.children.Copy()
	} else {
		pl.children = newChildren()
		if oldObj {
			find, pl.load = old.obj.children.Iter(), old.obj.children.Iter()
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
				r.ki = newKeyInfo(m.w.Path[d])
			} else {
				r.ki = grp[j].ki
				r.hi = j + 1
				for r.hi < len(grp) && grp[r.hi].ki.key == r.ki.key {
					r.hi++
				}
			}
			switch {
			case pl.inPlace:
				if e, ok := old.obj.children.Get(entry{key: r.ki.key}); ok {
					r.was = e.node
				}
			case findOK:
				for findOK {
					e := find.Item()
					c := compareKeyTo(e.key, &r.ki)
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
		n := newObject(children, sum, old.obj.size-pl.oldSize+pl.newSize, old.prio, old.hasSV || hasSV)
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
			size += pc.Size() + 16
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
	it := old.obj.children.Iter()
	defer it.Release()
	ok, j := it.First(), 0
	for ; ok; ok = it.Next() {
		e := it.Item()
		for j < len(grp) && compareKeyTo(e.key, &grp[j].ki) > 0 {
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
	old.obj.children.Scan(func(e entry) bool {
		if j < len(dropped) && dropped[j].node == e.node && dropped[j].key == e.key {
			j++
		} else {
			kept = append(kept, e)
		}
		return true
	})
	return sumDigests(kept)
}

package fsm

import "github.com/arbordb/arbor/fsm/tree"

// Keeping the `.indexOn` indexes through writes. Apply calls indexesAfter
// for every entry that changed the state; the set it returns is the one
// buildIndexSet would build from scratch for the new tree (the invariant
// TestIndexesFollowWrites checks), at a cost proportional to
// the write: a write of one child costs O(log n) per index it touches,
// whatever the size of the indexed node.

// indexesAfter returns the index set of next, the state a successful cmd
// (whose result is res) made of s. New rules are indexed afresh, keeping
// the indexes they still declare; a write updates what it touched.
func indexesAfter(s, next *state, cmd *Command, res Result) *IndexSet {
	if cmd.Kind == CmdSetRules {
		if next.rules == nil {
			return nil
		}
		return carryIndexSet(next.rules.Set, s.indexes)
	}
	if s.indexes == nil {
		return nil // writtenPaths of a million-field PATCH costs ~100 ms
	}
	return s.indexes.afterWrite(s.root, next.root, writtenPaths(cmd, res))
}

// afterWrite returns the set for newRoot, made from oldRoot, the tree s
// indexes, by writes at paths (every path below which something changed).
func (s *IndexSet) afterWrite(oldRoot, newRoot *tree.Node, paths [][]string) *IndexSet {
	if s == nil || oldRoot == newRoot {
		return s
	}
	w := indexWriter{old: s, oldRoot: oldRoot, newRoot: newRoot}
	for _, p := range paths {
		w.written(p)
	}
	if s.pending != nil {
		// The indexes being built will catch up with these paths.
		w.set().pending = s.pending.add(paths)
	}
	if w.next == nil {
		return s
	}
	return w.next
}

// indexWriter makes the index set after one write.
type indexWriter struct {
	old              *IndexSet
	oldRoot, newRoot *tree.Node
	// next is the new set, nil until the write changes an index; its
	// location tree is a copy-on-write copy of old's.
	next *IndexSet
	// fresh holds the indexes made during this write: nothing published
	// refers to them yet, so they change in place.
	fresh map[*locIndex]struct{}
}

// set returns the new set, copying old's on first use.
func (w *indexWriter) set() *IndexSet {
	if w.next == nil {
		n := *w.old
		n.locs = w.old.locs.Copy()
		w.next, w.fresh = &n, map[*locIndex]struct{}{}
	}
	return w.next
}

// current returns the index at key as this write has left it so far.
func (w *indexWriter) current(key string) *locIndex {
	if w.next != nil {
		return w.next.get(key)
	}
	return w.old.get(key)
}

// put stores ix in the new set; a fresh one may be changed in place later.
func (w *indexWriter) put(li *locIndex, fresh bool) {
	w.set().locs.Set(li)
	if fresh {
		w.fresh[li] = struct{}{}
	}
}

// own returns li ready to be changed: itself when fresh, else a copy
// (its index copied on write) that replaces it in the new set.
func (w *indexWriter) own(li *locIndex) *locIndex {
	if _, ok := w.fresh[li]; ok {
		return li
	}
	c := *li
	c.ix = li.ix.Copy()
	w.put(&c, true)
	return &c
}

// written updates the indexes for a write at p. For each declaration, a
// write below one of its locations changes one child of it; a write at or
// above where its locations can be replaces every location below p.
func (w *indexWriter) written(p tree.Path) {
	if w.oldRoot.Get(p) == w.newRoot.Get(p) {
		return // nothing at or below p changed (a no-op, or another path's parent)
	}
	above := false
	for i := range w.old.decls {
		d := &w.old.decls[i]
		m := len(d.pattern)
		switch {
		case len(p) > m && patternMatches(d.pattern, p[:m]):
			w.updateChild(d, p[:m], p[m])
		case len(p) <= m && patternMatches(d.pattern[:len(p)], p):
			above = true
		}
	}
	if above {
		w.replaceBelow(p)
	}
}

// updateChild brings the index of loc by d up to date for a write below
// its child k: the child's old entry goes, its new one (if any) comes.
func (w *indexWriter) updateChild(d *indexDecl, loc tree.Path, k string) {
	if !w.old.declares(loc, d.child) {
		return
	}
	key := indexKey(loc, d.child)
	cur := w.current(key)
	n := w.newRoot.Get(loc)
	if n.Kind() != tree.KindObject {
		// The write removed the location's last child, or made it a leaf.
		if cur != nil {
			w.set().locs.Delete(cur)
		}
		return
	}
	if cur == nil {
		// The location was null or a leaf: all its children are new (or,
		// in a partial set, its index is being built).
		if li, _ := indexFor(nil, key, loc, d, n, w.old.pending == nil); li != nil {
			w.put(li, true)
		}
		return
	}
	was, c := w.oldRoot.Get(loc).Child(k), n.Child(k)
	if cur.ix.KeepsPlace(was, c) {
		// The write changed other fields of the child (the very node it
		// is ordered by is still there): its place stays.
		w.retarget(cur, n)
		return
	}
	w.own(cur).ix.Move(n, k, was, c)
}

// retarget makes li the index of n, a new version of its node with the
// same children in the same order.
func (w *indexWriter) retarget(li *locIndex, n *tree.Node) {
	if _, ok := w.fresh[li]; ok {
		li.ix = li.ix.Retarget(n)
		return
	}
	c := *li
	c.ix = li.ix.Retarget(n)
	w.put(&c, false) // its items are still old's: own copies them if need be
}

// replaceBelow re-indexes every location at or below p: those gone are
// dropped, those whose node did not change keep their index, the others
// are built from the new tree (whose nodes there the write brought, so
// the cost is the write's).
func (w *indexWriter) replaceBelow(p tree.Path) {
	s := w.set()
	lo, hi := locKey(p), locKey(p)+locAfterAll
	var gone []*locIndex
	s.locs.Ascend(&locIndex{key: lo}, func(li *locIndex) bool {
		if li.key >= hi {
			return false
		}
		gone = append(gone, li)
		return true
	})
	for _, li := range gone {
		s.locs.Delete(li)
	}
	at := w.newRoot.Get(p)
	for i := range s.decls {
		d := &s.decls[i]
		if len(p) > len(d.pattern) || !patternMatches(d.pattern[:len(p)], p) {
			continue
		}
		walkPattern(at, p, d.pattern[len(p):], func(loc tree.Path, n *tree.Node) {
			if !s.declares(loc, d.child) {
				return
			}
			key := indexKey(loc, d.child)
			if li, built := indexFor(w.old.get(key), key, loc, d, n, s.pending == nil); li != nil {
				w.put(li, built)
			}
		})
	}
}

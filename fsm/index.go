package fsm

import (
	"slices"
	"strings"

	"github.com/tidwall/btree"

	"github.com/arbordb/arbor/fsm/rules"
)

// index*.go are the `.indexOn` indexes of SPEC §8: declared by the rules
// in force, kept by Apply on every replica (index_write.go) and walked by
// orderByChild and orderByValue queries instead of a scan of every child
// (index_query.go). This file is the structure and how it is built from
// scratch: when rules are set, and after a snapshot is restored.

// IndexSet is the `.indexOn` indexes of one state: for every location
// whose rules declare an index, and every child path declared there, the
// location's children in the order a query by that child path sorts them.
// It is a pure function of the rules and the tree, so every replica holds
// the same one, and it never changes once published: a write makes a new
// set sharing everything the write did not touch, as the tree does. Indexes
// are not written to snapshots; Restore rebuilds them. A nil *IndexSet has
// no indexes.
type IndexSet struct {
	rules *rules.Ruleset
	decls []indexDecl
	// locs holds the indexes by key (indexKey): a location's indexes, and
	// those of every location below it, are one run of keys.
	locs *btree.BTreeG[*Index]
}

// indexDecl is one child path of one `.indexOn` declaration.
type indexDecl struct {
	pattern []string  // the rule path; a "$name" segment matches any key
	child   string    // ".value", or a child path "a/b" as declared
	keys    []keyInfo // child split into keys; nil for ".value"
}

// Index is the children of one location ordered by one declared child
// path (or by their own value for ".value"), then by key: exactly the
// order of a query by it. It is never changed once published.
type Index struct {
	key   string // indexKey(loc, child)
	loc   Path
	child string
	keys  []keyInfo
	// of is the object indexed: a query uses the index only for that very
	// node, so an index can never answer for another version of the tree.
	of    *Node
	items *btree.BTreeG[indexItem]
}

// indexItem is one child in an index: its index value and its key. The
// child node itself is not kept — a query takes it from the node it
// queries — so that the items a write copies (a B-tree node's worth on
// each level of two paths) are as small as can be.
//
// A seek pivot of a range bound without a tie-breaker key has an empty
// key (no real key is empty) and ival -1 or +1: it sorts before or after
// every key with the same index value.
type indexItem struct {
	idx *Node
	keyInfo
}

// ext is a pivot's place among the keys of its index value: -1 before
// them all, +1 after, 0 for a real key.
func (it *indexItem) ext() int {
	if it.key == "" {
		return int(it.ival)
	}
	return 0
}

// compareIndexItems is the query order of compareIndexed, extended to
// pivots.
func compareIndexItems(a, b indexItem) int {
	if c := compareValues(a.idx, b.idx); c != 0 {
		return c
	}
	if ea, eb := a.ext(), b.ext(); ea != 0 || eb != 0 {
		return cmpInt(ea, eb)
	}
	return compareKeyInfo(&a.keyInfo, &b.keyInfo)
}

func lessIndexItem(a, b indexItem) bool { return compareIndexItems(a, b) < 0 }

// indexDegree is the B-tree degree of index items. A write copies a
// B-tree node per level on two paths (the child's old place and its new
// one), so nodes half as wide as the children's save a one-child write
// into 100,000 indexed children a fifth of its bytes (BenchmarkIndexedWrite);
// a range walk hardly notices.
const indexDegree = 8

func newIndexItems() *btree.BTreeG[indexItem] {
	return btree.NewBTreeGOptions(lessIndexItem, btree.Options{NoLocks: true, Degree: indexDegree})
}

func lessIndexKey(a, b *Index) bool { return a.key < b.key }

func newIndexLocs() *btree.BTreeG[*Index] {
	return btree.NewBTreeGOptions(lessIndexKey, btreeOpts)
}

// Key bytes: keys hold no control characters (ValidKey), so "\x00" before
// each key makes byte order the order of paths key by key, a location
// before the locations below it; "\x01" then ends the location. The keys
// of p and of everything below it are thus exactly [locKey(p),
// locKey(p)+"\x02").
const (
	locSep      = "\x00"
	locEnd      = "\x01"
	locAfterAll = "\x02"
)

// locKey is the key prefix of the location p.
func locKey(p Path) string {
	var b strings.Builder
	for _, k := range p {
		b.WriteString(locSep)
		b.WriteString(k)
	}
	return b.String()
}

// indexKey is the key of the index of loc by child.
func indexKey(loc Path, child string) string { return locKey(loc) + locEnd + child }

// Len is the number of indexes in the set.
func (s *IndexSet) Len() int {
	if s == nil {
		return 0
	}
	return s.locs.Len()
}

// Len is the number of children indexed.
func (ix *Index) Len() int {
	if ix == nil {
		return 0
	}
	return ix.items.Len()
}

// Lookup returns the index that serves q at p, or nil: none is declared
// there, the location is not an object, or q orders by key or priority
// (which need none). The index belongs to the state s came from; pass it
// with the node read from that same state to Query.EvalWith.
func (s *IndexSet) Lookup(p Path, q *Query) *Index {
	if s == nil || q == nil || (q.order != OrderByValue && q.order != OrderByChild) {
		return nil
	}
	return s.get(indexKey(p, q.IndexName()))
}

// get returns the index whose key is key, or nil.
func (s *IndexSet) get(key string) *Index {
	if s == nil {
		return nil
	}
	ix, _ := s.locs.Get(&Index{key: key})
	return ix
}

// declares reports whether the rules of s declare child at loc. A
// location can be reached by a wildcard pattern while a named rule sibling
// governs it instead; like Firebase, only the rule that governs a location
// declares its indexes.
func (s *IndexSet) declares(loc Path, child string) bool {
	return slices.Contains(s.rules.IndexOn(loc), child)
}

// declsOf lists the child paths set declares, each once per pattern.
func declsOf(set *rules.Ruleset) []indexDecl {
	var out []indexDecl
	for _, d := range set.Indexes() {
		seen := map[string]bool{}
		for _, c := range d.Children {
			if seen[c] {
				continue
			}
			seen[c] = true
			var keys []keyInfo
			if c != ".value" {
				for k := range strings.SplitSeq(c, "/") {
					keys = append(keys, newKeyInfo(k))
				}
			}
			out = append(out, indexDecl{pattern: d.Pattern, child: c, keys: keys})
		}
	}
	return out
}

// buildIndexSet indexes root for every declaration of set (nil: none).
// An index of prev, a set of the same root, is taken over as it is, so
// changing the rules rebuilds only the indexes they add.
func buildIndexSet(set *rules.Ruleset, root *Node, prev *IndexSet) *IndexSet {
	if set == nil {
		return nil
	}
	decls := declsOf(set)
	if len(decls) == 0 {
		return nil
	}
	s := &IndexSet{rules: set, decls: decls, locs: newIndexLocs()}
	for i := range decls {
		d := &decls[i]
		walkPattern(root, nil, d.pattern, func(loc Path, n *Node) {
			if !s.declares(loc, d.child) {
				return
			}
			key := indexKey(loc, d.child)
			ix, _ := indexFor(prev.get(key), key, loc, d, n)
			s.locs.Set(ix)
		})
	}
	return s
}

// walkPattern calls fn for every object below n (which is at at) whose
// path from n matches rest, at wildcard segments visiting every child.
func walkPattern(n *Node, at Path, rest []string, fn func(loc Path, n *Node)) {
	if n.Kind() != KindObject {
		return
	}
	if len(rest) == 0 {
		fn(at, n)
		return
	}
	if !isWildcard(rest[0]) {
		if c := n.Child(rest[0]); c != nil {
			walkPattern(c, at.Child(rest[0]), rest[1:], fn)
		}
		return
	}
	n.children.Scan(func(e entry) bool {
		walkPattern(e.node, at.Child(e.key), rest[1:], fn)
		return true
	})
}

func isWildcard(seg string) bool { return strings.HasPrefix(seg, "$") }

// patternMatches reports whether the path p matches pattern, of the same
// length.
func patternMatches(pattern []string, p Path) bool {
	if len(pattern) != len(p) {
		return false
	}
	for i, seg := range pattern {
		if !isWildcard(seg) && seg != p[i] {
			return false
		}
	}
	return true
}

// indexFor returns the index of the object n at loc for d: prev, an index
// of the same location and child path in an older tree, when it still
// fits — the same node, or one with the same children (only a priority
// changed) — and otherwise a new one, built reports.
func indexFor(prev *Index, key string, loc Path, d *indexDecl, n *Node) (ix *Index, built bool) {
	switch {
	case prev == nil:
	case prev.of == n:
		return prev, false
	case prev.of.Kind() == KindObject && prev.of.children == n.children:
		c := *prev
		c.of = n
		return &c, false
	}
	return buildIndex(key, loc, d, n), true
}

// buildIndex indexes every child of the object n at loc for d. The items
// are sorted first and loaded in order, which B-tree Load makes an append.
func buildIndex(key string, loc Path, d *indexDecl, n *Node) *Index {
	items := make([]indexItem, 0, n.Len())
	n.children.Scan(func(e entry) bool {
		items = append(items, indexItem{idx: valueAt(e.node, d.keys), keyInfo: e.keyInfo})
		return true
	})
	slices.SortFunc(items, compareIndexItems)
	tr := newIndexItems()
	for _, it := range items {
		tr.Load(it)
	}
	return &Index{key: key, loc: slices.Clone(loc), child: d.child, keys: d.keys, of: n, items: tr}
}

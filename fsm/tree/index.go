package tree

import (
	"slices"
	"strings"

	"github.com/tidwall/btree"
)

// Index is the children of one object ordered by one child path (or by
// their own value for ".value"), then by key: exactly the order of a query
// by it, which EvalWith walks instead of scanning every child. Which
// locations are indexed is the rules' business (fsm keeps the `.indexOn`
// indexes of its state); an Index only knows its node and its order. It is
// never changed once published: Copy gives a version a write may change.
type Index struct {
	order IndexOrder
	// of is the object indexed: a query uses the index only for that very
	// node, so an index can never answer for another version of the tree.
	of    *Node
	items *btree.BTreeG[indexItem]
}

// IndexOrder is what an index orders children by: ".value", or a child
// path "a/b" as an `.indexOn` rule declares it.
type IndexOrder struct {
	child string
	keys  []keyInfo // child split into keys; nil for ".value"
}

// NewIndexOrder parses the order of an `.indexOn` declaration: ".value"
// or a child path whose keys are separated by "/".
func NewIndexOrder(child string) IndexOrder {
	o := IndexOrder{child: child}
	if child != ".value" {
		for k := range strings.SplitSeq(child, "/") {
			o.keys = append(o.keys, newKeyInfo(k))
		}
	}
	return o
}

// Child is the order as declared: ".value" or a child path "a/b".
func (o IndexOrder) Child() string { return o.child }

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
	return CompareKeys(a.key, b.key)
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

// BuildIndex indexes every child of the object n by o. The items are
// sorted first and loaded in order, which B-tree Load makes an append.
func BuildIndex(n *Node, o IndexOrder) *Index {
	items := make([]indexItem, 0, n.Len())
	if n.Kind() == KindObject {
		n.obj.children.Scan(func(e entry) bool {
			items = append(items, indexItem{idx: valueAt(e.node, o.keys), keyInfo: newKeyInfo(e.key)})
			return true
		})
	}
	slices.SortFunc(items, compareIndexItems)
	tr := newIndexItems()
	for _, it := range items {
		tr.Load(it)
	}
	return &Index{order: o, of: n, items: tr}
}

// Len is the number of children indexed.
func (ix *Index) Len() int {
	if ix == nil {
		return 0
	}
	return ix.items.Len()
}

// Order is what ix orders by.
func (ix *Index) Order() IndexOrder { return ix.order }

// Of is the object ix indexes (nil for a nil ix).
func (ix *Index) Of() *Node {
	if ix == nil {
		return nil
	}
	return ix.of
}

// Each calls fn for every child in index order, with its key and the
// value it is ordered by (nil for null), until fn returns false.
func (ix *Index) Each(fn func(key string, value *Node) bool) {
	ix.items.Scan(func(it indexItem) bool { return fn(it.key, it.idx) })
}

// Reuse returns ix as the index of n, a version of ix's node, when it
// still fits — the same node, or one with the same children (only a
// priority changed) — and nil when n needs an index built anew.
func (ix *Index) Reuse(n *Node) *Index {
	switch {
	case ix == nil:
		return nil
	case ix.of == n:
		return ix
	case ix.of.Kind() == KindObject && n.Kind() == KindObject && ix.of.obj.children == n.obj.children:
		return ix.Retarget(n)
	}
	return nil
}

// Retarget returns ix as the index of n, a new version of its node with
// the same children in the same order. The two share their items.
func (ix *Index) Retarget(n *Node) *Index {
	c := *ix
	c.of = n
	return &c
}

// Copy returns a copy of ix that Move may change (its items are copied
// on write).
func (ix *Index) Copy() *Index {
	c := *ix
	c.items = ix.items.Copy()
	return &c
}

// KeepsPlace reports whether a child that changed from was to now keeps
// its place in ix: both exist and the very node it is ordered by is still
// there (the write changed other fields of the child).
func (ix *Index) KeepsPlace(was, now *Node) bool {
	return was != nil && now != nil && valueAt(was, ix.order.keys) == valueAt(now, ix.order.keys)
}

// Move changes ix in place into the index of n, a version of its node in
// which only the child k changed, from was to now (nil: missing): its old
// entry goes, its new one comes. Only for an index nothing else sees yet
// (from Copy or BuildIndex during one write).
func (ix *Index) Move(n *Node, k string, was, now *Node) {
	ki := newKeyInfo(k)
	if was != nil {
		ix.items.Delete(indexItem{idx: valueAt(was, ix.order.keys), keyInfo: ki})
	}
	if now != nil {
		ix.items.Set(indexItem{idx: valueAt(now, ix.order.keys), keyInfo: ki})
	}
	ix.of = n
}

package tree

import (
	"context"
	"errors"
	"slices"
)

// QueryResult is what a query chose: the children in query order, or the
// location's own value when it is not an object and the query only orders.
type QueryResult struct {
	children []entry // in query order
	leaf     *Node   // a non-object location returned as is
	prio     *Node   // the location's priority, kept when nothing is filtered
	shallow  bool
}

// Len is the number of chosen children.
func (r QueryResult) Len() int { return len(r.children) }

// Each calls fn for every chosen child in query order until fn returns false.
func (r QueryResult) Each(fn func(key string, child *Node) bool) {
	for _, e := range r.children {
		if !fn(e.key, e.node) {
			return
		}
	}
}

// cancelCheckEvery is how many children evaluation visits between looks at
// the context: often enough to stop a scan of a million children within a
// millisecond or so, rarely enough to cost nothing.
const cancelCheckEvery = 4096

// Eval runs the query over n, the value at the queried location. The range
// is applied first, then the limit from its end. Like the Firebase SDKs'
// filters, a non-object location is returned as is when the query only
// orders and is null when it filters. $key queries walk the ordered
// children from the range's end: O(log n + k). Other orderings scan every
// child (O(n log k) with a limit k); EvalWith answers them from an
// `.indexOn` index instead. Eval returns ctx's error if ctx ends first, so
// a client's ?timeout= bounds a long scan.
func (q *Query) Eval(ctx context.Context, n *Node) (QueryResult, error) {
	return q.eval(ctx, n, nil)
}

// eval is Eval, walking ix (an index of n for q's ordering) when not nil
// instead of scanning.
func (q *Query) eval(ctx context.Context, n *Node, ix *Index) (QueryResult, error) {
	r := QueryResult{shallow: q.shallow}
	if n.Kind() != KindObject {
		if !q.filters() {
			r.leaf = n
		}
		return r, nil
	}
	if !q.filters() {
		r.prio = n.prio
	}
	if q.limitSet && q.limit == 0 {
		return r, nil
	}
	var err error
	switch {
	case q.order == OrderByKey:
		r.children, err = q.walkKeys(ctx, n)
	case ix != nil:
		r.children, err = q.walkIndex(ctx, n, ix)
		if errors.Is(err, errStaleIndex) {
			r.children, err = q.scan(ctx, n)
		}
	default:
		r.children, err = q.scan(ctx, n)
	}
	return r, err
}

// admitsStart and admitsEnd report whether the child e, whose index value
// is idx, is inside the range's start and end.
func (q *Query) admitsStart(e *entry, idx *Node) bool {
	if q.start == nil {
		return true
	}
	c := q.compareToBound(e, idx, q.start)
	return c > 0 || (c == 0 && !q.start.exclusive)
}

func (q *Query) admitsEnd(e *entry, idx *Node) bool {
	if q.end == nil {
		return true
	}
	c := q.compareToBound(e, idx, q.end)
	return c < 0 || (c == 0 && !q.end.exclusive)
}

// compareToBound compares the child's (index value, key) with the bound's
// (value, name).
func (q *Query) compareToBound(e *entry, idx *Node, b *bound) int {
	var c int
	if q.order == OrderByKey {
		c = compareKeyTo(e.key, &b.keyValue)
	} else {
		c = compareValues(idx, b.value)
	}
	if c != 0 {
		return c
	}
	if b.name.ext != 0 {
		return -int(b.name.ext)
	}
	return compareKeyTo(e.key, &b.name.key)
}

// walkKeys answers a $key query straight from the children's B-tree: it
// seeks to the end of the range the limit counts from and stops after the
// limit, so it visits O(log n + k) entries whatever the node's size.
func (q *Query) walkKeys(ctx context.Context, n *Node) ([]entry, error) {
	var (
		out     []entry
		visited int
		err     error
	)
	// near is the bound the walk starts from, far the one that ends it.
	near, far := q.admitsStart, q.admitsEnd
	if q.fromEnd {
		near, far = far, near
	}
	visit := func(e entry) bool {
		if visited++; visited%cancelCheckEvery == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		// Only the entry equal to the seek key can be on the wrong side of
		// the near bound (an exclusive bound, or a tie-breaker name).
		if !near(&e, nil) {
			return true
		}
		if !far(&e, nil) {
			return false
		}
		out = append(out, e)
		return !q.limitSet || len(out) < q.limit
	}
	switch {
	case q.fromEnd && q.end != nil:
		n.obj.children.Descend(entry{key: q.end.keyValue.key}, visit)
	case q.fromEnd:
		n.obj.children.Reverse(visit)
	case q.start != nil:
		n.obj.children.Ascend(entry{key: q.start.keyValue.key}, visit)
	default:
		n.obj.children.Scan(visit)
	}
	if err != nil {
		return nil, err
	}
	if q.fromEnd {
		slices.Reverse(out)
	}
	return out, nil
}

// indexed is a child with its index value, as the scan sorts them.
type indexed struct {
	e   entry
	idx *Node
}

// compareIndexed is the query order: index value, then key.
func compareIndexed(a, b indexed) int {
	if c := compareValues(a.idx, b.idx); c != 0 {
		return c
	}
	return CompareKeys(a.e.key, b.e.key)
}

// indexValue returns what child is ordered by (not for OrderByKey).
func (q *Query) indexValue(child *Node) *Node {
	switch q.order {
	case OrderByValue:
		return child
	case OrderByPriority:
		return child.Priority()
	}
	return valueAt(child, q.childKeys)
}

// valueAt is the value at the child path keys below child, nil when
// missing: what a child query orders child by. An `.indexOn` index orders
// by it too (nil keys: the child itself, for ".value"), so an index and a
// scan can never disagree on a child's place.
func valueAt(child *Node, keys []keyInfo) *Node {
	for i := range keys {
		if child.Kind() != KindObject {
			return nil
		}
		e, ok := child.obj.children.Get(entry{key: keys[i].key})
		if !ok {
			return nil
		}
		child = e.node
	}
	return child
}

// scan answers a value, priority or child query without an index: every
// child is visited once, the range filters it, and a limit keeps only the
// k best in a heap (O(n log k) time, O(k) memory) before the final sort.
// With an `.indexOn` index the same range and limit are a seek and a walk
// instead (walkIndex).
func (q *Query) scan(ctx context.Context, n *Node) ([]entry, error) {
	var (
		keep    topK
		all     []indexed
		visited int
		err     error
	)
	if q.limitSet {
		keep = topK{k: q.limit, fromEnd: q.fromEnd}
	}
	n.obj.children.Scan(func(e entry) bool {
		if visited++; visited%cancelCheckEvery == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		it := indexed{e: e, idx: q.indexValue(e.node)}
		if !q.admitsStart(&it.e, it.idx) || !q.admitsEnd(&it.e, it.idx) {
			return true
		}
		if q.limitSet {
			keep.push(it)
		} else {
			all = append(all, it)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if q.limitSet {
		all = keep.items
	}
	slices.SortFunc(all, compareIndexed)
	out := make([]entry, len(all))
	for i, it := range all {
		out[i] = it.e
	}
	return out, nil
}

// topK keeps the k smallest items pushed (the k largest with fromEnd) in a
// binary heap whose root is the worst item kept, so each push is O(log k).
type topK struct {
	items   []indexed
	k       int
	fromEnd bool
}

// worse reports whether a would be dropped before b.
func (h *topK) worse(a, b indexed) bool {
	c := compareIndexed(a, b)
	if h.fromEnd {
		return c < 0
	}
	return c > 0
}

func (h *topK) push(it indexed) {
	if len(h.items) < h.k {
		h.items = append(h.items, it)
		// Sift up.
		for i := len(h.items) - 1; i > 0; {
			parent := (i - 1) / 2
			if !h.worse(h.items[i], h.items[parent]) {
				break
			}
			h.items[i], h.items[parent] = h.items[parent], h.items[i]
			i = parent
		}
		return
	}
	if !h.worse(h.items[0], it) {
		return
	}
	h.items[0] = it
	// Sift down.
	for i := 0; ; {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(h.items) && h.worse(h.items[l], h.items[worst]) {
			worst = l
		}
		if r < len(h.items) && h.worse(h.items[r], h.items[worst]) {
			worst = r
		}
		if worst == i {
			return
		}
		h.items[i], h.items[worst] = h.items[worst], h.items[i]
		i = worst
	}
}

// Admits reports whether the child key, whose value is child, is inside
// q's range (limits aside).
func (q *Query) Admits(key string, child *Node) bool {
	it := q.indexedChild(key, child)
	return q.admitsStart(&it.e, it.idx) && q.admitsEnd(&it.e, it.idx)
}

// CompareChildren compares two children (a key and its value each) in
// q's order: -1 when the first comes first, +1 when it comes after, 0
// for the same key.
func (q *Query) CompareChildren(aKey string, a *Node, bKey string, b *Node) int {
	x, y := q.indexedChild(aKey, a), q.indexedChild(bKey, b)
	if q.order == OrderByKey {
		return CompareKeys(x.e.key, y.e.key)
	}
	return compareIndexed(x, y)
}

// indexedChild is a child with its index value (none for a key query).
func (q *Query) indexedChild(key string, child *Node) indexed {
	it := indexed{e: entry{key: key, node: child}}
	if q.order != OrderByKey {
		it.idx = q.indexValue(child)
	}
	return it
}

// Same reports whether r and o are the same answer: the very same nodes
// (not merely equal ones) under the same keys in the same order, the same
// location value and priority, the same shallowness.
func (r QueryResult) Same(o QueryResult) bool {
	return r.leaf == o.leaf && r.prio == o.prio && r.shallow == o.shallow &&
		slices.EqualFunc(r.children, o.children, func(a, b entry) bool { return a.key == b.key && a.node == b.node })
}

package tree

import (
	"context"
	"errors"
	"slices"
)

// Queries answered from `.indexOn` indexes (index.go).

// EvalWith is Eval answered from ix, the index of n's location for q's
// ordering (fsm's IndexSet.Lookup on the state n was read from): it seeks to
// the end of the range the limit counts from and walks only the children
// it returns, so a range query with a limit k costs O(log n + k) instead
// of a scan of every child. The result is exactly Eval's. An ix that does
// not serve q on n — nil, another ordering, or the index of another
// version of n — is ignored and n is scanned.
func (q *Query) EvalWith(ctx context.Context, n *Node, ix *Index) (QueryResult, error) {
	if !ix.serves(q, n) {
		ix = nil
	}
	return q.eval(ctx, n, ix)
}

// serves reports whether ix is the index of the object n by q's ordering.
func (ix *Index) serves(q *Query, n *Node) bool {
	if ix == nil || n == nil || ix.of != n {
		return false
	}
	switch q.order {
	case OrderByValue:
		return ix.order.child == ".value"
	case OrderByChild:
		return slices.EqualFunc(ix.order.keys, q.childKeys, func(a, b keyInfo) bool { return a.key == b.key })
	}
	return false
}

// errStaleIndex stops a walk of an index that names a child its node does
// not have. Lookup and EvalWith make that impossible; should it happen,
// the query scans rather than answer wrong.
var errStaleIndex = errors.New("tree: the index is not of the node queried")

// walkIndex answers a value or child query from ix, the index of n, like
// walkKeys from the children: seek to the bound the walk starts from,
// stop at the other one or at the limit. Children come in (index value,
// key) order, the order of scan's sort, and pass the same admitsStart and
// admitsEnd tests, so the answer is the scan's. Each child chosen is
// looked up in n (O(log n)), as the index keeps keys only.
func (q *Query) walkIndex(ctx context.Context, n *Node, ix *Index) ([]entry, error) {
	var (
		out     []entry
		visited int
		err     error
	)
	if q.limitSet {
		out = make([]entry, 0, min(q.limit, ix.items.Len()))
	}
	near, far := q.admitsStart, q.admitsEnd
	if q.fromEnd {
		near, far = far, near
	}
	visit := func(it indexItem) bool {
		if visited++; visited%cancelCheckEvery == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		e := entry{key: it.keyInfo.key}
		// Only an item equal to the seek pivot can be on the wrong side of
		// the near bound (an exclusive one).
		if !near(&e, it.idx) {
			return true
		}
		if !far(&e, it.idx) {
			return false
		}
		child, ok := n.obj.children.Get(e)
		if !ok {
			// Not the index of n after all: never answer from it.
			err = errStaleIndex
			return false
		}
		out = append(out, child)
		return !q.limitSet || len(out) < q.limit
	}
	switch {
	case q.fromEnd && q.end != nil:
		ix.items.Descend(boundPivot(q.end), visit)
	case q.fromEnd:
		ix.items.Reverse(visit)
	case q.start != nil:
		ix.items.Ascend(boundPivot(q.start), visit)
	default:
		ix.items.Scan(visit)
	}
	if err != nil {
		return nil, err
	}
	if q.fromEnd {
		slices.Reverse(out)
	}
	return out, nil
}

// boundPivot is the place of a range bound among an index's items: every
// item at or after it compares at or after the bound (compareToBound).
func boundPivot(b *bound) indexItem {
	if b.name.ext != 0 {
		return indexItem{idx: b.value, keyInfo: keyInfo{ival: int32(b.name.ext)}}
	}
	return indexItem{idx: b.value, keyInfo: b.name.key}
}

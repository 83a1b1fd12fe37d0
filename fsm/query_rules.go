package fsm

import "github.com/arbordb/arbor/fsm/rules"

// RulesQuery is q as `query.*` in .read rules sees it (SPEC §8); nil for
// a nil q.
func (q *Query) RulesQuery() *rules.Query {
	if q == nil {
		return nil
	}
	rq := &rules.Query{
		OrderByKey:      q.order == OrderByKey,
		OrderByValue:    q.order == OrderByValue,
		OrderByPriority: q.order == OrderByPriority,
	}
	if q.order == OrderByChild {
		rq.OrderByChild = q.child.String()
		if len(rq.OrderByChild) > 0 && rq.OrderByChild[0] == '/' {
			rq.OrderByChild = rq.OrderByChild[1:]
		}
	}
	switch {
	case q.equal:
		rq.EqualTo = q.boundValue(q.start)
	default:
		rq.StartAt, rq.EndAt = q.boundValue(q.start), q.boundValue(q.end)
	}
	if q.limitSet {
		if q.fromEnd {
			rq.LimitToLast = q.limit
		} else {
			rq.LimitToFirst = q.limit
		}
	}
	return rq
}

// boundValue is a range end's value as a rules value: a string, a
// float64, a bool, or nil for an absent end or a null bound.
func (q *Query) boundValue(b *bound) any {
	if b == nil {
		return nil
	}
	if q.order == OrderByKey {
		return b.keyValue.key
	}
	switch n := b.value; n.Kind() {
	case KindBool:
		return n.BoolValue()
	case KindString:
		return n.StringValue()
	case KindInt, KindFloat:
		f, _ := n.Number()
		return f
	}
	return nil
}

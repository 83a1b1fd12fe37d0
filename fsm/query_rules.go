package fsm

import (
	"cmp"

	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// RulesQuery is q as `query.*` in .read rules sees it (SPEC §8); nil for
// a nil q.
func RulesQuery(q *tree.Query) *rules.Query {
	if q == nil {
		return nil
	}
	s := q.Spec()
	rq := &rules.Query{
		OrderByKey:      s.Order == tree.OrderByKey,
		OrderByValue:    s.Order == tree.OrderByValue,
		OrderByPriority: s.Order == tree.OrderByPriority,
	}
	if s.Order == tree.OrderByChild {
		rq.OrderByChild = s.Child.String()
		if len(rq.OrderByChild) > 0 && rq.OrderByChild[0] == '/' {
			rq.OrderByChild = rq.OrderByChild[1:]
		}
	}
	switch {
	case s.EqualTo != nil:
		rq.EqualTo = boundValue(s.EqualTo)
	default:
		rq.StartAt = boundValue(cmp.Or(s.StartAt, s.StartAfter))
		rq.EndAt = boundValue(cmp.Or(s.EndAt, s.EndBefore))
	}
	if s.HasLimit {
		if s.LimitToLast {
			rq.LimitToLast = s.Limit
		} else {
			rq.LimitToFirst = s.Limit
		}
	}
	return rq
}

// boundValue is a range end's value as a rules value: a string, a
// float64, a bool, or nil for an absent end or a null bound.
func boundValue(b *tree.Bound) any {
	if b == nil {
		return nil
	}
	switch n := b.Value; n.Kind() {
	case tree.KindBool:
		return n.BoolValue()
	case tree.KindString:
		return n.StringValue()
	case tree.KindInt, tree.KindFloat:
		f, _ := n.Number()
		return f
	}
	return nil
}

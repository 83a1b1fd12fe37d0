package tree

import (
	"math"
	"slices"
)

// Value order (SPEC §1): null < false < true < numbers < strings < objects.
const (
	rankNull = iota
	rankFalse
	rankTrue
	rankNumber
	rankString
	rankObject
)

// valueRank is n's place in the value order.
func valueRank(n *Node) int {
	switch n.Kind() {
	case KindBool:
		if n.b {
			return rankTrue
		}
		return rankFalse
	case KindInt, KindFloat:
		return rankNumber
	case KindString:
		return rankString
	case KindObject:
		return rankObject
	}
	return rankNull
}

// compareValues orders two values the Firebase way: by type rank, numbers
// numerically (an integer and a double are compared exactly, not through a
// lossy conversion), strings by UTF-16 code units; two objects, or two
// nulls, are equal (the caller breaks ties by key). Priorities are ignored.
func compareValues(a, b *Node) int {
	ra, rb := valueRank(a), valueRank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch ra {
	case rankNumber:
		return compareNumbers(a, b)
	case rankString:
		return CompareUTF16(a.s, b.s)
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareNumbers(a, b *Node) int {
	switch {
	case a.kind == KindInt && b.kind == KindInt:
		switch {
		case a.i < b.i:
			return -1
		case a.i > b.i:
			return 1
		}
		return 0
	case a.kind == KindInt:
		return compareIntFloat(a.i, b.float())
	case b.kind == KindInt:
		return -compareIntFloat(b.i, a.float())
	}
	switch {
	case a.float() < b.float():
		return -1
	case a.float() > b.float():
		return 1
	}
	return 0
}

// compareIntFloat compares an int64 with a finite double exactly.
func compareIntFloat(i int64, f float64) int {
	const two63 = 9223372036854775808.0
	switch {
	case f >= two63:
		return -1
	case f < -two63:
		return 1
	}
	t := math.Trunc(f)
	if ti := int64(t); i != ti {
		if i < ti {
			return -1
		}
		return 1
	}
	switch frac := f - t; {
	case frac > 0:
		return -1
	case frac < 0:
		return 1
	}
	return 0
}

// AppendQueryResult appends the JSON of a query's result to dst: an object
// of the chosen children in query order, or an array when the array rule
// of SPEC §1 holds for them (never under o.Export), or "null" when nothing
// was chosen. With Shallow each child is written as true (and never as an
// array, like AppendShallow). Under o.Export the location's priority is
// kept when the query filtered nothing, as Firebase's SDKs do.
func AppendQueryResult(dst []byte, r QueryResult, o RenderOptions) []byte {
	if len(r.children) == 0 {
		return appendNode(dst, r.leaf, o, 0)
	}
	if !r.shallow && !o.Export && entriesAreArray(r.children) {
		sorted := slices.Clone(r.children)
		slices.SortFunc(sorted, func(a, b entry) int { return cmpInt(arrayIndex(a.key), arrayIndex(b.key)) })
		dst = append(dst, '[')
		next := 0
		for _, e := range sorted {
			for i := arrayIndex(e.key); next < i; next++ {
				dst = appendElementStart(dst, next == 0, o.Pretty, 1)
				dst = append(dst, "null"...)
			}
			dst = appendElementStart(dst, next == 0, o.Pretty, 1)
			dst = appendNode(dst, e.node, o, 1)
			next++
			if dst = o.spill.check(dst); !o.spill.ok() {
				return dst
			}
		}
		return closeBlock(dst, ']', o.Pretty, 0)
	}
	dst = append(dst, '{')
	first := true
	if o.Export && !r.shallow && r.prio != nil {
		dst = appendMemberKey(dst, ".priority", true, o.Pretty, 1)
		dst = appendLeaf(dst, r.prio, o.Pretty, 1)
		first = false
	}
	for _, e := range r.children {
		dst = appendMemberKey(dst, e.key, first, o.Pretty, 1)
		if r.shallow {
			dst = append(dst, "true"...)
		} else {
			dst = appendNode(dst, e.node, o, 1)
		}
		first = false
		if dst = o.spill.check(dst); !o.spill.ok() {
			return dst
		}
	}
	return closeBlock(dst, '}', o.Pretty, 0)
}

// entriesAreArray is the array rule (SPEC §1) for a set of children.
func entriesAreArray(es []entry) bool {
	for i := range es {
		if !isArrayIndex(es[i].key, len(es)) {
			return false
		}
	}
	return true
}

package tree

import (
	"cmp"
	"slices"
	"strings"
)

// query*.go are the query engine of SPEC §3: a typed Query (httpapi parses
// the orderBy family of URL parameters into a QuerySpec), and its
// evaluation over an immutable node. Evaluation is a pure function of the
// node, so a query runs on any replica's tree (local, or after the read
// barrier) without locks.

// Messages of the query errors NewQuery returns. The first is fixed by
// SPEC §3 (it is Firebase's own text); the others are ours. httpapi's
// parser has the texts of the parameters' syntax.
const (
	MsgKeyIndexType = "Provided key index type is invalid, must be string"

	msgEqualToWithRange = "equalTo cannot be combined with startAt, endAt, startAfter or endBefore"
	msgBothStarts       = "startAt and startAfter cannot both be defined"
	msgBothEnds         = "endAt and endBefore cannot both be defined"
	msgBadOrder         = "orderBy must name $key, $value, $priority or a valid child path"
	msgBadLimit         = "a limit must be a non-negative integer"
)

// The tie-breaker names the Firebase JS SDK sends for "before every key"
// and "after every key" (its MIN_NAME and MAX_NAME, e.g. startAfter(5) goes
// out as startAt=5,"[MAX_NAME]"). Brackets cannot occur in keys, so these
// never collide with a real key.
const (
	minName = "[MIN_NAME]"
	maxName = "[MAX_NAME]"
)

// OrderBy says what a query sorts a node's children by.
type OrderBy uint8

// Orderings of orderBy (SPEC §3).
const (
	// OrderByKey is "$key": Firebase key order.
	OrderByKey OrderBy = iota + 1
	// OrderByValue is "$value": the value order of the child itself.
	OrderByValue
	// OrderByPriority is "$priority": the value order of the child's priority.
	OrderByPriority
	// OrderByChild is a child path: the value order of the value at that path
	// below each child (missing is null).
	OrderByChild
)

// Query is a validated query: an ordering, an optional range and an
// optional limit. The zero value is not a query; build one with NewQuery.
type Query struct {
	spec       QuerySpec // as given to NewQuery
	order      OrderBy
	child      Path      // OrderByChild
	childKeys  []keyInfo // child, parsed once for the per-child lookups of a scan
	shallow    bool      // render each chosen child as true (shallow=true paging)
	start, end *bound    // nil: unbounded on that side
	limit      int
	limitSet   bool
	fromEnd    bool // limitToLast
	equal      bool // the range came from equalTo
}

// Order is the query's ordering.
func (q *Query) Order() OrderBy { return q.order }

// Child is the child path of an OrderByChild query (nil otherwise).
func (q *Query) Child() Path { return q.child }

// Shallow reports a shallow=true query: key-ordered paging whose children
// render as true.
func (q *Query) Shallow() bool { return q.shallow }

// bound is one end of the range: (value, name) compared with each child's
// (index value, key), so a tie on the value is broken by the key.
type bound struct {
	value     *Node   // the index value (nil is null)
	keyValue  keyInfo // value as a key, for OrderByKey
	name      boundName
	named     bool // the parameter gave a tie-breaker key
	exclusive bool // startAfter / endBefore
}

// boundName is a bound's key tie-breaker: a key, or one of the two
// sentinels that sort before (ext < 0) or after (ext > 0) every key.
type boundName struct {
	key keyInfo
	ext int8
}

// Bound is one end of a query's range as the client gave it: a value and,
// optionally, a tie-breaker key.
type Bound struct {
	// Value is the bound's value (nil is null); it must be a string in a
	// query by key.
	Value *Node
	// Key is the tie-breaker (when Named): of the children whose index
	// value equals Value, the bound sits at Key in key order. The JS SDK's
	// "[MIN_NAME]" and "[MAX_NAME]" sit before and after every key. Without
	// one, the bound sits before every key of its value (startAt,
	// endBefore) or after every key (startAfter, endAt), which makes the
	// inclusive and exclusive forms include or exclude the whole value.
	Key   string
	Named bool
}

// QuerySpec is a query as the client asked for it, typed: httpapi parses
// the URL's parameters into one (SPEC §3) and NewQuery checks how they
// combine. Nil bounds are absent.
type QuerySpec struct {
	// Order is the ordering; a shallow query orders by key.
	Order OrderBy
	// Child is the child path of an OrderByChild query: valid keys, at
	// most MaxDepth of them.
	Child Path
	// Shallow is a shallow=true query: key-ordered paging whose children
	// render as true.
	Shallow bool
	// The range: at most one start, at most one end, or EqualTo alone
	// (the same bound at both ends).
	StartAt, StartAfter, EndAt, EndBefore, EqualTo *Bound
	// Limit is limitToFirst, or limitToLast when LimitToLast, when
	// HasLimit.
	Limit       int
	HasLimit    bool
	LimitToLast bool
}

// NewQuery builds the query s describes. Its errors are *PublicError
// wrapping ErrBadRequest: range parameters that cannot be combined
// (SPEC §3's texts), a bound of a key query that is not a string
// (MsgKeyIndexType), an ordering or limit that cannot be.
func NewQuery(s QuerySpec) (*Query, error) {
	q := &Query{spec: s, order: s.Order, shallow: s.Shallow}
	switch s.Order {
	case OrderByKey, OrderByValue, OrderByPriority:
	case OrderByChild:
		if len(s.Child) == 0 || len(s.Child) > MaxDepth || slices.ContainsFunc(s.Child, invalidKey) {
			return nil, Public(ErrBadRequest, msgBadOrder)
		}
		q.child = slices.Clone(s.Child)
		q.childKeys = make([]keyInfo, len(q.child))
		for i, k := range q.child {
			q.childKeys[i] = newKeyInfo(k)
		}
	default:
		return nil, Public(ErrBadRequest, msgBadOrder)
	}
	if s.HasLimit {
		if s.Limit < 0 {
			return nil, Public(ErrBadRequest, msgBadLimit)
		}
		q.limit, q.limitSet, q.fromEnd = s.Limit, true, s.LimitToLast
	}
	bounds := [...]struct {
		b              *Bound
		exclusive, end bool
	}{{s.StartAt, false, false}, {s.StartAfter, true, false}, {s.EndAt, false, true}, {s.EndBefore, true, true}, {s.EqualTo, false, false}}
	var made [len(bounds)]*bound
	for i, b := range bounds {
		if b.b == nil {
			continue
		}
		var err error
		if made[i], err = q.bound(b.b, b.exclusive, b.end); err != nil {
			return nil, err
		}
	}
	startAt, startAfter, endAt, endBefore, equalTo := made[0], made[1], made[2], made[3], made[4]
	switch {
	case equalTo != nil && (startAt != nil || startAfter != nil || endAt != nil || endBefore != nil):
		return nil, Public(ErrBadRequest, msgEqualToWithRange)
	case startAt != nil && startAfter != nil:
		return nil, Public(ErrBadRequest, msgBothStarts)
	case endAt != nil && endBefore != nil:
		return nil, Public(ErrBadRequest, msgBothEnds)
	case equalTo != nil:
		// equalTo=v[,k] is startAt=v[,k] together with endAt=v[,k].
		end := *equalTo
		if !end.named {
			end.name.ext = 1
		}
		q.start, q.end, q.equal = equalTo, &end, true
		return q, nil
	}
	q.start = cmp.Or(startAt, startAfter)
	q.end = cmp.Or(endAt, endBefore)
	return q, nil
}

func invalidKey(k string) bool { return !ValidKey(k) }

// bound makes the range end b: a start or an end (isEnd), inclusive or
// not. Without a tie-breaker key, startAfter and endAt sit after every
// key of their value, startAt and endBefore before.
func (q *Query) bound(b *Bound, exclusive, isEnd bool) (*bound, error) {
	out := &bound{value: b.Value, exclusive: exclusive}
	if isEnd != exclusive {
		out.name.ext = 1
	} else {
		out.name.ext = -1
	}
	if b.Named {
		out.name, out.named = boundName{key: newKeyInfo(b.Key)}, true
		switch b.Key {
		case minName:
			out.name.ext = -1
		case maxName:
			out.name.ext = 1
		}
	}
	if q.order == OrderByKey {
		if b.Value.Kind() != KindString {
			return nil, Public(ErrBadRequest, MsgKeyIndexType)
		}
		out.keyValue = newKeyInfo(b.Value.StringValue())
	}
	return out, nil
}

// Spec is the QuerySpec q was built from (its bounds are shared: never
// change them).
func (q *Query) Spec() QuerySpec { return q.spec }

// filters reports whether the query chooses among the children (a range or
// a limit), rather than only ordering them.
func (q *Query) filters() bool { return q.start != nil || q.end != nil || q.limitSet }

// IndexName is the seam for `.indexOn` (the rules issue): the name a rule
// must declare for this query to use an index, and the one the
// `--strict-indexes` error quotes (`Index not defined, add ".indexOn":
// "<name>", for path "/<path>", to the rules`). It is ".value" for $value,
// the child path ("a/b") for a child ordering, and "" for $key and
// $priority, which Firebase serves without a declared index.
func (q *Query) IndexName() string {
	switch q.order {
	case OrderByValue:
		return ".value"
	case OrderByChild:
		return strings.Join(q.child, "/")
	}
	return ""
}

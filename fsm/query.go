package fsm

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// This file is the query engine of SPEC §3: parsing the orderBy family of
// URL parameters into a Query, and evaluating a Query over an immutable
// node. Evaluation is a pure function of the node, so a query runs on any
// replica's tree (local, or after the read barrier) without locks.

// Messages of the query errors. The first four are fixed by SPEC §3 (they
// are Firebase's own texts); the others are ours.
const (
	MsgOrderByJSON     = "orderBy must be a valid JSON encoded path"
	MsgOrderByRequired = "orderBy must be defined when other query parameters are defined"
	MsgShallowMix      = "Mixing 'shallow' and querying parameters is not supported"
	MsgKeyIndexType    = "Provided key index type is invalid, must be string"

	msgBothLimits       = "limitToFirst and limitToLast cannot both be defined"
	msgLimitFormat      = "%s must be a non-negative integer"
	msgBoundFormat      = "%s must be a JSON string, number, boolean or null, optionally followed by a comma and a JSON string key"
	msgEqualToWithRange = "equalTo cannot be combined with startAt, endAt, startAfter or endBefore"
	msgBothStarts       = "startAt and startAfter cannot both be defined"
	msgBothEnds         = "endAt and endBefore cannot both be defined"
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

// Query is a parsed, validated query: an ordering, an optional range and
// an optional limit. The zero value is not a query; build one with
// ParseQuery.
type Query struct {
	order      OrderBy
	child      Path      // OrderByChild
	childKeys  []keyInfo // child, parsed once for the per-child lookups of a scan
	shallow    bool      // render each chosen child as true (shallow=true paging)
	start, end *bound    // nil: unbounded on that side
	limit      int
	limitSet   bool
	fromEnd    bool // limitToLast
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

// ParseQuery parses the query parameters of a GET (SPEC §3). params maps
// a parameter name to its percent-decoded value; names other than orderBy,
// limitToFirst, limitToLast, startAt, endAt, startAfter, endBefore,
// equalTo and shallow are ignored (the caller checks names). It returns
// nil when there is no query (no orderBy-family parameter), and errors are
// *PublicError wrapping ErrBadRequest, with SPEC §3's texts where it has
// them.
//
// With shallow=true, limits and ranges are allowed without orderBy and
// work in key order; a bound that is not a JSON string is taken as a raw
// key, because firebase-tools pages with startAfter=<unquoted key>.
func ParseQuery(params map[string]string) (*Query, error) {
	_, hasOrderBy := params["orderBy"]
	hasFilter := false
	for _, name := range [...]string{"limitToFirst", "limitToLast", "startAt", "endAt", "startAfter", "endBefore", "equalTo"} {
		if _, ok := params[name]; ok {
			hasFilter = true
		}
	}
	if !hasOrderBy && !hasFilter {
		return nil, nil
	}
	q := &Query{shallow: params["shallow"] == "true"}
	_, hasEqualTo := params["equalTo"]
	switch {
	case q.shallow && (hasOrderBy || hasEqualTo):
		return nil, Public(ErrBadRequest, MsgShallowMix)
	case q.shallow:
		q.order = OrderByKey
	case !hasOrderBy:
		return nil, Public(ErrBadRequest, MsgOrderByRequired)
	default:
		if err := q.parseOrderBy(params["orderBy"]); err != nil {
			return nil, err
		}
	}
	if err := q.parseLimits(params); err != nil {
		return nil, err
	}
	if err := q.parseBounds(params); err != nil {
		return nil, err
	}
	return q, nil
}

// parseOrderBy parses orderBy: a JSON string naming $key, $value,
// $priority or a child path ("a/b"; empty segments are dropped).
func (q *Query) parseOrderBy(raw string) error {
	bad := Public(ErrBadRequest, MsgOrderByJSON)
	p := newParser([]byte(raw), 0)
	p.skipWS()
	if p.peek() != '"' {
		return bad
	}
	s, err := p.str()
	if err != nil || p.end() != nil {
		return bad
	}
	switch s {
	case "$key":
		q.order = OrderByKey
		return nil
	case "$value":
		q.order = OrderByValue
		return nil
	case "$priority":
		q.order = OrderByPriority
		return nil
	}
	var path Path
	for _, k := range strings.Split(s, "/") {
		if k == "" {
			continue
		}
		if !ValidKey(k) {
			return bad
		}
		path = append(path, k)
	}
	if len(path) == 0 || len(path) > MaxDepth {
		return bad
	}
	q.order, q.child = OrderByChild, path
	q.childKeys = make([]keyInfo, len(path))
	for i, k := range path {
		q.childKeys[i] = newKeyInfo(k)
	}
	return nil
}

// parseLimits parses limitToFirst and limitToLast: non-negative decimal
// integers, at most one of them.
func (q *Query) parseLimits(params map[string]string) error {
	first, hasFirst := params["limitToFirst"]
	last, hasLast := params["limitToLast"]
	switch {
	case hasFirst && hasLast:
		return Public(ErrBadRequest, msgBothLimits)
	case hasFirst:
		return q.setLimit("limitToFirst", first, false)
	case hasLast:
		return q.setLimit("limitToLast", last, true)
	}
	return nil
}

func (q *Query) setLimit(name, s string, fromEnd bool) error {
	if s == "" {
		return Public(ErrBadRequest, fmt.Sprintf(msgLimitFormat, name))
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) {
			return Public(ErrBadRequest, fmt.Sprintf(msgLimitFormat, name))
		}
		// No node has more than MaxInt32 children: larger limits are the same.
		n = min(n*10+int(c-'0'), math.MaxInt32)
	}
	q.limit, q.limitSet, q.fromEnd = n, true, fromEnd
	return nil
}

// parseBounds parses the range parameters and checks how they combine.
func (q *Query) parseBounds(params map[string]string) error {
	get := func(name string, exclusive, isEnd bool) (*bound, error) {
		raw, ok := params[name]
		if !ok {
			return nil, nil
		}
		return q.parseBound(name, raw, exclusive, isEnd)
	}
	startAt, err := get("startAt", false, false)
	if err != nil {
		return err
	}
	startAfter, err := get("startAfter", true, false)
	if err != nil {
		return err
	}
	endAt, err := get("endAt", false, true)
	if err != nil {
		return err
	}
	endBefore, err := get("endBefore", true, true)
	if err != nil {
		return err
	}
	equalTo, err := get("equalTo", false, false)
	if err != nil {
		return err
	}
	switch {
	case equalTo != nil && (startAt != nil || startAfter != nil || endAt != nil || endBefore != nil):
		return Public(ErrBadRequest, msgEqualToWithRange)
	case startAt != nil && startAfter != nil:
		return Public(ErrBadRequest, msgBothStarts)
	case endAt != nil && endBefore != nil:
		return Public(ErrBadRequest, msgBothEnds)
	case equalTo != nil:
		// equalTo=v[,k] is startAt=v[,k] together with endAt=v[,k].
		end := *equalTo
		if !end.named {
			end.name.ext = 1
		}
		q.start, q.end = equalTo, &end
		return nil
	}
	q.start = cmp.Or(startAt, startAfter)
	q.end = cmp.Or(endAt, endBefore)
	return nil
}

// parseBound parses one range parameter: a JSON string, number, boolean
// or null, optionally followed by a comma and a JSON string key (the
// tie-breaker form the JS SDK sends: 5,"k1"). The value is already
// percent-decoded, so the comma that splits is the first one outside the
// JSON value. Without a key, the bound sits before every key of its value
// (startAt, endBefore) or after every key (startAfter, endAt), which makes
// the inclusive and exclusive forms include or exclude the whole value.
func (q *Query) parseBound(name, raw string, exclusive, isEnd bool) (*bound, error) {
	b := &bound{exclusive: exclusive}
	if isEnd != exclusive { // startAfter and endAt sit after every key
		b.name.ext = 1
	} else {
		b.name.ext = -1
	}
	if q.shallow && !isJSONString(raw) {
		b.value = String(raw)
		b.keyValue = newKeyInfo(raw)
		return b, nil
	}
	bad := Public(ErrBadRequest, fmt.Sprintf(msgBoundFormat, name))
	p := newParser([]byte(raw), 0)
	p.skipWS()
	if c := p.peek(); c == '{' || c == '[' {
		return nil, bad
	}
	v, err := p.value(0)
	if err != nil {
		return nil, bad
	}
	b.value = v
	p.skipWS()
	if p.pos < len(p.data) {
		if p.peek() != ',' {
			return nil, bad
		}
		p.pos++
		p.skipWS()
		if p.peek() != '"' {
			return nil, bad
		}
		key, err := p.str()
		if err != nil || p.end() != nil {
			return nil, bad
		}
		b.name, b.named = boundName{key: newKeyInfo(key)}, true
		switch key {
		case minName:
			b.name.ext = -1
		case maxName:
			b.name.ext = 1
		}
	}
	if q.order == OrderByKey {
		if v.Kind() != KindString {
			return nil, Public(ErrBadRequest, MsgKeyIndexType)
		}
		b.keyValue = newKeyInfo(v.StringValue())
	}
	return b, nil
}

// isJSONString reports whether s is exactly one JSON string (with
// optional surrounding whitespace).
func isJSONString(s string) bool {
	p := newParser([]byte(s), 0)
	p.skipWS()
	if p.peek() != '"' {
		return false
	}
	_, err := p.str()
	return err == nil && p.end() == nil
}

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
// child (O(n log k) with a limit k) until `.indexOn` indexes exist. Eval
// returns ctx's error if ctx ends first, so a client's ?timeout= bounds a
// long scan.
func (q *Query) Eval(ctx context.Context, n *Node) (QueryResult, error) {
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
	if q.order == OrderByKey {
		r.children, err = q.walkKeys(ctx, n)
	} else {
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
		c = compareKeyInfo(&e.keyInfo, &b.keyValue)
	} else {
		c = compareValues(idx, b.value)
	}
	if c != 0 {
		return c
	}
	if b.name.ext != 0 {
		return -int(b.name.ext)
	}
	return compareKeyInfo(&e.keyInfo, &b.name.key)
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
		n.children.Descend(entry{keyInfo: q.end.keyValue}, visit)
	case q.fromEnd:
		n.children.Reverse(visit)
	case q.start != nil:
		n.children.Ascend(entry{keyInfo: q.start.keyValue}, visit)
	default:
		n.children.Scan(visit)
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
	return compareKeyInfo(&a.e.keyInfo, &b.e.keyInfo)
}

// indexValue returns what child is ordered by (not for OrderByKey).
func (q *Query) indexValue(child *Node) *Node {
	switch q.order {
	case OrderByValue:
		return child
	case OrderByPriority:
		return child.Priority()
	}
	for i := range q.childKeys {
		if child.Kind() != KindObject {
			return nil
		}
		e, ok := child.children.Get(entry{keyInfo: q.childKeys[i]})
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
// This is where an `.indexOn` index will plug in: an index is a B-tree of
// (index value, key), so the same range and limit become a seek and a walk
// like walkKeys.
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
	n.children.Scan(func(e entry) bool {
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

// Value order (SPEC §1): null < false < true < numbers < strings < objects.
const (
	rankNull = iota
	rankFalse
	rankTrue
	rankNumber
	rankString
	rankObject
)

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
		return compareIntFloat(a.i, b.f)
	case b.kind == KindInt:
		return -compareIntFloat(b.i, a.f)
	}
	switch {
	case a.f < b.f:
		return -1
	case a.f > b.f:
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
		slices.SortFunc(sorted, func(a, b entry) int { return cmpInt(int(a.ival), int(b.ival)) })
		dst = append(dst, '[')
		next := 0
		for _, e := range sorted {
			for ; next < int(e.ival); next++ {
				dst = appendElementStart(dst, next == 0, o.Pretty, 1)
				dst = append(dst, "null"...)
			}
			dst = appendElementStart(dst, next == 0, o.Pretty, 1)
			dst = appendNode(dst, e.node, o, 1)
			next++
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
	}
	return closeBlock(dst, '}', o.Pretty, 0)
}

// entriesAreArray is the array rule (SPEC §1) for a set of children.
func entriesAreArray(es []entry) bool {
	for i := range es {
		if !isArrayIndex(&es[i].keyInfo, len(es)) {
			return false
		}
	}
	return true
}

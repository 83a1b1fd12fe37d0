package fsm

// query*.go are the query engine of SPEC §3: parsing the orderBy family of
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

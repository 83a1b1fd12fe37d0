package rules

// Kind is a Value's JSON type.
type Kind uint8

// The kinds of Value. A missing node is Null.
const (
	Null Kind = iota
	Bool
	Number
	String
	Object
)

// Value is a read-only node of the JSON tree the rules judge. A missing node
// is a Value of Kind Null.
type Value interface {
	// Kind is the node's JSON type.
	Kind() Kind
	// Bool is the value of a Bool node.
	Bool() bool
	// Number is the value of a Number node.
	Number() float64
	// Str is the value of a String node.
	Str() string
	// Child is the child named key; never nil, Kind Null when missing.
	Child(key string) Value
	// Len is the number of children of an Object, else 0.
	Len() int
	// Each calls fn for the children in key order until fn returns false.
	Each(fn func(key string, child Value) bool)
	// Priority is the node's priority: Kind Null, Number or String.
	Priority() Value
	// Same reports whether o is certainly identical to this node; it may
	// answer false when unsure. It only lets the judge skip unchanged
	// subtrees, so a false negative costs time, never correctness.
	Same(o Value) bool
}

// Env is what one judgement sees.
type Env struct {
	// Auth is the rules' `auth`: nil when unauthenticated, else JSON-decoded
	// Go values (map[string]any, []any, string, float64, bool, nil).
	Auth any
	// Now is `now`, milliseconds since the epoch.
	Now int64
	// Root is the data before the operation: `root`, and `data` at each
	// location.
	Root Value
	// NewRoot is the data after a write (`newData`); nil for reads.
	NewRoot Value
	// Query holds a read's query parameters (`query.*`); nil when none.
	Query *Query
	// NowRead, when not nil, is set to true once a rule reads `now`: a
	// judgement that did not can be trusted at another time.
	NowRead *bool
}

// Query is a read's query, as `query.*` in .read rules sees it.
type Query struct {
	// OrderByKey, OrderByValue and OrderByPriority report the query's order.
	OrderByKey, OrderByValue, OrderByPriority bool
	// OrderByChild is the child the query orders by; "" when it does not.
	OrderByChild string
	// StartAt, EndAt and EqualTo are nil when absent; else float64, string
	// or bool.
	StartAt, EndAt, EqualTo any
	// LimitToFirst and LimitToLast are 0 when absent.
	LimitToFirst, LimitToLast int
}

// nullValue is the missing node. The judge substitutes it for nil Values so
// that a caller's nil never reaches an interface method call.
type nullValue struct{}

func (nullValue) Kind() Kind                    { return Null }
func (nullValue) Bool() bool                    { return false }
func (nullValue) Number() float64               { return 0 }
func (nullValue) Str() string                   { return "" }
func (nullValue) Child(string) Value            { return nullValue{} }
func (nullValue) Len() int                      { return 0 }
func (nullValue) Each(func(string, Value) bool) {}
func (nullValue) Priority() Value               { return nullValue{} }
func (nullValue) Same(o Value) bool             { _, ok := o.(nullValue); return ok }

// orNull maps a nil Value to the null node.
func orNull(v Value) Value {
	if v == nil {
		return nullValue{}
	}
	return v
}

// childOf is v.Child(key) that tolerates a nil answer.
func childOf(v Value, key string) Value {
	return orNull(v.Child(key))
}

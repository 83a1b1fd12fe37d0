// Package history records every operation the chaos workload issues, with
// its invocation and response times, so the checkers can judge the run
// afterwards. Nothing is ever dropped: an operation whose outcome the
// client could not learn (a timeout, a 503) is kept as indeterminate.
package history

// Kind is the data type an operation works on; each has its own model.
type Kind string

// The kinds of keys the workload uses.
const (
	// Register: a key holding a JSON string, read, overwritten,
	// deleted and compare-and-set (X-Firebase-ETag + if-match).
	Register Kind = "register"
	// Counter: a key holding an integer, read and incremented with the
	// `increment` server value.
	Counter Kind = "counter"
	// List: a key whose children are POST appends under push keys.
	List Kind = "list"
)

// Type is what an operation does.
type Type string

// The operation types.
const (
	Read   Type = "read"   // GET (linearizable unless Local)
	Write  Type = "write"  // PUT of a new unique value
	Delete Type = "delete" // DELETE
	CAS    Type = "cas"    // PUT with if-match: the ETag of Expect
	Incr   Type = "incr"   // PUT {".sv":{"increment":Delta}}
	Append Type = "append" // POST of a new unique value
)

// Outcome is what the client learnt about an operation.
type Outcome string

// The outcomes.
const (
	// OK: the node answered 200; the operation took effect once.
	OK Outcome = "ok"
	// Rejected: a compare-and-set answered 412; nothing changed, and
	// Out holds the value the node compared against.
	Rejected Outcome = "rejected"
	// Fail: the operation certainly did not take effect (the connection
	// was refused before the request was sent, or a 4xx other than 412).
	Fail Outcome = "fail"
	// Unknown: the client cannot tell whether the operation took effect
	// (a timeout, a dropped connection, 503 or 500). It may take effect
	// at any time after its invocation, or never.
	Unknown Outcome = "unknown"
)

// Null is the JSON text of an absent value. Register values are kept as
// JSON texts so that an unexpected type shows up verbatim in a report.
const Null = "null"

// Item is one child of a list: its push key and its value.
type Item struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Op is one operation of the history.
type Op struct {
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Node   string `json:"node"`
	Key    string `json:"key"` // the path without .json, e.g. "reg/g0/k1"
	Kind   Kind   `json:"kind"`
	Type   Type   `json:"type"`
	// Local marks a read with consistency=local, which may be stale and
	// is therefore not part of the linearizability check.
	Local bool `json:"local,omitempty"`
	// Final marks the reads of the quiescence phase, after all faults
	// were healed.
	Final bool `json:"final,omitempty"`

	// Patch marks a Write sent as a PATCH of the key's parent with the
	// key as its one field (an update entry), not a PUT: the same effect
	// on the key, another entry kind in the log.
	Patch bool `json:"patch,omitempty"`

	// Inputs.
	Value  string `json:"value,omitempty"`  // Write/CAS/Delete: the JSON written ("null" for Delete); Append: the string appended
	Expect string `json:"expect,omitempty"` // CAS: the JSON value whose ETag was sent as if-match
	Delta  int64  `json:"delta,omitempty"`  // Incr

	// Outputs.
	Outcome Outcome `json:"outcome"`
	Status  int     `json:"status,omitempty"` // HTTP status; 0 when there was no answer
	Error   string  `json:"error,omitempty"`
	Out     string  `json:"out,omitempty"`     // Register read or 412 body, Counter read or Incr answer (JSON text)
	OutNum  int64   `json:"out_num,omitempty"` // Counter: Out as a number (null reads as 0)
	Items   []Item  `json:"items,omitempty"`   // List read, in the order the node returned them
	ETag    string  `json:"etag,omitempty"`    // the ETag response header, when asked for
	Name    string  `json:"name,omitempty"`    // Append: the push key returned

	// Times in nanoseconds since the run started (monotonic clock).
	// Return is when the client got its answer or gave up; for an
	// Unknown operation the checker treats it as infinity.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
}

// IsWrite reports whether the operation may change its key.
func (o *Op) IsWrite() bool {
	return o.Type != Read
}

// Acked reports whether the operation is a write the cluster acknowledged.
func (o *Op) Acked() bool {
	return o.IsWrite() && o.Outcome == OK
}

// MayHaveHappened reports whether the operation may have changed its key:
// acknowledged or indeterminate.
func (o *Op) MayHaveHappened() bool {
	return o.IsWrite() && (o.Outcome == OK || o.Outcome == Unknown)
}

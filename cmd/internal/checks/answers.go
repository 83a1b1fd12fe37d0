package checks

import (
	"fmt"
	"strings"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// UnexpectedAnswers lists answers the workload never provokes: a status
// other than 200, 412 (to a compare-and-set) or 503 — a 500 is a bug, a
// 4xx means the workload sent something the node refused — and bodies
// that do not parse as the kind of key they were read from.
func UnexpectedAnswers(ops []history.Op) Result {
	r := NewBuilder("expected answers only")
	for _, op := range ops {
		switch {
		case op.Status == 0, op.Status == 200, op.Status == 503:
		case op.Status == 412 && op.Type == history.CAS:
		default:
			r.Fail("op %d: %s %s on %s answered %d %s", op.ID, op.Type, op.Key, op.Node, op.Status, op.Error)
			continue
		}
		if strings.HasPrefix(op.Error, "unexpected body") {
			r.Fail("op %d: %s %s on %s: %s (body %s)", op.ID, op.Type, op.Key, op.Node, op.Error, op.Out)
		}
	}
	return r.Done(fmt.Sprintf("%d answers: 200, 412 to if-match, 503, or no answer", len(ops)))
}

// ETags checks that the ETag is a function of the value, the same on
// every node (SPEC §4): every read or 412 that returned a register value
// with its ETag must agree with every other one of that value.
func ETags(ops []history.Op) Result {
	r := NewBuilder("ETags are content hashes")
	etag := map[string]history.Op{} // value → first op that showed its ETag
	n := 0
	for _, op := range ops {
		if op.Kind != history.Register || op.ETag == "" || (op.Outcome != history.OK && op.Outcome != history.Rejected) {
			continue
		}
		n++
		if op.Out == history.Null && op.ETag != "null_etag" {
			r.Fail("op %d on %s: ETag of an absent value is %q, want null_etag", op.ID, op.Node, op.ETag)
		}
		first, ok := etag[op.Out]
		if !ok {
			etag[op.Out] = op
			continue
		}
		if first.ETag != op.ETag {
			r.Fail("value %s: ETag %s from %s (op %d) but %s from %s (op %d)", op.Out, first.ETag, first.Node, first.ID, op.ETag, op.Node, op.ID)
		}
	}
	return r.Done(fmt.Sprintf("%d ETags of %d distinct values agree across nodes", n, len(etag)))
}

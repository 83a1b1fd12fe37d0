// Package model holds the sequential specifications (porcupine models) the
// chaos histories are checked against, one per kind of key, and the
// checker that runs them key by key.
//
// Every model is deterministic. An indeterminate operation is given an
// infinite return time, so porcupine may place it anywhere after its
// invocation — including after everything else, which is the same as
// never having happened. That is why a model can apply an indeterminate
// write as if it had succeeded: the "did not happen" case is covered by
// that placement.
package model

import (
	"fmt"
	"hash/fnv"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// Register is a register with compare-and-set, for one key. The state is
// the key's value as JSON text ("null" when absent). Writes and deletes
// replace it; a CAS replaces it only if it equals the expected value (the
// ETag is a content hash, so equal ETags mean equal values); a 412 must
// report the current value.
var Register = porcupine.Model{
	Init:              func() any { return history.Null },
	Step:              registerStep,
	Equal:             func(a, b any) bool { return a.(string) == b.(string) },
	Hash:              func(s any) uint64 { return hashString(s.(string)) },
	DescribeOperation: describeOp,
	DescribeState:     func(s any) string { return s.(string) },
}

func registerStep(state, input, _ any) (bool, any) {
	s := state.(string)
	op := input.(*history.Op)
	switch op.Type {
	case history.Read:
		if op.Outcome != history.OK {
			return true, s // no answer: no observation
		}
		return op.Out == s, s
	case history.Write, history.Delete:
		if op.Outcome == history.Fail {
			return true, s
		}
		return true, op.Value
	case history.CAS:
		switch op.Outcome {
		case history.OK:
			return s == op.Expect, op.Value
		case history.Rejected:
			return s != op.Expect && s == op.Out, s
		case history.Unknown:
			if s == op.Expect {
				return true, op.Value
			}
			return true, s
		default:
			return true, s
		}
	default:
		return false, s // an operation this model does not know is a bug of the workload
	}
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// describeOp renders an operation for porcupine's visualization.
func describeOp(input, _ any) string {
	op := input.(*history.Op)
	var what string
	switch op.Type {
	case history.Read:
		switch {
		case op.Outcome != history.OK:
			what = "read → ?"
		case op.Kind == history.List:
			what = fmt.Sprintf("read → %d items%s", len(op.Items), lastItem(op.Items))
		default:
			what = "read → " + op.Out
		}
	case history.Write:
		what = "write " + op.Value
	case history.Delete:
		what = "delete"
	case history.CAS:
		what = fmt.Sprintf("cas %s → %s", op.Expect, op.Value)
		if op.Outcome == history.Rejected {
			what += " : 412, current " + op.Out
		}
	case history.Incr:
		what = fmt.Sprintf("incr %+d", op.Delta)
		if op.Outcome == history.OK {
			what += " → " + op.Out
		}
	case history.Append:
		what = "append " + op.Value
		if op.Name != "" {
			what += " as " + op.Name
		}
	}
	if op.Outcome != history.OK && op.Outcome != history.Rejected {
		what += fmt.Sprintf(" (%s", op.Outcome)
		if op.Status != 0 {
			what += fmt.Sprintf(" %d", op.Status)
		}
		what += ")"
	}
	return fmt.Sprintf("%s [%s #%d]", what, op.Node, op.ID)
}

func lastItem(items []history.Item) string {
	if len(items) == 0 {
		return ""
	}
	return ", last " + items[len(items)-1].Value
}

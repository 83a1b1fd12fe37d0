package model

import (
	"strconv"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// Counter is a counter incremented with the `increment` server value, for
// one key. The state is the current number (an absent key counts as 0).
// An acknowledged increment answers the value it produced, so it is a
// fetch-and-add: the answer must be the state plus the delta.
var Counter = porcupine.Model{
	Init:              func() any { return int64(0) },
	Step:              counterStep,
	Equal:             func(a, b any) bool { return a.(int64) == b.(int64) },
	Hash:              func(s any) uint64 { return uint64(s.(int64)) },
	DescribeOperation: describeOp,
	DescribeState:     func(s any) string { return strconv.FormatInt(s.(int64), 10) },
}

func counterStep(state, input, _ any) (bool, any) {
	s := state.(int64)
	op := input.(*history.Op)
	switch op.Type {
	case history.Read:
		if op.Outcome != history.OK {
			return true, s
		}
		return op.OutNum == s, s
	case history.Incr:
		switch op.Outcome {
		case history.OK:
			return s+op.Delta == op.OutNum, op.OutNum
		case history.Unknown:
			return true, s + op.Delta
		default:
			return true, s
		}
	default:
		return false, s
	}
}

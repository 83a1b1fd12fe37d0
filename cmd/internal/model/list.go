package model

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// ListState is the state of an append-only list: how many children it
// has, a hash chained over their push keys and values in order, and the
// last push key and value. Two lists with the same children in the same
// order have equal states, and comparing states is O(1) however long the
// lists grow.
type ListState struct {
	N        int
	H        uint64
	LastName string
	Last     string
}

// Then is the state after appending value v under push key name.
func (s ListState) Then(name, v string) ListState {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], s.H)
	h.Write(b[:])
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(v))
	return ListState{N: s.N + 1, H: h.Sum64(), LastName: name, Last: v}
}

// StateOf is the state of a list holding items, in that order.
func StateOf(items []history.Item) ListState {
	var s ListState
	for _, it := range items {
		s = s.Then(it.Name, it.Value)
	}
	return s
}

// List is an append-only list of POSTed children, for one key. An append
// must get a push key greater than every key before it in the
// linearization (SPEC §2: push keys increase in commit order), which also
// lets porcupine reject a wrong order of concurrent appends at once
// instead of at the next read. A read returns the children in key order
// and must equal the model's list exactly: nothing acknowledged missing,
// nothing twice, each under the key its append was acknowledged with.
//
// The Output of a read is its ListState, computed once by Check, so a
// step costs O(1) instead of O(length of the list).
var List = porcupine.Model{
	Init:              func() any { return ListState{} },
	Step:              listStep,
	Equal:             func(a, b any) bool { return a.(ListState) == b.(ListState) },
	Hash:              func(s any) uint64 { return s.(ListState).H },
	DescribeOperation: describeOp,
	DescribeState: func(s any) string {
		st := s.(ListState)
		if st.N == 0 {
			return "[]"
		}
		return fmt.Sprintf("[%d items, last %s: %s]", st.N, st.LastName, st.Last)
	},
}

func listStep(state, input, output any) (bool, any) {
	s := state.(ListState)
	op := input.(*history.Op)
	switch op.Type {
	case history.Read:
		if op.Outcome != history.OK {
			return true, s
		}
		return output.(ListState) == s, s
	case history.Append:
		if op.Outcome == history.Fail {
			return true, s
		}
		if op.Name <= s.LastName {
			return false, s
		}
		return true, s.Then(op.Name, op.Value)
	default:
		return false, s
	}
}

package model

import (
	"math"
	"slices"
	"strconv"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// Infinity is the return time of an indeterminate operation: it may be
// linearized at any point after its invocation.
const Infinity = int64(math.MaxInt64)

// Stats says how Operations treated a key's history.
type Stats struct {
	Given     int // operations of the key in the history
	Checked   int // operations handed to porcupine
	Unknown   int // indeterminate operations in the history
	Infinite  int // … handed to porcupine with an infinite return time
	Tightened int // … whose return was bounded by the first observation of their value
	Unseen    int // … writes whose unique value nobody ever read: left out
}

// observation is the first sighting of a unique value.
type observation struct {
	ret  int64  // the earliest return of an operation that saw it
	name string // lists: the push key it was seen under
}

// Operations converts one key's history into porcupine operations. It
// applies, as etcd's robustness tests do, rewrites that provably change
// no verdict but keep the search small:
//
//   - reads with consistency=local are left out: they may be stale by
//     contract, so they are no part of the linearizability check;
//   - operations without effect and without observation are left out:
//     reads that got no answer, and writes that certainly failed;
//   - an indeterminate write gets an infinite return time — except when
//     its unique value was observed: then it happened, before the first
//     operation that saw it returned, which becomes its return time (and,
//     for an append, the push key it was seen under becomes its name);
//   - an indeterminate write whose unique value nobody ever saw, not even
//     the final reads, is left out: whatever it did, nothing depended on
//     it (the value would show), so the history is linearizable with it
//     iff it is without it. Increments count as unique writes: the
//     workload gives each increment of a counter its own power of two,
//     so a counter's value shows exactly which increments it holds.
//     Deletes are not unique and keep their infinite return.
//
// Without the last rewrite an open-ended operation that always succeeds
// (an append, an increment) would be tried at every point of its key's
// history, every set of the pending ones at each point: a few dozen that
// never happened — a node closing connections while it shut down — made
// one key's search exceed 4 GiB.
//
// Without the last rewrite a never-seen append would be tried at every
// point of the list's history, and each try fails only at the next read,
// after porcupine has exhausted every order of the appends in between:
// a few such appends made a one-minute history take gigabytes.
func Operations(in []history.Op) ([]porcupine.Operation, Stats) {
	ops := slices.Clone(in) // names of appends may be filled in
	seen := observations(ops)
	st := Stats{Given: len(ops)}
	var out []porcupine.Operation
	for i := range ops {
		op := &ops[i]
		if op.Outcome == history.Unknown {
			st.Unknown++
		}
		if op.Type == history.Read && (op.Local || op.Outcome != history.OK) {
			continue
		}
		if op.Outcome == history.Fail {
			continue
		}
		ret := op.Return
		if op.Outcome == history.Unknown {
			ret = Infinity
			if unique(op) {
				obs, ok := seen[key(op)]
				if !ok {
					st.Unseen++
					continue
				}
				if obs.ret >= op.Call {
					ret = obs.ret
					st.Tightened++
				}
				if op.Kind == history.List && op.Name == "" {
					op.Name = obs.name
				}
			}
			if ret == Infinity {
				st.Infinite++
			}
		}
		var output any = op
		if op.Kind == history.List && op.Type == history.Read {
			output = StateOf(op.Items)
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client,
			Input:    op,
			Call:     op.Call,
			Output:   output,
			Return:   ret,
		})
	}
	st.Checked = len(out)
	return out, st
}

// unique reports whether the operation writes a value no other operation
// writes: overwrites, compare-and-sets and appends of the workload's
// per-client sequence values.
func unique(op *history.Op) bool {
	switch op.Type {
	case history.Write, history.CAS, history.Append:
		return op.Value != "" && op.Value != history.Null
	case history.Incr:
		return isBit(op.Delta)
	}
	return false
}

// isBit reports whether d is a power of two: an increment the counter's
// value shows on its own.
func isBit(d int64) bool {
	return d > 0 && d&(d-1) == 0
}

// key is how observations index a write: its value, or for an increment
// its bit.
func key(op *history.Op) string {
	if op.Type == history.Incr {
		return bitKey(op.Delta)
	}
	return op.Value
}

func bitKey(bit int64) string {
	return "bit:" + strconv.FormatInt(bit, 16)
}

// observations maps each value some answered operation showed to its
// earliest sighting.
func observations(ops []history.Op) map[string]observation {
	seen := map[string]observation{}
	note := func(v, name string, ret int64) {
		if v == "" || v == history.Null {
			return
		}
		if o, ok := seen[v]; !ok || ret < o.ret {
			seen[v] = observation{ret: ret, name: name}
		}
	}
	noteBits := func(v, ret int64) {
		for b := int64(1); b > 0 && b <= v; b <<= 1 {
			if v&b != 0 {
				note(bitKey(b), "", ret)
			}
		}
	}
	for _, op := range ops {
		switch {
		case op.Outcome == history.Unknown:
		case op.Kind == history.Counter && op.Outcome == history.OK && (op.Type == history.Read || op.Type == history.Incr):
			noteBits(op.OutNum, op.Return)
		case op.Type == history.Read && op.Outcome == history.OK && op.Kind == history.List:
			for _, it := range op.Items {
				note(it.Value, it.Name, op.Return)
			}
		case op.Type == history.Read && op.Outcome == history.OK:
			note(op.Out, "", op.Return)
		case op.Type == history.CAS && op.Outcome == history.Rejected:
			note(op.Out, "", op.Return)
		}
	}
	return seen
}

// ModelFor returns the model of a kind of key.
func ModelFor(k history.Kind) (porcupine.Model, bool) {
	switch k {
	case history.Register:
		return Register, true
	case history.Counter:
		return Counter, true
	case history.List:
		return List, true
	}
	return porcupine.Model{}, false
}

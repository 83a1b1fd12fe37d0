package checks

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// finalReads returns, per key, the successful final reads (one per node
// that answered).
func finalReads(ops []history.Op) map[string][]history.Op {
	out := map[string][]history.Op{}
	for _, op := range ops {
		if op.Final && op.Type == history.Read && op.Outcome == history.OK {
			out[op.Key] = append(out[op.Key], op)
		}
	}
	return out
}

// byKey groups the non-final operations by key.
func byKey(ops []history.Op) map[string][]history.Op {
	out := map[string][]history.Op{}
	for _, op := range ops {
		if !op.Final {
			out[op.Key] = append(out[op.Key], op)
		}
	}
	return out
}

// AckedWritesPresent checks the state read from every node at the end,
// after every fault was healed, against the acknowledged writes:
//   - lists: every acknowledged append is there once, under the push key
//     it was acknowledged with; nothing is there that nobody appended;
//   - counters: the value is at least the sum of the acknowledged
//     increments and at most that plus the indeterminate ones;
//   - registers: the value was written by someone (acknowledged or
//     indeterminate), and if one acknowledged write certainly came after
//     every other write, it is that one.
//
// nodes is how many nodes must have answered the final read of each key.
func AckedWritesPresent(ops []history.Op, nodes int) Result {
	r := NewBuilder("acknowledged writes present at the end")
	finals := finalReads(ops)
	keys := byKey(ops)
	acked := 0
	for key, kops := range keys {
		fr := finals[key]
		if len(fr) < nodes {
			r.Fail("%s: only %d of %d nodes answered the final read", key, len(fr), nodes)
		}
		for i, f := range fr {
			n := 0
			switch f.Kind {
			case history.List:
				n = checkListFinal(r, key, kops, f)
			case history.Counter:
				n = checkCounterFinal(r, key, kops, f)
			case history.Register:
				n = checkRegisterFinal(r, key, kops, f)
			}
			if i == 0 {
				acked += n
			}
		}
	}
	return r.Done(fmt.Sprintf("%d keys, %d acknowledged writes checked against %d final reads",
		len(keys), acked, countFinal(finals)))
}

func countFinal(f map[string][]history.Op) int {
	n := 0
	for _, v := range f {
		n += len(v)
	}
	return n
}

func checkListFinal(r *Builder, key string, kops []history.Op, f history.Op) int {
	have := map[string]string{} // value → name in the final read
	for _, it := range f.Items {
		if prev, dup := have[it.Value]; dup {
			r.Fail("%s on %s: value %q twice, under %s and %s", key, f.Node, it.Value, prev, it.Name)
		}
		have[it.Value] = it.Name
	}
	possible := map[string]bool{}
	n := 0
	for _, op := range kops {
		if op.Type != history.Append || !op.MayHaveHappened() {
			continue
		}
		possible[op.Value] = true
		if op.Outcome != history.OK {
			continue
		}
		n++
		name, ok := have[op.Value]
		switch {
		case !ok:
			r.Fail("%s on %s: acknowledged append %q (op %d, push key %s, answered by %s) is missing", key, f.Node, op.Value, op.ID, op.Name, op.Node)
		case op.Name != "" && name != op.Name:
			r.Fail("%s on %s: append %q was acknowledged as %s but is stored under %s", key, f.Node, op.Value, op.Name, name)
		}
	}
	for v, name := range have {
		if !possible[v] {
			r.Fail("%s on %s: child %s = %q was never appended", key, f.Node, name, v)
		}
	}
	return n
}

func checkCounterFinal(r *Builder, key string, kops []history.Op, f history.Op) int {
	var lo, hi, acked, possible int64
	bits := true // every delta its own power of two, as the workload makes them
	n := 0
	for _, op := range kops {
		if op.Type != history.Incr {
			continue
		}
		bits = bits && op.Delta > 0 && op.Delta&(op.Delta-1) == 0 && possible&op.Delta == 0
		switch op.Outcome {
		case history.OK:
			lo += op.Delta
			hi += op.Delta
			acked |= op.Delta
			possible |= op.Delta
			n++
		case history.Unknown:
			hi += op.Delta
			possible |= op.Delta
		}
	}
	switch {
	case f.OutNum < lo || f.OutNum > hi:
		r.Fail("%s on %s: final value %d outside [%d, %d] (acknowledged increments … plus indeterminate ones)", key, f.Node, f.OutNum, lo, hi)
	case bits && f.OutNum&acked != acked:
		r.Fail("%s on %s: final value %#x lacks acknowledged increments %#x", key, f.Node, f.OutNum, acked&^f.OutNum)
	case bits && f.OutNum&^possible != 0:
		r.Fail("%s on %s: final value %#x holds increments %#x nobody made", key, f.Node, f.OutNum, f.OutNum&^possible)
	}
	return n
}

func checkRegisterFinal(r *Builder, key string, kops []history.Op, f history.Op) int {
	written := map[string]bool{history.Null: true} // absent: the initial state, or a delete
	var writes []history.Op
	n := 0
	for _, op := range kops {
		if !op.MayHaveHappened() {
			continue
		}
		written[op.Value] = true
		writes = append(writes, op)
		if op.Outcome == history.OK {
			n++
		}
	}
	if !written[f.Out] {
		r.Fail("%s on %s: final value %s was never written", key, f.Node, f.Out)
		return n
	}
	// The last write, when real time alone says which it is: acknowledged,
	// and invoked after every other write returned (none indeterminate,
	// which could take effect at any time).
	slices.SortFunc(writes, func(a, b history.Op) int { return cmp.Compare(a.Call, b.Call) })
	if len(writes) > 0 {
		last := writes[len(writes)-1]
		certain := last.Outcome == history.OK
		for _, w := range writes[:len(writes)-1] {
			if w.Outcome != history.OK || w.Return >= last.Call {
				certain = false
				break
			}
		}
		// A CAS that succeeded wrote its value; the last write decides.
		if certain && f.Out != last.Value {
			r.Fail("%s on %s: final value %s, but the last write (op %d, %s, acknowledged by %s) wrote %s", key, f.Node, f.Out, last.ID, last.Type, last.Node, last.Value)
		}
	}
	return n
}

package watch

import (
	"fmt"
	"math/bits"
	"strconv"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// An element is what one write puts into a key and a stream can show:
// a register's value (its JSON text; every write's is unique), one
// increment's bit of a counter (each increment adds its own power of
// two), or a list child's value (every append's is unique).

// keyWrites is what the history says about one key.
type keyWrites struct {
	kind history.Kind
	// by element, the operation that wrote it
	writes map[string]*history.Op
	// elements known to have taken effect: acknowledged, or seen by a
	// read (a linearizable read shows only committed state, a local one
	// only applied state)
	committed map[string]bool
}

// bitElement names the element of an increment by 2^bit.
func bitElement(bit int) string { return strconv.Itoa(bit) }

// bitsOf lists the bits set in n.
func bitsOf(n uint64) []int {
	var out []int
	for n != 0 {
		b := bits.TrailingZeros64(n)
		out = append(out, b)
		n &^= 1 << b
	}
	return out
}

// indexHistory groups the history's writes and sightings by key.
func indexHistory(ops []history.Op) map[string]*keyWrites {
	out := map[string]*keyWrites{}
	get := func(op *history.Op) *keyWrites {
		k := out[op.Key]
		if k == nil {
			k = &keyWrites{kind: op.Kind, writes: map[string]*history.Op{}, committed: map[string]bool{}}
			out[op.Key] = k
		}
		return k
	}
	for i := range ops {
		op := &ops[i]
		k := get(op)
		switch op.Kind {
		case history.Register:
			switch {
			case op.Type == history.Write || op.Type == history.CAS:
				k.writes[op.Value] = op
				if op.Acked() {
					k.committed[op.Value] = true
				}
			case op.Type == history.Read && op.Outcome == history.OK, op.Type == history.CAS && op.Outcome == history.Rejected:
				if op.Out != "" && op.Out != history.Null {
					k.committed[op.Out] = true
				}
			}
		case history.Counter:
			switch {
			case op.Type == history.Incr:
				if d := uint64(op.Delta); op.Delta > 0 && d&(d-1) == 0 {
					e := bitElement(bits.TrailingZeros64(d))
					k.writes[e] = op
					if op.Acked() {
						k.committed[e] = true
					}
				}
				if op.Outcome == history.OK {
					for _, b := range bitsOf(uint64(op.OutNum)) {
						k.committed[bitElement(b)] = true
					}
				}
			case op.Type == history.Read && op.Outcome == history.OK:
				for _, b := range bitsOf(uint64(op.OutNum)) {
					k.committed[bitElement(b)] = true
				}
			}
		case history.List:
			switch {
			case op.Type == history.Append:
				k.writes[op.Value] = op
				if op.Acked() {
					k.committed[op.Value] = true
				}
			case op.Type == history.Read && op.Outcome == history.OK:
				for _, it := range op.Items {
					k.committed[it.Value] = true
				}
			}
		}
	}
	return out
}

// describe names an operation for a report line.
func describe(op *history.Op) string {
	s := fmt.Sprintf("op #%d (client %d on %s, %s", op.ID, op.Client, op.Node, op.Type)
	if op.Patch {
		s += " as PATCH"
	}
	s += ", " + string(op.Outcome)
	if op.Status != 0 {
		s += fmt.Sprintf(" %d", op.Status)
	}
	if op.Error != "" {
		s += ": " + op.Error
	}
	return s + ")"
}

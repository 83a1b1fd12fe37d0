package tree

import "sync/atomic"

// Small integers are by far the most common leaves of a large write
// ({"k0000000":1,…}), and a leaf costs an allocation:
// decoding shares one immutable leaf per small integer instead. Nodes are
// never changed once built, so a shared leaf is indistinguishable from a
// fresh one (same value, digest and size); at most a write of the very
// node already there is recognised as no change, which it is.
const (
	sharedIntMin = -64
	sharedIntMax = 1024 // exclusive
)

var sharedInts [sharedIntMax - sharedIntMin]atomic.Pointer[Node]

// SharedBool returns the boolean leaf of v every parse shares (nodes are
// immutable).
func SharedBool(v bool) *Node {
	if v {
		return nodeTrue
	}
	return nodeFalse
}

// SharedInt returns an integer leaf of v, shared for small values.
func SharedInt(v int64) *Node {
	if v < sharedIntMin || v >= sharedIntMax {
		return Int(v)
	}
	slot := &sharedInts[v-sharedIntMin]
	if n := slot.Load(); n != nil {
		return n
	}
	// Two goroutines may both get here: each stores an equal leaf, and
	// either serves.
	n := Int(v)
	slot.Store(n)
	return n
}

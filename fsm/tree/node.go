package tree

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"math"

	"github.com/tidwall/btree"
)

// Kind is the type of a Node's value.
type Kind uint8

// Node kinds. Null is never stored: a nil *Node is the absent value.
const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindObject
	// KindTimestamp and KindIncrement are server-value placeholders that
	// exist only in parsed request bodies, before Apply resolves them.
	KindTimestamp
	KindIncrement
)

// Node is one immutable value of the tree. A nil *Node is null (absent).
// Objects keep their children in a copy-on-write B-tree ordered by Firebase
// key order, so a changed tree shares everything off the written path with
// the old one, and Snapshot only captures the root pointer.
//
// Most nodes are leaves, so the layout is kept for them: 96 bytes, one
// allocation (a million leaves are about a third of a node's memory). The
// fields only objects or placeholders need share the leaves' ones.
type Node struct {
	kind Kind
	// b is a KindBool's value; for KindIncrement it says that the delta is
	// a double (in f) rather than an integer (in i).
	b     bool
	hasSV bool // a server-value placeholder is inside
	i     int64
	f     float64
	s     string
	// children holds a KindObject's children; never empty.
	children *btree.BTreeG[entry]
	prio     *Node // nil, or a string or number leaf without priority
	// digest is a leaf's hash; for an object, the lane-wise sum of its
	// children's entry digests (sumLanes), from which its hash is derived
	// when asked for (hash). An object changes far more often than its
	// hash is read, and keeping both would cost every leaf 32 bytes.
	digest [sha256.Size]byte
	size   int64 // approximate bytes of the JSON form, for write size limits
}

type entry struct {
	keyInfo
	node *Node
}

func lessEntry(a, b entry) bool { return compareKeyInfo(&a.keyInfo, &b.keyInfo) < 0 }

var btreeOpts = btree.Options{NoLocks: true, Degree: 16}

func newChildren() *btree.BTreeG[entry] { return btree.NewBTreeGOptions(lessEntry, btreeOpts) }

// Constructors for leaves.

// Bool returns a boolean leaf.
func Bool(v bool) *Node { return finishLeaf(&Node{kind: KindBool, b: v}) }

// Int returns an integer leaf.
func Int(v int64) *Node { return finishLeaf(&Node{kind: KindInt, i: v}) }

// Float returns a double leaf. NaN and infinities are not JSON and must be rejected before.
func Float(v float64) *Node { return finishLeaf(&Node{kind: KindFloat, f: v}) }

// String returns a string leaf.
func String(v string) *Node { return finishLeaf(&Node{kind: KindString, s: v}) }

// ServerTimestamp returns the placeholder of {".sv":"timestamp"}, which
// Resolve replaces with the write's clock reading.
func ServerTimestamp() *Node { return &Node{kind: KindTimestamp, hasSV: true} }

// ServerIncrement returns the placeholder of {".sv":{"increment":delta}}
// (delta an integer or double leaf), which Resolve adds to the number in
// place. It holds delta in i or f.
func ServerIncrement(delta *Node) *Node {
	n := &Node{kind: KindIncrement, hasSV: true}
	if delta.Kind() == KindFloat {
		n.b, n.f = true, delta.f
	} else {
		n.i = delta.i
	}
	return n
}

// IncrementDelta returns a KindIncrement placeholder's delta (a new
// integer or double leaf).
func (n *Node) IncrementDelta() *Node {
	if n.b {
		return Float(n.f)
	}
	return Int(n.i)
}

// HasServerValues reports whether a value holds server-value
// placeholders, which a write resolves against the clock and the stored
// data (Resolve).
func (n *Node) HasServerValues() bool { return n != nil && n.hasSV }

// Kind returns the node's kind; KindNull for nil.
func (n *Node) Kind() Kind {
	if n == nil {
		return KindNull
	}
	return n.kind
}

// BoolValue, IntValue, FloatValue and StringValue return the leaf's value.
func (n *Node) BoolValue() bool { return n.b }

// IntValue returns an integer leaf's value.
func (n *Node) IntValue() int64 { return n.i }

// FloatValue returns a double leaf's value.
func (n *Node) FloatValue() float64 { return n.f }

// StringValue returns a string leaf's value.
func (n *Node) StringValue() string { return n.s }

// Number returns a numeric leaf's value as a float64.
func (n *Node) Number() (float64, bool) {
	switch n.Kind() {
	case KindInt:
		return float64(n.i), true
	case KindFloat:
		return n.f, true
	}
	return 0, false
}

// Priority returns the node's priority (a string or number leaf) or nil.
func (n *Node) Priority() *Node {
	if n == nil {
		return nil
	}
	return n.prio
}

// Size is the approximate size in bytes of the node's JSON form.
func (n *Node) Size() int64 {
	if n == nil {
		return 4
	}
	return n.size
}

// Len returns the number of children of an object (0 for leaves).
func (n *Node) Len() int {
	if n.Kind() != KindObject {
		return 0
	}
	return n.children.Len()
}

// Child returns the child named key, or nil.
func (n *Node) Child(key string) *Node {
	if n.Kind() != KindObject {
		return nil
	}
	e, ok := n.children.Get(entry{keyInfo: newKeyInfo(key)})
	if !ok {
		return nil
	}
	return e.node
}

// Get returns the node at p below n, or nil.
func (n *Node) Get(p Path) *Node {
	for _, k := range p {
		if n == nil {
			return nil
		}
		n = n.Child(k)
	}
	return n
}

// Each calls fn for every child in key order until fn returns false.
func (n *Node) Each(fn func(key string, child *Node) bool) {
	if n.Kind() != KindObject {
		return
	}
	n.children.Scan(func(e entry) bool { return fn(e.key, e.node) })
}

// ETag is the node's content hash as sent in ETag headers: the same on every
// replica, and changed whenever the value or a priority changes. The ETag of
// null is "null_etag".
func (n *Node) ETag() string {
	if n == nil {
		return "null_etag"
	}
	h := n.hash()
	return base64.StdEncoding.EncodeToString(h[:20])
}

// Equal reports whether two nodes hold the same value and priorities.
func (n *Node) Equal(o *Node) bool {
	if n == nil || o == nil {
		return n == o
	}
	return n.hash() == o.hash()
}

// WithPriority returns a copy of n with priority p (nil removes it). A null
// node has no priority and stays null.
func (n *Node) WithPriority(p *Node) *Node {
	if n == nil {
		return nil
	}
	if p != nil && p.prio != nil {
		c := *p
		c.prio = nil
		p = finishLeaf(&c)
	}
	c := *n
	c.prio = p
	c.hasSV = n.hasSV || (p != nil && p.hasSV)
	if c.kind == KindObject {
		// The lane sum (in digest) does not involve the priority; the
		// size keeps what it was, as it always has: write limits are
		// part of Apply, so its arithmetic must not change.
		return &c
	}
	return finishLeaf(&c)
}

// Hashing. A leaf's digest is SHA-256 over its kind, value and priority. An
// object's digest is SHA-256 over its priority and the lane-wise sum of
// SHA-256(key, child digest) over its children: the sum is updated in O(1)
// when one child changes, so a write costs O(depth), not O(size).

func prioBytes(h []byte, p *Node) []byte {
	if p == nil {
		return append(h, 0)
	}
	h = append(h, 1)
	return leafBytes(h, p)
}

func leafBytes(h []byte, n *Node) []byte {
	h = append(h, byte(n.kind))
	switch n.kind {
	case KindBool:
		if n.b {
			h = append(h, 1)
		} else {
			h = append(h, 0)
		}
	case KindInt:
		h = binary.BigEndian.AppendUint64(h, uint64(n.i))
	case KindFloat:
		h = binary.BigEndian.AppendUint64(h, math.Float64bits(n.f))
	case KindString:
		h = binary.BigEndian.AppendUint64(h, uint64(len(n.s)))
		h = append(h, n.s...)
	case KindIncrement: // the delta's own leaf bytes
		if n.b {
			h = append(h, byte(KindFloat))
			h = binary.BigEndian.AppendUint64(h, math.Float64bits(n.f))
		} else {
			h = append(h, byte(KindInt))
			h = binary.BigEndian.AppendUint64(h, uint64(n.i))
		}
	}
	return h
}

func finishLeaf(n *Node) *Node {
	var arr [160]byte // most leaves hash from the stack
	buf := arr[:0]
	buf = prioBytes(buf, n.prio)
	buf = leafBytes(buf, n)
	n.digest = sha256.Sum256(buf)
	switch n.kind {
	case KindString:
		n.size = int64(len(n.s)) + 2
	case KindBool:
		n.size = 5
	default:
		n.size = 8
	}
	if n.prio != nil {
		n.size += n.prio.size + 24
	}
	return n
}

func entryDigest(key string, child *Node) [4]uint64 {
	var arr [160]byte
	buf := arr[:0]
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(key)))
	buf = append(buf, key...)
	h := child.hash()
	buf = append(buf, h[:]...)
	d := sha256.Sum256(buf)
	return [4]uint64{
		binary.BigEndian.Uint64(d[0:]), binary.BigEndian.Uint64(d[8:]),
		binary.BigEndian.Uint64(d[16:]), binary.BigEndian.Uint64(d[24:]),
	}
}

// hash returns the node's SHA-256 content hash: a leaf keeps it, an
// object's is SHA-256 over its kind, priority and lane sum.
func (n *Node) hash() [sha256.Size]byte {
	if n.kind != KindObject {
		return n.digest
	}
	var arr [96]byte
	buf := arr[:0]
	buf = append(buf, byte(KindObject))
	buf = prioBytes(buf, n.prio)
	for _, l := range n.sumLanes() {
		buf = binary.BigEndian.AppendUint64(buf, l)
	}
	return sha256.Sum256(buf)
}

// sumLanes returns an object's lane sum, kept in digest.
func (n *Node) sumLanes() [4]uint64 {
	d := &n.digest
	return [4]uint64{
		binary.BigEndian.Uint64(d[0:]), binary.BigEndian.Uint64(d[8:]),
		binary.BigEndian.Uint64(d[16:]), binary.BigEndian.Uint64(d[24:]),
	}
}

// setLanes stores an object's lane sum in digest.
func (n *Node) setLanes(sum [4]uint64) {
	for i, l := range sum {
		binary.BigEndian.PutUint64(n.digest[8*i:], l)
	}
}

// newObject returns an object node with the given children and lane sum.
func newObject(children *btree.BTreeG[entry], sum [4]uint64, size int64, prio *Node, hasSV bool) *Node {
	n := &Node{kind: KindObject, children: children, size: size, prio: prio, hasSV: hasSV}
	n.setLanes(sum)
	return n
}

func entrySize(key string, child *Node) int64 { return int64(len(key)) + 4 + child.size }

func addLanes(a, b [4]uint64) [4]uint64 {
	return [4]uint64{a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]}
}

func subLanes(a, b [4]uint64) [4]uint64 {
	return [4]uint64{a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]}
}

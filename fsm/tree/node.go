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
// Most nodes are leaves, so the layout is kept for them: 48 bytes, one
// allocation, with what only objects need behind obj. A leaf's hash and
// size are computed when asked for rather than kept: a leaf's hash is one
// SHA-256 of a few bytes, read when its parent's lane sum changes or its
// ETag is asked for, while every leaf kept would cost 40 bytes more (a
// node holding a million leaves, 40 MB).
type Node struct {
	kind Kind
	// b is a KindBool's value; for KindIncrement it says that the delta is
	// a double rather than an integer.
	b     bool
	hasSV bool // a server-value placeholder is inside
	// i is a KindInt's value, a KindFloat's IEEE-754 bits, and a
	// KindIncrement's delta as one or the other (b).
	i    int64
	s    string
	prio *Node   // nil, or a string or number leaf without priority
	obj  *object // a KindObject's children, lane sum and size; nil otherwise
}

// object is what only an object node holds.
type object struct {
	// children is never empty.
	children *btree.BTreeG[entry]
	// lanes is the lane-wise sum of the children's entry digests, from
	// which the object's hash is derived when asked for (hash): an object
	// changes far more often than its hash is read.
	lanes [4]uint64
	size  int64 // approximate bytes of the JSON form, for write size limits
}

// entry is one child in its parent's B-tree. It is kept to 24 bytes, the
// key and the value, since an object of a million children holds a million
// of them: the key's integer form, which the order needs, is parsed at each
// comparison instead of kept (a byte or two of work for most keys).
type entry struct {
	key  string
	node *Node
}

func lessEntry(a, b entry) bool { return CompareKeys(a.key, b.key) < 0 }

var btreeOpts = btree.Options{NoLocks: true, Degree: 16}

func newChildren() *btree.BTreeG[entry] { return btree.NewBTreeGOptions(lessEntry, btreeOpts) }

// Constructors for leaves.

// Bool returns a boolean leaf.
func Bool(v bool) *Node { return &Node{kind: KindBool, b: v} }

// Int returns an integer leaf.
func Int(v int64) *Node { return &Node{kind: KindInt, i: v} }

// Float returns a double leaf. NaN and infinities are not JSON and must be rejected before.
func Float(v float64) *Node {
	return &Node{kind: KindFloat, i: int64(math.Float64bits(v))}
}

// String returns a string leaf.
func String(v string) *Node { return &Node{kind: KindString, s: v} }

// ServerTimestamp returns the placeholder of {".sv":"timestamp"}, which
// Resolve replaces with the write's clock reading.
func ServerTimestamp() *Node { return &Node{kind: KindTimestamp, hasSV: true} }

// ServerIncrement returns the placeholder of {".sv":{"increment":delta}}
// (delta an integer or double leaf), which Resolve adds to the number in
// place. It holds delta as i, and b says it is a double.
func ServerIncrement(delta *Node) *Node {
	return &Node{kind: KindIncrement, hasSV: true, b: delta.Kind() == KindFloat, i: delta.i}
}

// IncrementDelta returns a KindIncrement placeholder's delta (a new
// integer or double leaf).
func (n *Node) IncrementDelta() *Node {
	if n.b {
		return Float(n.float())
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
func (n *Node) IntValue() int64 {
	if n.kind != KindInt {
		return 0
	}
	return n.i
}

// FloatValue returns a double leaf's value.
func (n *Node) FloatValue() float64 {
	if n.kind != KindFloat {
		return 0
	}
	return n.float()
}

// float is the double a KindFloat (or a double increment) holds in i.
func (n *Node) float() float64 { return math.Float64frombits(uint64(n.i)) }

// StringValue returns a string leaf's value.
func (n *Node) StringValue() string { return n.s }

// Number returns a numeric leaf's value as a float64.
func (n *Node) Number() (float64, bool) {
	switch n.Kind() {
	case KindInt:
		return float64(n.i), true
	case KindFloat:
		return n.float(), true
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
	switch {
	case n == nil:
		return 4
	case n.kind == KindObject:
		return n.obj.size
	}
	return leafSize(n)
}

// leafSize is a leaf's Size: its value's, plus its priority's and 24
// for the {".value":…,".priority":…} around them when it has one.
func leafSize(n *Node) int64 {
	var size int64
	switch n.kind {
	case KindString:
		size = int64(len(n.s)) + 2
	case KindBool:
		size = 5
	case KindTimestamp, KindIncrement:
		if n.prio == nil {
			return 0 // unsized until resolved, as ever
		}
		size = 8
	default:
		size = 8
	}
	if n.prio != nil {
		size += leafSize(n.prio) + 24
	}
	return size
}

// Len returns the number of children of an object (0 for leaves).
func (n *Node) Len() int {
	if n.Kind() != KindObject {
		return 0
	}
	return n.obj.children.Len()
}

// Child returns the child named key, or nil.
func (n *Node) Child(key string) *Node {
	if n.Kind() != KindObject {
		return nil
	}
	e, ok := n.obj.children.Get(entry{key: key})
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
	n.obj.children.Scan(func(e entry) bool { return fn(e.key, e.node) })
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
	switch {
	case n == nil || o == nil:
		return n == o
	case n == o:
		return true
	case isValue(n.kind) && isValue(o.kind):
		// What a leaf's hash covers, compared without hashing it.
		return n.kind == o.kind && n.b == o.b && n.i == o.i && n.s == o.s && n.prio.Equal(o.prio)
	}
	return n.hash() == o.hash()
}

// isValue reports whether k is a stored leaf's kind.
func isValue(k Kind) bool { return k >= KindBool && k <= KindString }

// WithPriority returns a copy of n with priority p (nil removes it). A null
// node has no priority and stays null.
func (n *Node) WithPriority(p *Node) *Node {
	if n == nil {
		return nil
	}
	if p != nil && p.prio != nil {
		c := *p
		c.prio = nil
		p = &c
	}
	c := *n
	c.prio = p
	c.hasSV = n.hasSV || (p != nil && p.hasSV)
	if c.kind == KindObject {
		// The lane sum does not involve the priority; the size keeps
		// what it was, as it always has: write limits are part of
		// Apply, so its arithmetic must not change. The copy gets an
		// object part of its own, as n's may yet change in place.
		o := *n.obj
		c.obj = &o
	}
	return &c
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
		h = binary.BigEndian.AppendUint64(h, uint64(n.i))
	case KindString:
		h = binary.BigEndian.AppendUint64(h, uint64(len(n.s)))
		h = append(h, n.s...)
	case KindIncrement: // the delta's own leaf bytes
		if n.b {
			h = append(h, byte(KindFloat))
		} else {
			h = append(h, byte(KindInt))
		}
		h = binary.BigEndian.AppendUint64(h, uint64(n.i))
	}
	return h
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

// hash returns the node's SHA-256 content hash: a leaf's over its value
// (leafDigest), an object's over its kind, priority and lane sum.
func (n *Node) hash() [sha256.Size]byte {
	if n.kind != KindObject {
		return leafDigest(n)
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

// sumLanes returns an object's lane sum.
func (n *Node) sumLanes() [4]uint64 { return n.obj.lanes }

// newObject returns an object node with the given children and lane sum.
func newObject(children *btree.BTreeG[entry], sum [4]uint64, size int64, prio *Node, hasSV bool) *Node {
	return &Node{kind: KindObject, prio: prio, hasSV: hasSV, obj: &object{children: children, lanes: sum, size: size}}
}

func entrySize(key string, child *Node) int64 { return int64(len(key)) + 4 + child.Size() }

func addLanes(a, b [4]uint64) [4]uint64 {
	return [4]uint64{a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]}
}

func subLanes(a, b [4]uint64) [4]uint64 {
	return [4]uint64{a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]}
}

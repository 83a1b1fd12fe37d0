package tree

import "github.com/tidwall/btree"

// Building objects: from scratch (ObjectBuilder: the parser, snapshot
// restore, the binary form of fsm's log entries) and by changing one
// child of an existing node (withChild, replaceChild: writes).

// ObjectBuilder assembles a new object node from scratch (the parser and
// snapshot restore use it).
type ObjectBuilder struct {
	children *btree.BTreeG[entry]
	sum      [4]uint64
	size     int64
	hasSV    bool
	// last is the greatest key so far while the keys come in key order
	// (a snapshot, a binary value, many bodies), which appending to the
	// B-tree's last leaf is quicker than inserting; unordered once not.
	last      keyInfo
	unordered bool
	// lazy is set past lazyChildren children: sum stops following them,
	// and build sums all their digests at once, on several goroutines.
	lazy bool
}

// lazyChildren is the number of children from which an ObjectBuilder
// leaves its lane sum to build.
const lazyChildren = 4096

// NewObjectBuilder returns an empty builder.
func NewObjectBuilder() *ObjectBuilder {
	return &ObjectBuilder{children: newChildren(), size: 2}
}

// Len is the number of children so far.
func (b *ObjectBuilder) Len() int { return b.children.Len() }

// Set adds or replaces a child; nil children are ignored.
func (b *ObjectBuilder) Set(key string, child *Node) {
	if child == nil {
		return
	}
	e := entry{key: key, node: child}
	ki := newKeyInfo(key)
	var (
		old entry
		ok  bool
	)
	order := 1
	if b.children.Len() > 0 && !b.unordered {
		order = compareKeyInfo(&ki, &b.last)
	}
	switch {
	case order > 0 && !b.unordered:
		old, ok = b.children.Load(e) // Set, with a shortcut for the last key
		b.last = ki
	default:
		b.unordered = b.unordered || order < 0
		old, ok = b.children.Set(e)
	}
	if ok {
		if !b.lazy {
			b.sum = subLanes(b.sum, entryDigest(key, old.node))
		}
		b.size -= entrySize(key, old.node)
	}
	if !b.lazy {
		if b.children.Len() > lazyChildren {
			b.lazy = true
		} else {
			b.sum = addLanes(b.sum, entryDigest(key, child))
		}
	}
	b.size += entrySize(key, child)
	b.hasSV = b.hasSV || child.hasSV
}

// Build returns the object with the priority prio (nil: none), or nil
// when it has no children (pruning).
func (b *ObjectBuilder) Build(prio *Node) *Node {
	if b.children.Len() == 0 {
		return nil
	}
	size, hasSV := b.size, b.hasSV
	if prio != nil {
		size += prio.Size() + 16
		hasSV = hasSV || prio.hasSV
	}
	sum := b.sum
	if b.lazy {
		sum = childrenLanes(b.children)
	}
	return newObject(b.children, sum, size, prio, hasSV)
}

// withChild returns a copy of object-or-leaf n whose child key is c (nil
// removes it). A leaf becomes an object (keeping its priority); an object
// left empty becomes null. n itself is not modified.
func (n *Node) withChild(key string, c *Node) *Node {
	var old *Node
	if n.Kind() == KindObject {
		old = n.Child(key)
	}
	if old == c {
		return n
	}
	if n.Kind() != KindObject {
		if c == nil {
			return n
		}
		b := NewObjectBuilder()
		b.Set(key, c)
		return b.Build(n.Priority())
	}
	return n.replaceChild(key, entryOf(key, old), c, false)
}

// childEntry is what a child contributes to its parent's lane sum and size.
type childEntry struct {
	present bool
	digest  [4]uint64
	size    int64
}

// entryOf returns child's contribution under key (nothing for nil).
func entryOf(key string, child *Node) childEntry {
	if child == nil {
		return childEntry{}
	}
	return childEntry{present: true, digest: entryDigest(key, child), size: entrySize(key, child)}
}

// replaceChild sets object n's child key to c (nil removes it), where was
// is what the child there contributed so far — taken before a child
// changed in place changed. In place, n itself changes (see owned);
// otherwise a copy does. It returns nil when no child is left.
func (n *Node) replaceChild(key string, was childEntry, c *Node, inPlace bool) *Node {
	children, sum, size := n.obj.children, n.sumLanes(), n.obj.size
	if !inPlace {
		children = children.Copy()
	}
	if was.present {
		sum = subLanes(sum, was.digest)
		size -= was.size
	}
	ki := newKeyInfo(key)
	if c == nil {
		children.Delete(entry{key: ki.key})
		if children.Len() == 0 {
			return nil
		}
	} else {
		children.Set(entry{key: ki.key, node: c})
		sum = addLanes(sum, entryDigest(key, c))
		size += entrySize(key, c)
	}
	hasSV := n.hasSV || (c != nil && c.hasSV)
	if !inPlace {
		return newObject(children, sum, size, n.prio, hasSV)
	}
	n.obj.lanes, n.obj.size, n.hasSV = sum, size, hasSV
	return n
}

// WithMemberPriority returns the object n with the priority p as the
// parser builds it from a ".priority" member: counted in the object's
// size, unlike WithPriority (the {".value":…,".priority":…} form). A leaf
// gets p through WithPriority.
func (n *Node) WithMemberPriority(p *Node) *Node {
	if n.Kind() != KindObject {
		return n.WithPriority(p)
	}
	b := &ObjectBuilder{children: n.obj.children, sum: n.sumLanes(), size: n.obj.size, hasSV: n.hasSV}
	return b.Build(p)
}

// ValuePriority reports whether n is an object whose priority does not
// count in its size: it came through WithPriority (a body's
// {".value":{…},".priority":p}), not as a ".priority" member.
func (n *Node) ValuePriority() bool {
	return n.Kind() == KindObject && n.prio != nil && n.obj.size == childrenSize(n)
}

// childrenSize is the size an object has without its priority.
func childrenSize(n *Node) int64 {
	size := int64(2)
	n.obj.children.Scan(func(e entry) bool {
		size += entrySize(e.key, e.node)
		return true
	})
	return size
}

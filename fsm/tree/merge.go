package tree

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/btree"
)

// An Update's fields are applied as if one after the other, in the order
// the client sent them (updateInOrder does exactly that, and is the
// definition): each field's current value, server values, increments and
// size are those of the tree before the update, and each later field
// sees the tree the earlier ones left. Field by field, though, a write
// walks from the root, looks its parent up and rehashes every ancestor:
// a PATCH of a million keys under one node would take seconds on the
// Raft apply loop while every other read and write waited.
//
// mergeUpdate computes the same tree in one pass instead: it groups the
// fields by their key at each level (sorted in key order), walks the old
// tree alongside, builds every changed object once — its B-tree bulk
// loaded from sorted children, its lane sum and size adjusted by the
// children that changed — and hashes every new child once.
//
// Order still matters in a few places, and the merge keeps it: a node
// whose children are all deleted disappears, so a field that comes
// after the deletes recreates it as a new object without its priority;
// a priority set on a leaf before a field turns it into an object is
// counted in the object's size, one set after is not; and a priority set
// on a node that does not exist at that moment is lost. None of these
// needs more than two moments per node: when it (first) became null and
// when it (first) became non-null again. Paths never overlap, so a node
// that comes into being during an update never disappears again in the
// same update, and a node that disappears does so once: both moments are
// enough to know, for every node, what the fields in order would have
// made of it.
//
// The children of a large object are merged in batches: the subtrees of
// a batch and their entry digests by several goroutines (subtrees share
// nothing), while the batch before is loaded into the B-tree, which only
// one goroutine can do. The result does not depend on the scheduling.
//
// Inputs the parser never produces (overlapping paths, ".priority"
// inside a path, keys that are not UTF-8: possible only in a crafted log
// entry) go to updateInOrder, so every entry keeps its exact result.

type (
	btreeChildren = btree.BTreeG[entry]
	btreeIter     = btree.IterG[entry]
)

// never is the moment of something that does not happen: later than
// every field.
const never = math.MaxInt

// errInOrder tells applyUpdate that only updateInOrder handles the input.
var errInOrder = errors.New("update: fields need in-order application")

// mergeItem is one field in a group being split by key: the field's index
// (its moment) and its key at the level being grouped.
type mergeItem struct {
	ki keyInfo
	i  int32
}

type merger struct {
	w      *Write
	fields []Field
	base   int // len(w.Path): fields' absolute paths start with it
	// resolved holds each field with its server values resolved; without
	// any server value, it is fields itself (resolving changes nothing),
	// and sv is false.
	resolved         []Field
	sv               bool
	written, removed int64
	// errAt is the index of the first failing field (len(fields) when
	// none fails), err its error: the one the fields in order would
	// have stopped at.
	errAt int
	err   error
	// fallback is set by an input only updateInOrder handles.
	fallback bool
	// flat says that every field is one key (not ".priority") below the
	// update's node: the echo's members are then that node's touched
	// children, and object builds it on the way (echoNode).
	flat     bool
	echoNode *Node
	// echoDigest holds, for a one-key field, the entry digest of its
	// value under its key, computed for the tree and reused by the echo
	// whose member it also is (echoHas says which are set).
	echoDigest [][4]uint64
	echoHas    []bool
	// levels holds what object uses at each depth.
	levels []*mergeLevel
}

// mergeLevel is what object needs at one depth, reused by every object
// there.
type mergeLevel struct {
	batches [2][]mergeRun
	placer  placer
	placing sync.WaitGroup
}

// mergeUpdate applies fields at w.Path to root. It returns errInOrder for
// inputs it leaves to updateInOrder.
func mergeUpdate(root *Node, w *Write, fields []Field) (updated, error) {
	if !mergeable(w, fields) {
		return updated{}, errInOrder
	}
	m := &merger{
		w: w, fields: fields, base: len(w.Path),
		resolved: fields,
		errAt:    len(fields),
		flat:     true,
	}
	for _, f := range fields {
		if len(f.Path) != 1 || f.Path[0] == ".priority" {
			m.flat = false
		}
		if f.Value != nil && f.Value.hasSV {
			m.sv = true
		}
	}
	if m.sv {
		m.resolved = make([]Field, len(fields))
	}
	if !m.flat {
		m.echoDigest = make([][4]uint64, len(fields))
		m.echoHas = make([]bool, len(fields))
	}
	grp := make([]mergeItem, len(fields))
	for i := range grp {
		grp[i].i = int32(i)
	}
	newRoot, _, _ := m.node(root, grp, 0)
	if m.fallback {
		return updated{}, errInOrder
	}
	if m.err != nil {
		return updated{}, m.err
	}
	if err := CheckWriteLimit(w.WriteLimit, m.written, m.removed); err != nil {
		return updated{}, err
	}
	echo := m.echoNode
	if !m.flat {
		echo = m.echo()
	}
	return updated{Root: newRoot, Resolved: m.resolved, Echo: echo}, nil
}

// mergeable reports whether the fields are the parser's kind: none empty,
// ".priority" only as a field's last key, every key UTF-8 (the key order
// is only a total order on those; sorting relies on it).
func mergeable(w *Write, fields []Field) bool {
	if len(fields) > math.MaxInt32 {
		return false
	}
	for _, k := range w.Path {
		if k == ".priority" || !utf8.ValidString(k) {
			return false
		}
	}
	for _, f := range fields {
		if len(f.Path) == 0 {
			return false
		}
		for j, k := range f.Path {
			if (k == ".priority" && j != len(f.Path)-1) || !utf8.ValidString(k) {
				return false
			}
		}
	}
	return true
}

// fail records err for field i; the first field's error wins.
func (m *merger) fail(i int32, err error) {
	if int(i) < m.errAt {
		m.errAt, m.err = int(i), err
	}
}

// seg is field i's key at depth d >= m.base of its absolute path.
func (m *merger) seg(i int32, d int) string { return m.fields[i].Path[d-m.base] }

// depth is the length of field i's absolute path.
func (m *merger) depth(i int32) int { return m.base + len(m.fields[i].Path) }

// node returns what the fields in grp — every field whose path goes
// through or ends at this node, at depth d, whose value before the update
// is old — make of it, with the moments (field indices) at which it first
// became null (died) and first became non-null again (born); never for
// what does not happen. grp's keys are scratch space for the levels below.
func (m *merger) node(old *Node, grp []mergeItem, d int) (n *Node, died, born int) {
	if len(grp) == 1 && m.depth(grp[0].i) == d {
		return m.set(old, grp[0].i)
	}
	if d < m.base {
		// Above the update's path every field goes through one child.
		return m.object(old, grp, d, 1, -1, nil)
	}
	// Split off the priority field, if any, and key the others by their
	// child's key, in key order (often the order they came in).
	prio := int32(-1)
	for j := 0; j < len(grp); j++ {
		i := grp[j].i
		if m.depth(i) == d { // a field here and others below: overlap
			m.fallback = true
			return old, never, never
		}
		k := m.seg(i, d)
		if k == ".priority" {
			if prio >= 0 { // twice the same path
				m.fallback = true
				return old, never, never
			}
			prio = i
			last := len(grp) - 1
			grp[j], grp[last] = grp[last], grp[j]
			grp = grp[:last]
			j--
			continue
		}
		grp[j].ki = newKeyInfo(k)
	}
	if !slices.IsSortedFunc(grp, cmpMergeItem) {
		slices.SortFunc(grp, cmpMergeItem)
	}
	var p *Node
	if prio >= 0 {
		p = m.priority(old, prio)
	}
	runs := 0
	for j := range grp {
		if j == 0 || grp[j].ki.key != grp[j-1].ki.key {
			runs++
		}
	}
	return m.object(old, grp, d, runs, prio, p)
}

func cmpMergeItem(a, b mergeItem) int { return compareKeyInfo(&a.ki, &b.ki) }

// set applies field i, which replaces the node (old) at its path.
func (m *merger) set(old *Node, i int32) (*Node, int, int) {
	f := m.fields[i]
	if err := m.w.checkIncrements(f.Value, old); err != nil {
		m.fail(i, err)
		return old, never, never
	}
	v := resolve(f.Value, old, m.w.Now)
	m.written += v.Size()
	m.removed += old.Size()
	if m.sv {
		m.resolved[i] = Field{Path: f.Path, Value: v}
	}
	died, born := never, never
	switch {
	case old != nil && v == nil:
		died = int(i)
	case old == nil && v != nil:
		born = int(i)
	}
	return v, died, born
}

// priority resolves field i, which sets the priority of old's node, and
// returns the priority.
func (m *merger) priority(old *Node, i int32) *Node {
	f := m.fields[i]
	cur := old.Priority()
	if err := m.w.checkIncrements(f.Value, cur); err != nil {
		m.fail(i, err)
		return nil
	}
	v := resolve(f.Value, cur, m.w.Now)
	m.written += v.Size()
	m.removed += cur.Size()
	if err := checkPriority(v); err != nil {
		m.fail(i, err)
	}
	if m.sv {
		m.resolved[i] = Field{Path: f.Path, Value: v}
	}
	return v
}

// echo builds the update's echo: an object whose members are the fields'
// paths joined with "/" and their resolved values (nulls left out; of
// fields joined to the same name, the last one).
func (m *merger) echo() *Node {
	type member struct {
		ki keyInfo
		i  int32
	}
	members := make([]member, 0, len(m.resolved))
	for i, f := range m.resolved {
		if f.Value == nil {
			continue
		}
		key := f.Path[0]
		if len(f.Path) > 1 {
			key = joinPath(f.Path)
		}
		members = append(members, member{newKeyInfo(key), int32(i)})
	}
	if len(members) == 0 {
		return nil
	}
	cmp := func(a, b member) int {
		if c := compareKeyInfo(&a.ki, &b.ki); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	}
	if !slices.IsSortedFunc(members, cmp) {
		slices.SortFunc(members, cmp)
	}
	// A later field of the same name replaces an earlier one.
	last := func(j int) bool { return j+1 == len(members) || members[j+1].ki.key != members[j].ki.key }
	var (
		size  = int64(2)
		hasSV bool
	)
	children := newChildren()
	for j, mb := range members {
		if last(j) {
			v := m.resolved[mb.i].Value
			size += entrySize(mb.ki.key, v)
			hasSV = hasSV || v.hasSV
			children.Load(entry{key: mb.ki.key, node: v})
		}
	}
	// The digests the tree's merge computed already are reused.
	sum := parallelLanes(len(members), func(lo, hi int) [4]uint64 {
		var sum [4]uint64
		for j, mb := range members[lo:hi] {
			switch {
			case !last(lo + j):
			case m.echoHas[mb.i]:
				sum = addLanes(sum, m.echoDigest[mb.i])
			default:
				sum = addLanes(sum, entryDigest(mb.ki.key, m.resolved[mb.i].Value))
			}
		}
		return sum
	})
	return newObject(children, sum, size, nil, hasSV)
}

// UpdateInOrder is Update applying the fields one after the other: the
// definition of an Update, kept for the inputs mergeUpdate leaves to it
// (and as the reference its tests compare the merge with).
func UpdateInOrder(root *Node, w Write, fields []Field) (*Node, []Field, *Node, error) {
	u, err := updateInOrder(root, w, fields)
	return u.Root, u.Resolved, u.Echo, err
}

func updateInOrder(root *Node, w Write, fields []Field) (updated, error) {
	old := root
	echo := NewObjectBuilder()
	resolved := make([]Field, len(fields))
	var written, removed int64
	// The fields' paths never overlap but often share their parents: the
	// first field copies them, the others change those copies in place.
	mine := owned{}
	for i, f := range fields {
		abs := append(append(Path{}, w.Path...), f.Path...)
		cur := old.Get(abs)
		if abs.IsPriority() {
			cur = old.Get(abs.NodePath()).Priority()
		}
		if err := w.checkIncrements(f.Value, cur); err != nil {
			return updated{}, err
		}
		v := resolve(f.Value, cur, w.Now)
		written += v.Size()
		removed += cur.Size()
		var err error
		if root, err = setValue(root, abs, v, mine); err != nil {
			return updated{}, err
		}
		resolved[i] = Field{Path: f.Path, Value: v}
		echo.Set(joinPath(f.Path), v)
	}
	if err := CheckWriteLimit(w.WriteLimit, written, removed); err != nil {
		return updated{}, err
	}
	return updated{Root: root, Resolved: resolved, Echo: echo.Build(nil)}, nil
}

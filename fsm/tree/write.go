package tree

import (
	"errors"
	"math"
)

// Writing into an immutable tree: a value at a path (SetValue), server
// values resolved against the tree (Resolve), and a PATCH's fields
// (Update, merge.go). Every write copies only the nodes on its paths.

// Write is what a write needs besides the tree and the value: where it
// goes and the inputs its server values and limits depend on, fixed
// before the write is replicated so every replica computes the same tree.
type Write struct {
	// Path is the location written.
	Path Path
	// Now is the proposer's clock reading in milliseconds: what
	// {".sv":"timestamp"} becomes.
	Now int64
	// WriteLimit bounds the bytes written plus the bytes removed (0: none).
	WriteLimit int64
	// CheckIncrements refuses increments that would overflow to an
	// infinity (see CheckIncrements); false stores the delta.
	CheckIncrements bool
}

// CheckWriteLimit refuses a write of written bytes that removes removed
// bytes when their sum is over limit (0: no limit).
func CheckWriteLimit(limit, written, removed int64) error {
	if limit > 0 && written+removed > limit {
		return Public(ErrTooLarge, MsgWriteTooBig)
	}
	return nil
}

// NodePath is p without a trailing ".priority": the node whose priority
// p names, or p itself.
func (p Path) NodePath() Path {
	if p.IsPriority() {
		return p[:len(p)-1]
	}
	return p
}

// joinPath is p's keys joined with "/" (no leading slash).
func joinPath(p Path) string {
	s := p.String()
	return s[1:]
}

// SetValue returns root with v written at p, or, when p ends in
// ".priority", with v as the priority of the node above it (a priority
// must be a string, a number or null). Only the nodes along p are copied.
func SetValue(root *Node, p Path, v *Node) (*Node, error) {
	return setValue(root, p, v, nil)
}

func setValue(root *Node, p Path, v *Node, mine owned) (*Node, error) {
	if !p.IsPriority() {
		return setAt(root, p, v, mine), nil
	}
	if err := checkPriority(v); err != nil {
		return nil, err
	}
	np := p[:len(p)-1]
	cur := root.Get(np)
	if cur == nil {
		return root, nil
	}
	return setAt(root, np, cur.WithPriority(v), mine), nil
}

// checkPriority refuses a priority that is not a string, a number or null.
func checkPriority(v *Node) error {
	switch v.Kind() {
	case KindNull, KindString, KindInt, KindFloat:
		return nil
	}
	return Public(ErrInvalidData, "Invalid data; a priority must be a string, a number or null")
}

// owned holds the objects one entry created along the paths it wrote.
// Nothing else refers to them yet — not the state before the entry (which
// stays intact should the entry fail), not a result or an event — so the
// entry's later writes may change them in place instead of copying them
// again. It lives for one entry, and a nil owned changes nothing in place.
type owned map[*Node]struct{}

// setAt returns root with the node at p replaced by v, copying only the
// nodes along p (or changing them in place when mine owns them). Parents
// left without children disappear.
func setAt(root *Node, p Path, v *Node, mine owned) *Node {
	if len(p) == 0 {
		return v
	}
	child := root.Child(p[0])
	if mine == nil {
		nc := setAt(child, p[1:], v, nil)
		if nc == child {
			return root
		}
		return root.withChild(p[0], nc)
	}
	// The child may change in place below: note what it contributes to
	// root first.
	was := entryOf(p[0], child)
	_, changedInPlace := mine[child]
	nc := setAt(child, p[1:], v, mine)
	if nc == child && !changedInPlace {
		return root
	}
	if root.Kind() != KindObject { // null or a leaf: a new object (or as it was)
		m := root.withChild(p[0], nc)
		if m.Kind() == KindObject {
			mine[m] = struct{}{}
		}
		return m
	}
	_, rootMine := mine[root]
	m := root.replaceChild(p[0], was, nc, rootMine)
	if m != nil {
		mine[m] = struct{}{}
	}
	return m
}

// resolve replaces server-value placeholders in n: timestamps become now,
// increments add to the number currently at the same place (cur).
func resolve(n, cur *Node, now int64) *Node { return resolveSV(n, cur, now, true) }

// ResolveTimestamps replaces the {".sv":"timestamp"} placeholders in n
// (values and priorities) with now, leaving increments, which depend on
// the tree, as they are: Resolve of the result against any cur is
// Resolve of n. A proposer does it for a large write before logging it,
// so that the value no longer depends on its entry's clock, which travels
// after the body (fsm/chunkprep.go).
func ResolveTimestamps(n *Node, now int64) *Node { return resolveSV(n, nil, now, false) }

// resolveSV is resolve, leaving increments as they are unless increments.
func resolveSV(n, cur *Node, now int64, increments bool) *Node {
	if n == nil || !n.hasSV {
		return n
	}
	prio := n.prio
	if prio != nil && prio.kind == KindTimestamp {
		prio = Int(now)
	}
	switch n.kind {
	case KindTimestamp:
		return Int(now).WithPriority(prio)
	case KindIncrement:
		if !increments && prio == n.prio {
			return n
		}
		if !increments {
			return n.WithPriority(prio)
		}
		return increment(cur, n.IncrementDelta()).WithPriority(prio)
	case KindObject:
		b := NewObjectBuilder()
		n.Each(func(k string, c *Node) bool {
			b.Set(k, resolveSV(c, cur.Child(k), now, increments))
			return true
		})
		return b.Build(prio)
	}
	return n.WithPriority(prio)
}

// Resolve replaces the server-value placeholders in n, the value written
// where cur is: timestamps become now, increments add to the number at
// the same place in cur.
func Resolve(n, cur *Node, now int64) *Node { return resolve(n, cur, now) }

// msgIncrementOverflow is the 400 of an increment whose double result
// would be infinite.
const msgIncrementOverflow = "Invalid data; increment overflows the range of a double"

// CheckIncrements refuses a value whose increments would overflow to an
// infinity when resolved against cur (Firebase cannot store one either).
// fsm checks every write (Write.CheckIncrements); tree's own callers may
// store the delta instead.
func CheckIncrements(n, cur *Node) error {
	if incrementOverflows(n, cur) {
		return Public(ErrInvalidData, msgIncrementOverflow)
	}
	return nil
}

// checkIncrements is CheckIncrements when w asks for it.
func (w *Write) checkIncrements(n, cur *Node) error {
	if !w.CheckIncrements {
		return nil
	}
	return CheckIncrements(n, cur)
}

// incrementOverflows reports whether resolving n against cur would add
// doubles to an infinity.
func incrementOverflows(n, cur *Node) bool {
	if n == nil || !n.hasSV {
		return false
	}
	switch n.kind {
	case KindIncrement:
		x, okx := cur.Number()
		y, _ := n.IncrementDelta().Number()
		return okx && (cur.Kind() == KindFloat || n.b) && math.IsInf(x+y, 0)
	case KindObject:
		over := false
		n.Each(func(k string, c *Node) bool {
			over = incrementOverflows(c, cur.Child(k))
			return !over
		})
		return over
	}
	return false
}

// increment adds delta to cur following Firebase: a missing or non-numeric
// current value is replaced by delta; int+int stays an int unless it
// overflows; anything involving a double is a double.
func increment(cur, delta *Node) *Node {
	switch {
	case cur.Kind() == KindInt && delta.Kind() == KindInt:
		a, b := cur.i, delta.i
		sum := a + b
		if (b > 0 && sum < a) || (b < 0 && sum > a) {
			return Float(float64(a) + float64(b))
		}
		return Int(sum)
	case cur.Kind() == KindInt || cur.Kind() == KindFloat:
		x, _ := cur.Number()
		y, _ := delta.Number()
		f := x + y
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return delta
		}
		return Float(f)
	}
	if delta.Kind() == KindInt {
		return Int(delta.i)
	}
	return Float(delta.float())
}

// Update returns root with the fields of a PATCH at w.Path written as if
// one after the other, the fields with their server values resolved, and
// the update's echo (an object of the fields' paths joined with "/" and
// their values). It builds the tree in one pass (merge.go); the few
// inputs the merge cannot take are applied field by field (UpdateInOrder).
func Update(root *Node, w Write, fields []Field) (*Node, []Field, *Node, error) {
	u, err := mergeUpdate(root, &w, fields)
	if errors.Is(err, errInOrder) {
		u, err = updateInOrder(root, w, fields)
	}
	return u.Root, u.Resolved, u.Echo, err
}

// updated is what an Update made.
type updated struct {
	// Root, Resolved and Echo are Update's results.
	Root     *Node
	Resolved []Field
	Echo     *Node
}

package fsm

import (
	"errors"
	"fmt"
	"math"
)

// applyEntry computes the state after one command entry. It never panics on
// bad input: an entry that cannot be decoded or applied leaves the state as
// it was and returns the error to the proposer.
func applyEntry(s *state, data []byte) (*state, Result, []Event, error) {
	cmd, err := DecodeCommand(data)
	if err != nil {
		return s.clone(), Result{}, nil, err
	}
	return applyCommand(s, &cmd)
}

// applyCommand applies a decoded command; one made with an Access (CmdAs)
// only if the rules in force allow it.
func applyCommand(s *state, cmd *Command) (*state, Result, []Event, error) {
	next := s.clone()
	res, events, err := applyKind(next, cmd)
	if cmd.As != nil && cmd.Kind != CmdSetRules {
		var perr *PreconditionError
		switch {
		case errors.As(err, &perr):
			err = judgePrecondition(s, cmd, err)
		case err == nil:
			err = judgeWrite(s, next, cmd, res)
		}
	}
	if err != nil {
		return s.clone(), Result{}, nil, err
	}
	next.indexes = indexesAfter(s, next, cmd, res)
	return next, res, events, nil
}

// applyKind carries out cmd on s in place.
func applyKind(s *state, cmd *Command) (Result, []Event, error) {
	switch cmd.Kind {
	case CmdSet:
		return applySet(s, cmd)
	case CmdUpdate:
		return applyUpdate(s, cmd)
	case CmdPush:
		return applyPush(s, cmd)
	case CmdSetRules:
		return applySetRules(s, cmd)
	}
	return Result{}, nil, fmt.Errorf("apply: command kind %d: %w", cmd.Kind, ErrUnsupportedVersion)
}

func (s *state) clone() *state { c := *s; return &c }

// nodePath strips a trailing ".priority" from p.
func nodePath(p Path) Path {
	if p.IsPriority() {
		return p[:len(p)-1]
	}
	return p
}

// bodyValue is a Set's or Push's value: parsed already (entry format 2),
// or parsed now from the JSON text with depth levels allowed (format 1;
// nil or "null" is null).
func (c *Command) bodyValue(depth int) (*Node, error) {
	if c.Parsed {
		return c.Value, nil
	}
	if len(c.Body) == 0 {
		return nil, nil
	}
	return ParseBody(c.Body, depth)
}

// bodyFields is an Update's fields, parsed already or parsed now; nil
// for a null body.
func (c *Command) bodyFields() ([]Field, error) {
	if c.Parsed {
		return c.Fields, nil
	}
	if len(c.Body) == 0 || string(c.Body) == "null" {
		return nil, nil
	}
	return ParseUpdate(c.Body, MaxDepth-len(c.Path))
}

func checkIfMatch(root *Node, c *Command) error {
	if !c.HasIfMatch {
		return nil
	}
	cur := root.Get(nodePath(c.Path))
	if cur.ETag() != c.IfMatch {
		return &PreconditionError{Current: cur}
	}
	return nil
}

func checkWriteLimit(limit, written, removed int64) error {
	if limit > 0 && written+removed > limit {
		return Public(ErrTooLarge, MsgWriteTooBig)
	}
	return nil
}

func applySet(s *state, c *Command) (Result, []Event, error) {
	v, err := c.bodyValue(MaxDepth - len(nodePath(c.Path)))
	if err != nil {
		return Result{}, nil, err
	}
	if err := checkIfMatch(s.root, c); err != nil {
		return Result{}, nil, err
	}
	cur := s.root.Get(c.Path)
	if c.Path.IsPriority() {
		cur = s.root.Get(nodePath(c.Path)).Priority()
	}
	if err := checkIncrements(c, v, cur); err != nil {
		return Result{}, nil, err
	}
	v = resolve(v, cur, c.Now)
	if err := checkWriteLimit(c.WriteLimit, v.Size(), cur.Size()); err != nil {
		return Result{}, nil, err
	}
	root, err := setValue(s.root, c.Path, v, nil)
	if err != nil {
		return Result{}, nil, err
	}
	s.root = root
	np := nodePath(c.Path)
	after := root.Get(np)
	ev := Event{Kind: EventPut, Path: np, Value: after}
	if !c.Path.IsPriority() {
		ev.Value = v
	}
	return Result{Value: v, ETag: after.ETag()}, []Event{ev}, nil
}

func applyUpdate(s *state, c *Command) (Result, []Event, error) {
	return updateWith(s, c, mergeOrInOrder)
}

// updateWith applies the Update c, computing its tree with update.
func updateWith(s *state, c *Command, update func(*state, *Command, []Field) (*Node, []Field, *Node, error)) (Result, []Event, error) {
	fields, err := c.bodyFields()
	if err != nil {
		return Result{}, nil, err
	}
	if fields == nil {
		set := *c
		set.Body, set.Parsed, set.Value = nil, true, nil
		return applySet(s, &set)
	}
	if err := checkIfMatch(s.root, c); err != nil {
		return Result{}, nil, err
	}
	root, resolved, echo, err := update(s, c, fields)
	if err != nil {
		return Result{}, nil, err
	}
	s.root = root
	ev := Event{Kind: EventPatch, Path: c.Path, Fields: resolved}
	return Result{Value: echo, Fields: resolved, ETag: root.Get(c.Path).ETag()}, []Event{ev}, nil
}

// mergeOrInOrder builds an Update's tree in one pass (merge.go); the few
// inputs mergeUpdate cannot take are applied field by field.
func mergeOrInOrder(s *state, c *Command, fields []Field) (*Node, []Field, *Node, error) {
	root, resolved, echo, err := mergeUpdate(s.root, c, fields)
	if errors.Is(err, errInOrder) {
		return updateInOrder(s, c, fields)
	}
	return root, resolved, echo, err
}

func joinPath(p Path) string {
	s := p.String()
	return s[1:]
}

func applyPush(s *state, c *Command) (Result, []Event, error) {
	if c.Path.IsPriority() {
		return Result{}, nil, Public(ErrInvalidPath, MsgInvalidToken)
	}
	if len(c.Path)+1 > MaxDepth {
		return Result{}, nil, Public(ErrInvalidPath, MsgPathTooLong)
	}
	v, err := c.bodyValue(MaxDepth - len(c.Path) - 1)
	if err != nil {
		return Result{}, nil, err
	}
	v = resolve(v, nil, c.Now)
	if err := checkWriteLimit(c.WriteLimit, v.Size(), 0); err != nil {
		return Result{}, nil, err
	}
	key := nextPushKey(s, c.Now, c.Rand)
	p := c.Path.Child(key)
	s.root = setAt(s.root, p, v, nil)
	return Result{Value: v, Name: key, ETag: v.ETag()}, []Event{{Kind: EventPut, Path: p, Value: v}}, nil
}

// setValue writes v at p, or, when p ends in ".priority", sets the priority
// of the node above it. Objects in mine may be changed in place.
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
func resolve(n, cur *Node, now int64) *Node {
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
		return increment(cur, n.incDelta()).WithPriority(prio)
	case KindObject:
		b := newObjectBuilder()
		n.Each(func(k string, c *Node) bool {
			b.set(k, resolve(c, cur.Child(k), now))
			return true
		})
		return b.build(prio)
	}
	return n.WithPriority(prio)
}

// msgIncrementOverflow is the 400 of an increment whose double result
// would be infinite.
const msgIncrementOverflow = "Invalid data; increment overflows the range of a double"

// checkIncrements refuses a value whose increments would overflow to an
// infinity (Firebase cannot store one either). Only entries of format 2
// are checked: format 1 entries keep the result they always had (the
// delta is stored), so a log replayed by a newer release gives the same
// state.
func checkIncrements(c *Command, n, cur *Node) error {
	if c.Parsed && incrementOverflows(n, cur) {
		return Public(ErrInvalidData, msgIncrementOverflow)
	}
	return nil
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
		y, _ := n.incDelta().Number()
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
	return Float(delta.f)
}

const pushChars = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// nextPushKey derives the next push key from the proposer's clock and
// random digits. Keys strictly increase in commit order on every replica:
// when the clock has not moved past the last key's time (same millisecond,
// clock skew between leaders), the last key's random part is incremented.
func nextPushKey(s *state, now int64, rnd [12]byte) string {
	if now <= s.lastPushTime {
		i := 11
		for i >= 0 && s.lastRand[i] == 63 {
			s.lastRand[i] = 0
			i--
		}
		if i >= 0 {
			s.lastRand[i]++
		} else {
			// All 72 bits overflowed: move to the next millisecond instead.
			s.lastPushTime++
			for j := range rnd {
				s.lastRand[j] = rnd[j] & 63
			}
		}
	} else {
		s.lastPushTime = now
		for j := range rnd {
			s.lastRand[j] = rnd[j] & 63
		}
	}
	var key [20]byte
	t := s.lastPushTime
	for i := 7; i >= 0; i-- {
		key[i] = pushChars[t&63]
		t >>= 6
	}
	for i, d := range s.lastRand {
		key[8+i] = pushChars[d]
	}
	return string(key[:])
}

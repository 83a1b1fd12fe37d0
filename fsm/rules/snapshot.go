package rules

import "strings"

// snap is a RuleDataSnapshot: a node of one of the trees (root or newRoot)
// and enough to find its location again. child() records only its receiver
// and argument, since most snapshots are consumed at once by val() or
// exists(); the full path is rebuilt only when parent() needs it.
type snap struct {
	tree   Value    // the whole tree the snapshot belongs to
	node   Value    // the node at the snapshot's location
	up     *snap    // the snapshot child() was called on; nil for a base
	rel    string   // child()'s argument, relative to up
	base   []string // a base snapshot's path; never appended to in place
	orphan bool     // above the root: null, and so are its relatives
}

// maxChildPath bounds a child() argument; it is far beyond any real key
// path (32 levels of 768 bytes) and stops a runaway concatenation early.
const maxChildPath = 32 * 769

// walk resolves a slash-separated relative path from node. Empty segments
// are ignored, as in database paths; an invalid key is an error.
func walk(node Value, rel string, ev *evaluator) (Value, error) {
	if len(rel) > maxChildPath {
		return nil, errRuntime
	}
	if err := ev.charge(len(rel) / 64); err != nil {
		return nil, err
	}
	for rest := rel; rest != ""; {
		seg := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if seg == "" {
			continue
		}
		if !validKey(seg) {
			return nil, errRuntime
		}
		node = childOf(node, seg)
	}
	return node, nil
}

// child is child(rel).
func (s *snap) child(rel string, ev *evaluator) (*snap, error) {
	n, err := walk(s.node, rel, ev)
	if err != nil {
		return nil, err
	}
	return &snap{tree: s.tree, node: n, up: s, rel: rel, orphan: s.orphan}, nil
}

// path is the snapshot's location. The result may share storage with other
// snapshots: callers copy before appending.
func (s *snap) path() []string {
	if s.up == nil {
		return s.base[:len(s.base):len(s.base)]
	}
	p := s.up.path()
	for seg := range strings.SplitSeq(s.rel, "/") {
		if seg != "" {
			p = append(p, seg)
		}
	}
	return p[:len(p):len(p)]
}

// parent walks down from the tree's root, since Values have no parent
// links. The parent of the root is an orphan: null, and its children too.
func (s *snap) parent(ev *evaluator) (*snap, error) {
	if s.orphan {
		return s, nil
	}
	p := s.path()
	if len(p) == 0 {
		return &snap{tree: s.tree, node: nullValue{}, orphan: true}, nil
	}
	up := p[: len(p)-1 : len(p)-1]
	if err := ev.charge(1 + len(p)); err != nil {
		return nil, err
	}
	n := s.tree
	for _, k := range up {
		n = childOf(n, k)
	}
	return &snap{tree: s.tree, node: n, base: up}, nil
}

// priority is getPriority(): null, a number or a string.
func (s *snap) priority() val {
	p := orNull(s.node.Priority())
	switch p.Kind() {
	case Number:
		return numVal(p.Number())
	case String:
		return strVal(p.Str())
	}
	return val{}
}

// snapCall evaluates a snapshot method.
func (ev *evaluator) snapCall(s *snap, n *node) (val, error) {
	switch n.method {
	case mVal:
		return fromNode(s.node), nil
	case mChild:
		p, err := ev.strArg(n.kids[1])
		if err != nil {
			return val{}, err
		}
		c, err := s.child(p, ev)
		return snapVal(c), err
	case mHasChild:
		p, err := ev.strArg(n.kids[1])
		if err != nil {
			return val{}, err
		}
		c, err := walk(s.node, p, ev)
		if err != nil {
			return val{}, err
		}
		return boolVal(c.Kind() != Null), nil
	case mParent:
		p, err := s.parent(ev)
		if err != nil {
			return val{}, err
		}
		return snapVal(p), nil
	case mHasChildren:
		if s.node.Kind() != Object {
			return boolVal(false), nil
		}
		if len(n.kids) == 1 {
			return boolVal(s.node.Len() > 0), nil
		}
		ok, err := ev.hasAll(s.node, n.kids[1])
		return boolVal(ok), err
	case mExists:
		return boolVal(s.node.Kind() != Null), nil
	case mGetPriority:
		return s.priority(), nil
	case mIsNumber:
		return boolVal(s.node.Kind() == Number), nil
	case mIsString:
		return boolVal(s.node.Kind() == String), nil
	case mIsBoolean:
		return boolVal(s.node.Kind() == Bool), nil
	}
	return val{}, errRuntime
}

// hasAll is hasChildren(keys) on an object node: keys is an array literal
// of strings or an array of strings from auth, and every key must exist.
func (ev *evaluator) hasAll(node Value, keys *node) (bool, error) {
	has := func(k string) (bool, error) {
		c, err := walk(node, k, ev)
		return err == nil && c.Kind() != Null, err
	}
	if keys.op == opArray {
		for _, k := range keys.kids {
			s, err := ev.strArg(k)
			if err != nil {
				return false, err
			}
			if ok, err := has(s); !ok {
				return false, err
			}
		}
		return true, nil
	}
	v, err := ev.eval(keys)
	if err != nil {
		return false, err
	}
	if v.k != vArr {
		return false, errRuntime
	}
	for _, x := range v.a {
		s, isStr := x.(string)
		if !isStr {
			return false, errRuntime
		}
		if err := ev.charge(1); err != nil {
			return false, err
		}
		if ok, err := has(s); !ok {
			return false, err
		}
	}
	return true, nil
}

package rules

// CanRead reports whether a client may read path: some .read rule on the
// way from the root to path (inclusive) must hold. A grant cannot be
// revoked further down, and rules below path do not help (rules are not
// filters).
func (r *Ruleset) CanRead(path []string, env *Env) bool {
	ev := newEvaluator(env)
	defer ev.release()
	rn, node := r.root, ev.root
	for i := 0; ; i++ {
		if rn.read != nil {
			ev.at(path[:i], node, nil)
			ok, err := ev.holds(rn.read)
			if err != nil {
				return false
			}
			if ok {
				return true
			}
		}
		if i == len(path) {
			return false
		}
		if rn = rn.match(path[i]); rn == nil {
			return false
		}
		node = childOf(node, path[i])
	}
}

// CanWrite judges a write whose changes all lie at or below the given paths
// (one for PUT, POST and DELETE; one per field of a multi-path PATCH). Every
// path must be granted by a .write rule at or above it, and every .validate
// rule must hold at each changed node whose new value is not null: the
// ancestors of the paths (each judged once however many paths share it),
// the paths themselves, and the changed nodes below them, where subtrees
// whose old and new values are Same are skipped. A write with no paths is
// denied.
func (r *Ruleset) CanWrite(paths [][]string, env *Env) bool {
	ok, ev := r.canWrite(paths, env)
	ev.release()
	return ok
}

// canWrite is CanWrite that also returns the evaluator, so tests can see
// how much work a judgement took.
func (r *Ruleset) canWrite(paths [][]string, env *Env) (bool, *evaluator) {
	if len(paths) == 0 {
		return false, newEvaluator(env)
	}
	return r.canWriteTrie(newWriteTrie(paths), len(paths), env)
}

func (r *Ruleset) canWriteTrie(trie *writeNode, paths int, env *Env) (bool, *evaluator) {
	ev := newEvaluator(env)
	ev.budget += perNodeBudget * paths
	w := &writeJudge{ev: ev}
	w.path = w.buf[:0]
	return w.judge(trie, r.root, 0, ev.root, ev.newRoot, false), ev
}

// writeNode is a node of the trie of written paths. Walking the trie rather
// than each path lets ancestors shared by many paths be judged once.
type writeNode struct {
	key     string
	kids    []*writeNode
	byKey   map[string]*writeNode // built once kids outgrow a linear scan
	written bool                  // a written path ends here
}

// writeTrie holds the trie's nodes in one allocation (newWriteTrie).
type writeTrie struct {
	nodes []writeNode
	root  *writeNode
}

// newWriteTrie builds the trie of paths and returns its root.
func newWriteTrie(paths [][]string) *writeNode {
	if len(paths) == 1 {
		return writeChain(paths[0])
	}
	n := 1
	for _, p := range paths {
		n += len(p)
	}
	t := &writeTrie{nodes: make([]writeNode, 1, n)}
	t.root = &t.nodes[0]
	// The node where the paths part (a PATCH's own node, for its fields)
	// may get a child per path: its map is made that large at once, as
	// growing it to a million keys cost more than filling it.
	common := paths[0]
	for _, p := range paths[1:] {
		common = common[:commonPrefix(common, p)]
	}
	if len(paths) > 64 {
		w := t.root
		for _, k := range common {
			w = t.child(w, k)
		}
		w.byKey = make(map[string]*writeNode, len(paths))
		for _, x := range w.kids {
			w.byKey[x.key] = x
		}
	}
	for _, p := range paths {
		t.insert(p)
	}
	return t.root
}

// commonPrefix is the number of leading keys a and b share.
func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// writeChain is the trie of one path, the judgement of every PUT, POST
// and DELETE: a chain whose nodes and child lists share two allocations,
// where inserting would make one per level.
func writeChain(path []string) *writeNode {
	nodes := make([]writeNode, len(path)+1)
	kids := make([]*writeNode, len(path))
	for i, k := range path {
		nodes[i+1].key = k
		kids[i] = &nodes[i+1]
		nodes[i].kids = kids[i : i+1 : i+1]
	}
	nodes[len(path)].written = true
	return &nodes[0]
}

// insert adds path to the trie.
func (t *writeTrie) insert(path []string) {
	w := t.root
	for _, k := range path {
		if w.written {
			return // an ancestor is written whole; it covers this path
		}
		w = t.child(w, k)
	}
	w.written = true
	w.kids, w.byKey = nil, nil
}

// child finds or adds w's child k. The node slice is made large enough
// for every path's keys and never grows, so pointers into it stay valid.
func (t *writeTrie) child(w *writeNode, k string) *writeNode {
	if w.byKey != nil {
		if c, ok := w.byKey[k]; ok {
			return c
		}
	} else {
		for _, c := range w.kids {
			if c.key == k {
				return c
			}
		}
	}
	t.nodes = append(t.nodes, writeNode{key: k})
	c := &t.nodes[len(t.nodes)-1]
	w.kids = append(w.kids, c)
	if w.byKey == nil && len(w.kids) > 8 {
		w.byKey = make(map[string]*writeNode, 2*len(w.kids))
		for _, x := range w.kids {
			w.byKey[x.key] = x
		}
	} else if w.byKey != nil {
		w.byKey[k] = c
	}
	return c
}

// writeJudge walks the write trie alongside the rule tree and the old and
// new data.
type writeJudge struct {
	ev *evaluator
	// path holds the current location; path[:depth] is it. Rules see it
	// only while evaluated there, so one buffer serves the whole walk.
	path []string
	// buf is path's first storage, enough for most writes' depth: growing
	// path from nothing cost a few allocations per judgement.
	buf [8]string
}

// enter makes path[:depth+1] the location of child key.
func (w *writeJudge) enter(depth int, key string) {
	w.path = append(w.path[:depth], key)
}

// judge handles trie node t at path[:depth], matched by rule node rn (nil when no
// rule matches), with the data before and after the write. granted says a
// .write above has already allowed the write.
func (w *writeJudge) judge(t *writeNode, rn *ruleNode, depth int, old, new Value, granted bool) bool {
	loc := w.path[:depth:depth]
	if rn == nil && !granted {
		return false // no rule at or below can grant this
	}
	if !granted && rn.write != nil {
		w.ev.at(loc, old, new)
		ok, err := w.ev.holds(rn.write)
		if err != nil {
			return false
		}
		granted = ok
	}
	if t.written {
		return granted && w.validate(rn, depth, old, new, true)
	}
	// An ancestor of written paths: its new value changed too.
	if rn != nil && rn.validate != nil && new.Kind() != Null {
		w.ev.at(loc, old, new)
		if ok, _ := w.ev.holds(rn.validate); !ok {
			return false
		}
	}
	for _, c := range t.kids {
		var crn *ruleNode
		if rn != nil {
			crn = rn.match(c.key)
		}
		if crn == nil && granted {
			// Granted, and no rule at or below: nothing there to check
			// (a million written keys without rules of their own cost
			// two data lookups each otherwise).
			continue
		}
		w.enter(depth, c.key)
		if !w.judge(c, crn, depth+1, childOf(old, c.key), childOf(new, c.key), granted) {
			return false
		}
	}
	return true
}

// validate checks the .validate rules of the written node at depth and of
// its changed descendants. Nodes whose new value is null are not validated,
// and below the written node, subtrees that did not change are skipped.
func (w *writeJudge) validate(rn *ruleNode, depth int, old, new Value, top bool) bool {
	if rn == nil || !rn.validateBelow || new.Kind() == Null {
		return true
	}
	if !top && new.Same(old) {
		return true
	}
	if rn.validate != nil {
		// Each judged node brings its own allowance, so a large write is
		// not denied for its size alone.
		w.ev.budget += perNodeBudget
		w.ev.at(w.path[:depth:depth], old, new)
		if ok, _ := w.ev.holds(rn.validate); !ok {
			return false
		}
	}
	if new.Kind() != Object {
		return true
	}
	descend := func(k string, crn *ruleNode, nc Value) bool {
		if crn == nil || !crn.validateBelow {
			return true
		}
		w.enter(depth, k)
		return w.validate(crn, depth+1, childOf(old, k), nc, false)
	}
	if rn.wild == nil {
		// Only named children can have rules: visit them, not the data.
		for _, k := range rn.names {
			if !descend(k, rn.byName[k], childOf(new, k)) {
				return false
			}
		}
		return true
	}
	ok := true
	new.Each(func(k string, nc Value) bool {
		ok = descend(k, rn.match(k), orNull(nc))
		return ok
	})
	return ok
}

package fsm

import (
	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// dryRun is what judging a write without applying it found.
type dryRun struct {
	// allowed: the rules in force certainly allow the write.
	allowed bool
	// anyData: the allowed verdict holds whatever the stored data is,
	// whenever it is judged under the same rules — the rules read only
	// the written value, the path's $variables and auth, not `now`, and
	// no stored node (its value, kind, children or priority) decided
	// anything. Apply may then take the verdict instead of judging again
	// (Command.Prejudged).
	anyData bool
}

// judgeWithoutApply judges c by the rules in force in s without applying
// c to a copy of s. It answers only for a plain Set (a PUT or DELETE of a
// value without server values, at a node rather than a priority, without
// if-match), whose new tree is the old one with the value at the path: the
// judge sees that tree through setOverlay. Whenever the rules read
// something of the new tree that only applying c would tell — newData at
// or above an ancestor of the path, other than walking down to a child —
// the answer is not allowed, and the caller judges the applied write as
// before. When allowed, the judgement is the one applying c would have
// given: the rules read the same old data, the same new values at and
// below the path, the same siblings, and make the same choices, so their
// budget is spent alike.
//
// FSM.Judge uses it: a receiving node judges every write before proposing
// it, and copying the tree to apply the write there cost about as much as
// the judgement itself.
func judgeWithoutApply(s *state, c *Command) dryRun {
	if c.Kind != CmdSet || !c.Parsed || c.HasIfMatch || c.Path.IsPriority() || c.Value.HasServerValues() {
		return dryRun{}
	}
	probe := &overlayProbe{}
	env := c.As.env(s, c.Now)
	env.Root = probe.watch(s.root)
	env.NowRead = &probe.now
	if len(c.Path) == 0 {
		env.NewRoot = ruleValue(c.Value)
	} else {
		env.NewRoot = &setOverlay{old: s.root, rest: c.Path, v: c.Value, probe: probe}
	}
	ok := s.rulesFor(c.As).CanWrite([][]string{c.Path}, env) && !probe.read
	return dryRun{allowed: ok, anyData: ok && !probe.stored && !probe.now}
}

// overlayProbe records what a dry run's rules looked at.
type overlayProbe struct {
	// read: the new tree where a setOverlay cannot answer without
	// applying the write.
	read bool
	// stored: a stored node decided something (storedValue).
	stored bool
	// now: the rules read `now`.
	now bool
	// arena holds the first storedValues handed out, so that watching
	// the stored data costs no allocation on a usual write's walk.
	arena [8]storedValue
	used  int
}

// watch returns n as a storedValue reporting to p.
func (p *overlayProbe) watch(n *tree.Node) *storedValue {
	if p.used == len(p.arena) {
		return &storedValue{n: n, probe: p}
	}
	v := &p.arena[p.used]
	p.used++
	*v = storedValue{n: n, probe: p}
	return v
}

// setOverlay is a node on the path to a Set's written node, in the tree as
// it would be after the Set: its children off the path are the old ones
// (applying a Set shares them), the child on the path is the next overlay
// or, at the end, the value set. Anything else about the node — its kind,
// its children as a whole, its priority — depends on how the Set reshapes
// it (a deleted only child removes its parent, a value below a leaf turns
// the leaf into an object), so asking for it marks the probe and answers
// as if null.
type setOverlay struct {
	old   *tree.Node // this node before the Set; nil when missing
	rest  []string   // keys from this node to the written node; never empty
	v     *tree.Node // the value set; nil for null
	probe *overlayProbe
}

// unknown marks the probe: the judgement cannot be trusted.
func (o *setOverlay) unknown() { o.probe.read = true }

// Child implements rules.Value: exact, as the Set would leave it.
func (o *setOverlay) Child(key string) rules.Value {
	if key != o.rest[0] {
		return o.probe.watch(o.old.Child(key))
	}
	if len(o.rest) == 1 {
		return ruleValue(o.v)
	}
	return &setOverlay{old: o.old.Child(key), rest: o.rest[1:], v: o.v, probe: o.probe}
}

// Kind implements rules.Value; unknown here.
func (o *setOverlay) Kind() rules.Kind { o.unknown(); return rules.Null }

// Bool implements rules.Value; unknown here.
func (o *setOverlay) Bool() bool { o.unknown(); return false }

// Number implements rules.Value; unknown here.
func (o *setOverlay) Number() float64 { o.unknown(); return 0 }

// Str implements rules.Value; unknown here.
func (o *setOverlay) Str() string { o.unknown(); return "" }

// Len implements rules.Value; unknown here.
func (o *setOverlay) Len() int { o.unknown(); return 0 }

// Each implements rules.Value; unknown here.
func (o *setOverlay) Each(func(string, rules.Value) bool) { o.unknown() }

// Priority implements rules.Value; unknown here.
func (o *setOverlay) Priority() rules.Value { o.unknown(); return ruleValue(nil) }

// Same implements rules.Value; unknown here.
func (o *setOverlay) Same(rules.Value) bool { o.unknown(); return false }

// storedValue shows a stored node (the data before the write, or a
// sibling the write leaves alone) to a dry run's rules, answering exactly
// as ruleValue does while marking the probe whenever the node's content
// decides anything. Walking to a child decides nothing by itself; what
// the rules then ask of it does. A judge's Same check that finds a
// written subtree unchanged also depends on the stored data (it skips
// validation there), and ruleNode.Same marks it; one that finds it
// changed validates, which the stored data cannot undo.
type storedValue struct {
	n     *tree.Node
	probe *overlayProbe
}

func (v *storedValue) seen() rules.Value { v.probe.stored = true; return ruleValue(v.n) }

// Child implements rules.Value: the child, still watched.
func (v *storedValue) Child(key string) rules.Value { return v.probe.watch(v.n.Child(key)) }

// Kind implements rules.Value.
func (v *storedValue) Kind() rules.Kind { return v.seen().Kind() }

// Bool implements rules.Value.
func (v *storedValue) Bool() bool { return v.seen().Bool() }

// Number implements rules.Value.
func (v *storedValue) Number() float64 { return v.seen().Number() }

// Str implements rules.Value.
func (v *storedValue) Str() string { return v.seen().Str() }

// Len implements rules.Value.
func (v *storedValue) Len() int { return v.seen().Len() }

// Each implements rules.Value.
func (v *storedValue) Each(fn func(string, rules.Value) bool) { v.seen().Each(fn) }

// Priority implements rules.Value.
func (v *storedValue) Priority() rules.Value { return v.seen().Priority() }

// Same implements rules.Value.
func (v *storedValue) Same(o rules.Value) bool { return v.seen().Same(o) }

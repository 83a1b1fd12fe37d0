package fsm

import (
	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// allowedWithoutApply reports whether the rules in force in s certainly
// allow c, judged without applying c to a copy of s. It answers only for
// a plain Set (a PUT or DELETE of a value without server values, at a node
// rather than a priority, without if-match), whose new tree is the old one
// with the value at the path: the judge sees that tree through setOverlay.
// Whenever the rules read something of the new tree that only applying c
// would tell — newData at or above an ancestor of the path, other than
// walking down to a child — the answer is false, and the caller judges the
// applied write as before. When it is true, the judgement is the one
// applying c would have given: the rules read the same old data, the same
// new values at and below the path, the same siblings, and make the same
// choices, so their budget is spent alike.
//
// FSM.Judge uses it: a receiving node judges every write before proposing
// it, and copying the tree to apply the write there cost about as much as
// the judgement itself.
func allowedWithoutApply(s *state, c *Command) bool {
	if c.Kind != CmdSet || !c.Parsed || c.HasIfMatch || c.Path.IsPriority() || c.Value.HasServerValues() {
		return false
	}
	probe := &overlayProbe{}
	env := c.As.env(s, c.Now)
	if len(c.Path) == 0 {
		env.NewRoot = ruleValue(c.Value)
	} else {
		env.NewRoot = &setOverlay{old: s.root, rest: c.Path, v: c.Value, probe: probe}
	}
	ok := s.rulesFor(c.As).CanWrite([][]string{c.Path}, env)
	return ok && !probe.read
}

// overlayProbe records that the rules read the new tree where a
// setOverlay cannot answer without applying the write.
type overlayProbe struct{ read bool }

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
		return ruleValue(o.old.Child(key))
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

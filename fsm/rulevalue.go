package fsm

import (
	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// ruleNode shows a *tree.Node to the rules evaluator. It is the same pointer
// under another type, so handing a tree to the rules allocates nothing;
// a nil *ruleNode is null.
type ruleNode tree.Node

// ruleValue returns n as the rules see it.
func ruleValue(n *tree.Node) rules.Value { return (*ruleNode)(n) }

// RuleValue returns n as the rules see it when they judge: for callers
// that evaluate rules themselves, such as the rules playground.
func RuleValue(n *tree.Node) rules.Value { return ruleValue(n) }

func (r *ruleNode) node() *tree.Node { return (*tree.Node)(r) }

// Kind implements rules.Value.
func (r *ruleNode) Kind() rules.Kind {
	switch r.node().Kind() {
	case tree.KindBool:
		return rules.Bool
	case tree.KindInt, tree.KindFloat:
		return rules.Number
	case tree.KindString:
		return rules.String
	case tree.KindObject:
		return rules.Object
	}
	return rules.Null
}

// Bool implements rules.Value.
func (r *ruleNode) Bool() bool { return r.node().Kind() == tree.KindBool && r.node().BoolValue() }

// Number implements rules.Value.
func (r *ruleNode) Number() float64 { f, _ := r.node().Number(); return f }

// Str implements rules.Value.
func (r *ruleNode) Str() string {
	if r.node().Kind() != tree.KindString {
		return ""
	}
	return r.node().StringValue()
}

// Child implements rules.Value.
func (r *ruleNode) Child(key string) rules.Value { return ruleValue(r.node().Child(key)) }

// Len implements rules.Value.
func (r *ruleNode) Len() int { return r.node().Len() }

// Each implements rules.Value.
func (r *ruleNode) Each(fn func(key string, child rules.Value) bool) {
	r.node().Each(func(k string, c *tree.Node) bool { return fn(k, ruleValue(c)) })
}

// Priority implements rules.Value.
func (r *ruleNode) Priority() rules.Value { return ruleValue(r.node().Priority()) }

// Same implements rules.Value: identical pointers, or equal content hashes.
func (r *ruleNode) Same(o rules.Value) bool {
	if sv, ok := o.(*storedValue); ok {
		// A dry run's stored node: an answer of true skips validation
		// because of what is stored (judgeahead.go).
		same := r.Same(ruleValue(sv.n))
		if same {
			sv.probe.stored = true
		}
		return same
	}
	on, ok := o.(*ruleNode)
	if !ok {
		return false
	}
	return r == on || r.node().Equal(on.node())
}

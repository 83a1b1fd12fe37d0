package httpapi

import (
	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// ruleView shows a *tree.Node to the rules evaluator for the rules
// playground (the fsm package has its own for judging); a nil *ruleView
// is null.
type ruleView tree.Node

func viewOf(n *tree.Node) rules.Value { return (*ruleView)(n) }

func (r *ruleView) node() *tree.Node { return (*tree.Node)(r) }

// Kind implements rules.Value.
func (r *ruleView) Kind() rules.Kind {
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
func (r *ruleView) Bool() bool { return r.node().Kind() == tree.KindBool && r.node().BoolValue() }

// Number implements rules.Value.
func (r *ruleView) Number() float64 { f, _ := r.node().Number(); return f }

// Str implements rules.Value.
func (r *ruleView) Str() string {
	if r.node().Kind() != tree.KindString {
		return ""
	}
	return r.node().StringValue()
}

// Child implements rules.Value.
func (r *ruleView) Child(key string) rules.Value { return viewOf(r.node().Child(key)) }

// Len implements rules.Value.
func (r *ruleView) Len() int { return r.node().Len() }

// Each implements rules.Value.
func (r *ruleView) Each(fn func(key string, child rules.Value) bool) {
	r.node().Each(func(k string, c *tree.Node) bool { return fn(k, viewOf(c)) })
}

// Priority implements rules.Value.
func (r *ruleView) Priority() rules.Value { return viewOf(r.node().Priority()) }

// Same implements rules.Value.
func (r *ruleView) Same(o rules.Value) bool {
	on, ok := o.(*ruleView)
	return ok && (r == on || r.node().Equal(on.node()))
}

package rules

import "strconv"

// Decision is a judgement of one read or one write, with the rule that
// made it: what a rules playground shows. Allowed is always the answer
// CanRead or CanWrite gives for the same request.
type Decision struct {
	Allowed bool
	// Rule is the deciding rule: the .read or .write that granted, the
	// .validate that failed, or, for a denial no .validate made, the
	// deepest .read or .write that was false. Nil when no rule was
	// evaluated: nothing on the way grants, so the request is denied.
	Rule *RuleRef
	// Steps are the rules evaluated, in order.
	Steps []Step
	// walked is the verdict the explainer's own walk reached; tests check
	// that it is Allowed, so that the rule named is the one that decided.
	walked bool
}

// RuleRef names a rule of the document.
type RuleRef struct {
	// Path is where it is written, e.g. "/rules/users/$uid/.write".
	Path string
	// Expr is its text: an expression, or true or false.
	Expr string
	// Line and Column locate its value in the source (1-based; 0 for the
	// built-in rulesets, which have no source of their own).
	Line, Column int
}

// Step is one rule evaluated during an explanation.
type Step struct {
	Rule RuleRef
	// At is the data location it was evaluated at, e.g. "/users/alice".
	At string
	// Holds is its result; a runtime error makes a rule false.
	Holds bool
}

// ExplainRead judges a read of path as CanRead does and says which rule
// decided.
func (r *Ruleset) ExplainRead(path []string, env *Env) Decision {
	d := Decision{Allowed: r.CanRead(path, env)}
	x := r.newExplainer(env)
	defer x.ev.release()
	rn, node := r.root, x.ev.root
	for i := 0; ; i++ {
		if rn.read != nil {
			x.ev.at(path[:i], node, nil)
			if x.eval(rn.read, ".read", path[:i]) {
				d.walked = true
				break
			}
		}
		if i == len(path) {
			break
		}
		if rn = rn.match(path[i]); rn == nil {
			break
		}
		x.enter(rn.key)
		node = childOf(node, path[i])
	}
	d.Steps, d.Rule = x.steps, x.decider(d.Allowed, ".read")
	return d
}

// ExplainWrite judges a write at path (env.NewRoot holding the data after
// it) as CanWrite does for that one path, and says which rule decided.
func (r *Ruleset) ExplainWrite(path []string, env *Env) Decision {
	d := Decision{Allowed: r.CanWrite([][]string{path}, env)}
	x := r.newExplainer(env)
	defer x.ev.release()
	x.ev.budget += perNodeBudget
	rn, old, new := r.root, x.ev.root, x.ev.newRoot
	granted := false
	for i := 0; ; i++ {
		loc := path[:i]
		if !granted && rn.write != nil {
			x.ev.at(loc, old, new)
			granted = x.eval(rn.write, ".write", loc)
		}
		if i == len(path) {
			d.walked = granted && x.validate(rn, loc, old, new, true)
			break
		}
		if rn.validate != nil && new.Kind() != Null {
			x.ev.at(loc, old, new)
			if !x.eval(rn.validate, ".validate", loc) {
				break
			}
		}
		next := rn.match(path[i])
		if next == nil {
			d.walked = granted // no rule below can change the answer
			break
		}
		rn = next
		x.enter(rn.key)
		old, new = childOf(old, path[i]), childOf(new, path[i])
	}
	d.Steps, d.Rule = x.steps, x.decider(d.Allowed, ".write")
	return d
}

// explainer evaluates rules as the judges do, recording each.
type explainer struct {
	r     *Ruleset
	ev    *evaluator
	keys  []string // the rule keys from the root to the current rule node
	steps []Step
	// failed is the first .validate that did not hold.
	failed *RuleRef
}

func (r *Ruleset) newExplainer(env *Env) *explainer {
	return &explainer{r: r, ev: newEvaluator(env)}
}

func (x *explainer) enter(key string) { x.keys = append(x.keys, key) }

// eval evaluates rl (of the given kind) at loc and records it.
func (x *explainer) eval(rl *rule, kind string, loc []string) bool {
	ok, _ := x.ev.holds(rl)
	ref := x.ref(rl, kind)
	x.steps = append(x.steps, Step{Rule: ref, At: slashPath(loc), Holds: ok})
	if !ok && kind == ".validate" && x.failed == nil {
		x.failed = &ref
	}
	return ok
}

func (x *explainer) ref(rl *rule, kind string) RuleRef {
	p := "/rules"
	for _, k := range x.keys {
		p += "/" + k
	}
	ref := RuleRef{Path: p + "/" + kind, Expr: rl.text}
	if rl.expr == nil {
		ref.Expr = strconv.FormatBool(rl.value)
	}
	if rl.pos > 0 {
		at := errorAt(x.r.src, rl.pos, "")
		ref.Line, ref.Column = at.Line, at.Column
	}
	return ref
}

// decider picks the rule that decided: the grant, the failed .validate,
// or the deepest rule of the kind that was false.
func (x *explainer) decider(allowed bool, kind string) *RuleRef {
	if !allowed && x.failed != nil {
		return x.failed
	}
	for i := len(x.steps) - 1; i >= 0; i-- {
		s := x.steps[i]
		if s.Holds == allowed && lastSegment(s.Rule.Path) == kind {
			ref := s.Rule
			return &ref
		}
	}
	return nil
}

// lastSegment is the last segment of a rule path: its kind.
func lastSegment(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// validate walks the .validate rules of the written node at loc and of its
// changed descendants as writeJudge.validate does, stopping at the first
// that fails.
func (x *explainer) validate(rn *ruleNode, loc []string, old, new Value, top bool) bool {
	if rn == nil || !rn.validateBelow || new.Kind() == Null {
		return true
	}
	if !top && new.Same(old) {
		return true
	}
	if rn.validate != nil {
		x.ev.budget += perNodeBudget
		x.ev.at(loc, old, new)
		if !x.eval(rn.validate, ".validate", loc) {
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
		depth := len(x.keys)
		x.enter(crn.key)
		ok := x.validate(crn, append(loc[:len(loc):len(loc)], k), childOf(old, k), nc, false)
		x.keys = x.keys[:depth]
		return ok
	}
	if rn.wild == nil {
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

// slashPath renders a data path as "/a/b" ("/" for the root).
func slashPath(p []string) string {
	if len(p) == 0 {
		return "/"
	}
	s := ""
	for _, k := range p {
		s += "/" + k
	}
	return s
}

package rules

import (
	"slices"
	"strconv"
	"strings"
)

// Limits on the rule tree.
const (
	maxRuleDepth = 32 // the database's own depth limit
	maxKeyBytes  = 768
)

// rule is one .read, .write or .validate: a constant or an expression.
type rule struct {
	expr  *node // nil for a constant
	value bool
	// text and pos are the rule's source (an expression's decoded text)
	// and the byte offset of its value, so an explanation can quote it
	// (explain.go); pos 0 means it has none (the built-in rulesets).
	text string
	pos  int
}

// ruleNode is one object of the rules document: the rules for the
// locations it matches and the nodes for their children.
type ruleNode struct {
	key      string               // the key it was written under ("$uid" for a wildcard)
	byName   map[string]*ruleNode // named children, for lookup only
	names    []string             // named children's keys, sorted, for ordered walks
	wild     *ruleNode            // the $wildcard child, if any
	read     *rule
	write    *rule
	validate *rule
	indexOn  []string
	// validateBelow is set when this node or a descendant has .validate,
	// so the write walk can skip subtrees without one.
	validateBelow bool
}

// match is the rule node for child key: a named child takes precedence over
// the wildcard, which matches only keys without a rule of their own.
func (rn *ruleNode) match(key string) *ruleNode {
	if c, ok := rn.byName[key]; ok {
		return c
	}
	return rn.wild
}

// validKey reports whether k may name a database child: non-empty, at most
// 768 bytes, none of . $ # [ ] / and no ASCII control characters.
func validKey(k string) bool {
	if k == "" || len(k) > maxKeyBytes {
		return false
	}
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '.', '$', '#', '[', ']', '/', 0x7f:
			return false
		default:
			if c < 0x20 {
				return false
			}
		}
	}
	return true
}

// treeBuilder turns the parsed document into rule nodes, checking keys and
// compiling expressions.
type treeBuilder struct {
	src []byte
}

// buildRoot checks the document's shape: an object whose only key is
// "rules", itself an object.
func (b *treeBuilder) buildRoot(doc *jval) (*ruleNode, *SyntaxError) {
	if doc.kind != jObject {
		return nil, errorAt(b.src, doc.pos, "Rules must be a JSON object with a \"rules\" key.")
	}
	var rules *jval
	for _, m := range doc.members {
		if m.key != "rules" {
			return nil, errorAt(b.src, m.keyPos, "Unexpected key %s at the top level; only \"rules\" is allowed.", strconv.Quote(m.key))
		}
		rules = m.val
	}
	if rules == nil {
		return nil, errorAt(b.src, doc.pos, "Missing \"rules\" key.")
	}
	return b.build(rules, "", 0, nil)
}

// build makes the rule node for obj, found at depth under key; vars holds
// the wildcard names bound by its ancestors (see checker.vars).
func (b *treeBuilder) build(obj *jval, key string, depth int, vars []string) (*ruleNode, *SyntaxError) {
	if obj.kind != jObject {
		what := "\"rules\""
		if key != "" {
			what = strconv.Quote(key)
		}
		return nil, errorAt(b.src, obj.pos, "Expected an object of rules for %s.", what)
	}
	rn := &ruleNode{key: key}
	for _, m := range obj.members {
		k := m.key
		switch {
		case strings.HasPrefix(k, "."):
			if err := b.ruleKey(rn, m, vars); err != nil {
				return nil, err
			}
			continue
		case strings.HasPrefix(k, "$"):
			if !validKey(k[1:]) {
				return nil, errorAt(b.src, m.keyPos, "Invalid wildcard %s: the name after '$' must be a valid key.", strconv.Quote(k))
			}
			if rn.wild != nil {
				return nil, errorAt(b.src, m.keyPos, "Only one wildcard is allowed per object: %s and %s.", strconv.Quote(rn.wild.key), strconv.Quote(k))
			}
		default:
			if !validKey(k) {
				return nil, errorAt(b.src, m.keyPos, "Invalid key %s: keys must be 1 to 768 bytes with none of . $ # [ ] / or control characters.", strconv.Quote(k))
			}
		}
		if depth+1 > maxRuleDepth {
			return nil, errorAt(b.src, m.keyPos, "Rules are nested too deeply (limit %d levels).", maxRuleDepth)
		}
		bound := ""
		if k[0] == '$' {
			bound = k
		}
		child, err := b.build(m.val, k, depth+1, append(vars[:len(vars):len(vars)], bound))
		if err != nil {
			return nil, err
		}
		if bound != "" {
			rn.wild = child
		} else {
			if rn.byName == nil {
				rn.byName = make(map[string]*ruleNode)
			}
			rn.byName[k] = child
			rn.names = append(rn.names, k)
		}
		rn.validateBelow = rn.validateBelow || child.validateBelow
	}
	slices.Sort(rn.names)
	rn.validateBelow = rn.validateBelow || rn.validate != nil
	return rn, nil
}

// ruleKey handles a member whose key starts with '.'.
func (b *treeBuilder) ruleKey(rn *ruleNode, m jmember, vars []string) *SyntaxError {
	switch m.key {
	case ".read":
		r, err := b.rule(m, kRead, vars)
		rn.read = r
		return err
	case ".write":
		r, err := b.rule(m, kWrite, vars)
		rn.write = r
		return err
	case ".validate":
		r, err := b.rule(m, kValidate, vars)
		rn.validate = r
		return err
	case ".indexOn":
		idx, err := b.indexOn(m.val)
		rn.indexOn = idx
		return err
	}
	return errorAt(b.src, m.keyPos, "Unknown rule type %s: expected .read, .write, .validate or .indexOn.", strconv.Quote(m.key))
}

// rule compiles a .read/.write/.validate value: a boolean, or an expression
// that is parsed and type-checked now so evaluation never meets a
// malformed one.
func (b *treeBuilder) rule(m jmember, kind ruleKind, vars []string) (*rule, *SyntaxError) {
	v := m.val
	switch v.kind {
	case jBool:
		return &rule{value: v.b, pos: v.pos}, nil
	case jString:
	default:
		return nil, errorAt(b.src, v.pos, "Expected true, false or an expression string for %s.", ruleKindNames[kind])
	}
	n, perr := parseExpr(v.str)
	if perr == nil {
		c := &checker{kind: kind, vars: vars}
		perr = c.checkRule(n)
	}
	if perr != nil {
		return nil, errorAt(b.src, stringOffset(b.src, v.pos, perr.pos), "%s", perr.msg)
	}
	return &rule{expr: n, text: v.str, pos: v.pos}, nil
}

// indexOn reads a .indexOn value: a key, a slash-separated child path, or
// ".value", or an array of them.
func (b *treeBuilder) indexOn(v *jval) ([]string, *SyntaxError) {
	var items []*jval
	switch v.kind {
	case jString:
		items = []*jval{v}
	case jArray:
		items = v.elems
	default:
		return nil, errorAt(b.src, v.pos, "Expected a string or an array of strings for .indexOn.")
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		if it.kind != jString || !validIndex(it.str) {
			return nil, errorAt(b.src, it.pos, "Invalid .indexOn entry: expected \".value\" or a child key or path.")
		}
		out = append(out, it.str)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func validIndex(s string) bool {
	if s == ".value" {
		return true
	}
	if s == "" {
		return false
	}
	for seg := range strings.SplitSeq(s, "/") {
		if !validKey(seg) {
			return false
		}
	}
	return true
}

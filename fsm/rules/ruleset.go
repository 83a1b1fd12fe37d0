package rules

import (
	"slices"
	"strings"
)

// Ruleset is a parsed, checked set of rules. It is immutable, so it is safe
// for concurrent use.
type Ruleset struct {
	src    []byte
	strict []byte
	root   *ruleNode
}

// Parse parses and type-checks a rules document. Errors are *SyntaxError.
func Parse(src []byte) (*Ruleset, error) {
	doc, serr := parseSource(src)
	if serr != nil {
		return nil, serr
	}
	b := &treeBuilder{src: src}
	root, serr := b.buildRoot(doc)
	if serr != nil {
		return nil, serr
	}
	return &Ruleset{src: slices.Clone(src), strict: strictJSON(doc), root: root}, nil
}

// constant builds the ruleset {"rules": {".read": v, ".write": v}} without
// going through Parse, so that it cannot fail.
func constant(v bool) *Ruleset {
	lit := "false"
	if v {
		lit = "true"
	}
	src := []byte("{\n  \"rules\": {\n    \".read\": " + lit + ",\n    \".write\": " + lit + "\n  }\n}")
	return &Ruleset{
		src:    src,
		strict: src,
		root:   &ruleNode{read: &rule{value: v}, write: &rule{value: v}},
	}
}

var (
	closedRules = constant(false)
	openRules   = constant(true)
)

// Closed is the default ruleset, which denies everything:
// {"rules": {".read": false, ".write": false}}.
func Closed() *Ruleset { return closedRules }

// Open allows everything: {"rules": {".read": true, ".write": true}}.
func Open() *Ruleset { return openRules }

// Source returns exactly the text given to Parse, comments included; for
// Closed and Open, a tidy equivalent. The result is a copy.
func (r *Ruleset) Source() []byte { return slices.Clone(r.src) }

// StrictJSON returns the same rules as plain JSON without comments, in
// source order, indented with two spaces (GET ?format=strict). The result
// is a copy.
func (r *Ruleset) StrictJSON() []byte { return slices.Clone(r.strict) }

// IndexOn returns the .indexOn entries of the rule node that matches path,
// where wildcards match any key; nil if none. ".value" stands for
// orderByValue.
func (r *Ruleset) IndexOn(path []string) []string {
	rn := r.root
	for _, k := range path {
		if rn = rn.match(k); rn == nil {
			return nil
		}
	}
	return slices.Clone(rn.indexOn)
}

// Index is one .indexOn declaration: Pattern is the rule path, where
// wildcard segments keep their "$name", and Children its entries.
type Index struct {
	Pattern  []string
	Children []string
}

// Indexes lists every .indexOn declaration, ordered by pattern (segment by
// segment, bytewise).
func (r *Ruleset) Indexes() []Index {
	var out []Index
	var walk func(rn *ruleNode, path []string)
	walk = func(rn *ruleNode, path []string) {
		if len(rn.indexOn) > 0 {
			out = append(out, Index{Pattern: slices.Clone(path), Children: slices.Clone(rn.indexOn)})
		}
		for _, k := range rn.names {
			walk(rn.byName[k], append(path, k))
		}
		if rn.wild != nil {
			walk(rn.wild, append(path, rn.wild.key))
		}
	}
	walk(r.root, nil)
	slices.SortFunc(out, func(a, b Index) int {
		return slices.CompareFunc(a.Pattern, b.Pattern, strings.Compare)
	})
	return out
}

package fsm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/btree"

	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// index*.go are the `.indexOn` indexes of SPEC §8: declared by the rules
// in force, kept by Apply on every replica (index_write.go) and walked by
// orderByChild and orderByValue queries instead of a scan of every child
// (tree.Query.EvalWith). An index itself is a tree.Index; this file is
// which locations have one, and how the set is built from scratch: when
// rules are set, and after a snapshot is restored.

// IndexSet is the `.indexOn` indexes of one state: for every location
// whose rules declare an index, and every child path declared there, the
// location's children in the order a query by that child path sorts them.
// A complete set is a pure function of the rules and the tree. New rules
// make a partial set (Pending): Apply keeps only the indexes the old
// rules had, and FSM.BuildIndexes builds the others outside Apply; until
// then their queries scan, with the same answers. A set never changes once
// published: a write makes a new set sharing everything the write did not
// touch, as the tree does. Indexes are not written to snapshots; Restore
// rebuilds them. A nil *IndexSet has no indexes.
type IndexSet struct {
	rules *rules.Ruleset
	decls []indexDecl
	// locs holds the indexes by key (indexKey): a location's indexes, and
	// those of every location below it, are one run of keys.
	locs *btree.BTreeG[*locIndex]
	// pending, for a partial set, is what was written since it was made
	// (index_build.go); nil for a complete one.
	pending *writeLog
}

// indexDecl is one child path of one `.indexOn` declaration.
type indexDecl struct {
	pattern []string // the rule path; a "$name" segment matches any key
	child   string   // ".value", or a child path "a/b" as declared
	order   tree.IndexOrder
}

// locIndex is the index of one location by one declared child path.
type locIndex struct {
	key string // indexKey(loc, child)
	loc tree.Path
	ix  *tree.Index
}

func lessIndexKey(a, b *locIndex) bool { return a.key < b.key }

// indexLocsDegree is the B-tree degree of a set's locations (the
// children's own degree).
const indexLocsDegree = 16

func newIndexLocs() *btree.BTreeG[*locIndex] {
	return btree.NewBTreeGOptions(lessIndexKey, btree.Options{NoLocks: true, Degree: indexLocsDegree})
}

// Key bytes: keys hold no control characters (ValidKey), so "\x00" before
// each key makes byte order the order of paths key by key, a location
// before the locations below it; "\x01" then ends the location. The keys
// of p and of everything below it are thus exactly [locKey(p),
// locKey(p)+"\x02").
const (
	locSep      = "\x00"
	locEnd      = "\x01"
	locAfterAll = "\x02"
)

// locKey is the key prefix of the location p.
func locKey(p tree.Path) string {
	var b strings.Builder
	for _, k := range p {
		b.WriteString(locSep)
		b.WriteString(k)
	}
	return b.String()
}

// indexKey is the key of the index of loc by child.
func indexKey(loc tree.Path, child string) string { return locKey(loc) + locEnd + child }

// Len is the number of indexes in the set.
func (s *IndexSet) Len() int {
	if s == nil {
		return 0
	}
	return s.locs.Len()
}

// Lookup returns the index that serves q at p, or nil: none is declared
// there, the location is not an object, or q orders by key or priority
// (which need none). The index belongs to the state s came from; pass it
// with the node read from that same state to Query.EvalWith.
func (s *IndexSet) Lookup(p tree.Path, q *tree.Query) *tree.Index {
	if s == nil || q == nil || (q.Order() != tree.OrderByValue && q.Order() != tree.OrderByChild) {
		return nil
	}
	if li := s.get(indexKey(p, q.IndexName())); li != nil {
		return li.ix
	}
	return nil
}

// get returns the index whose key is key, or nil.
func (s *IndexSet) get(key string) *locIndex {
	if s == nil {
		return nil
	}
	li, _ := s.locs.Get(&locIndex{key: key})
	return li
}

// declares reports whether the rules of s declare child at loc. A
// location can be reached by a wildcard pattern while a named rule sibling
// governs it instead; like Firebase, only the rule that governs a location
// declares its indexes.
func (s *IndexSet) declares(loc tree.Path, child string) bool {
	return slices.Contains(s.rules.IndexOn(loc), child)
}

// declsOf lists the child paths set declares, each once per pattern.
func declsOf(set *rules.Ruleset) []indexDecl {
	var out []indexDecl
	for _, d := range set.Indexes() {
		seen := map[string]bool{}
		for _, c := range d.Children {
			if seen[c] {
				continue
			}
			seen[c] = true
			out = append(out, indexDecl{pattern: d.Pattern, child: c, order: tree.NewIndexOrder(c)})
		}
	}
	return out
}

// buildIndexSet indexes root for every declaration of set (nil: none).
// An index of prev, a set of the same root, is taken over as it is, so
// changing the rules rebuilds only the indexes they add. It stops with
// ctx's error between two locations.
func buildIndexSet(ctx context.Context, set *rules.Ruleset, root *tree.Node, prev *IndexSet) (*IndexSet, error) {
	if set == nil {
		return nil, nil
	}
	decls := declsOf(set)
	if len(decls) == 0 {
		return nil, nil
	}
	s := &IndexSet{rules: set, decls: decls, locs: newIndexLocs()}
	var err error
	for i := range decls {
		d := &decls[i]
		walkPattern(root, nil, d.pattern, func(loc tree.Path, n *tree.Node) {
			if err != nil || !s.declares(loc, d.child) {
				return
			}
			if err = ctx.Err(); err != nil {
				return
			}
			key := indexKey(loc, d.child)
			li, _ := indexFor(prev.get(key), key, loc, d, n, true)
			s.locs.Set(li)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("build indexes: %w", err)
	}
	return s, nil
}

// walkPattern calls fn for every object below n (which is at at) whose
// path from n matches rest, at wildcard segments visiting every child.
func walkPattern(n *tree.Node, at tree.Path, rest []string, fn func(loc tree.Path, n *tree.Node)) {
	if n.Kind() != tree.KindObject {
		return
	}
	if len(rest) == 0 {
		fn(at, n)
		return
	}
	if !isWildcard(rest[0]) {
		if c := n.Child(rest[0]); c != nil {
			walkPattern(c, at.Child(rest[0]), rest[1:], fn)
		}
		return
	}
	n.Each(func(k string, c *tree.Node) bool {
		walkPattern(c, at.Child(k), rest[1:], fn)
		return true
	})
}

func isWildcard(seg string) bool { return strings.HasPrefix(seg, "$") }

// patternMatches reports whether the path p matches pattern, of the same
// length.
func patternMatches(pattern []string, p tree.Path) bool {
	if len(pattern) != len(p) {
		return false
	}
	for i, seg := range pattern {
		if !isWildcard(seg) && seg != p[i] {
			return false
		}
	}
	return true
}

// indexFor returns the index of the object n at loc for d: prev's, an
// index of the same location and child path in an older tree, when it
// still fits (tree.Index.Reuse), and otherwise a new one, built reports —
// or nil when it would have to be built and build is false.
func indexFor(prev *locIndex, key string, loc tree.Path, d *indexDecl, n *tree.Node, build bool) (li *locIndex, built bool) {
	if prev != nil {
		if ix := prev.ix.Reuse(n); ix == prev.ix {
			return prev, false
		} else if ix != nil {
			return &locIndex{key: key, loc: prev.loc, ix: ix}, false
		}
	}
	if !build {
		return nil, false
	}
	return &locIndex{key: key, loc: slices.Clone(loc), ix: tree.BuildIndex(n, d.order)}, true
}

// msgIndexNotDefined is Firebase's refusal of a query whose index the
// rules do not declare: the child path (".value" for orderByValue), then
// the location.
const msgIndexNotDefined = `Index not defined, add ".indexOn": "%s", for path "%s", to the rules`

// MissingIndex returns Firebase's `Index not defined` 400 for q at p when
// the rules r (nil: the default, which declare none) do not declare the
// index q orders by, and nil when they do or when q needs none ($key,
// $priority). Arbor answers such a query by scanning; a server with
// --strict-indexes refuses it with this error, as Firebase does.
func (r *Rules) MissingIndex(p tree.Path, q *tree.Query) error {
	if q == nil {
		return nil
	}
	name := q.IndexName()
	if name == "" {
		return nil
	}
	if r != nil && r.Set != nil && slices.Contains(r.Set.IndexOn(p), name) {
		return nil
	}
	return tree.Public(tree.ErrBadRequest, fmt.Sprintf(msgIndexNotDefined, name, p.String()))
}

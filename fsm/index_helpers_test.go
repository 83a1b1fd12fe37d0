package fsm

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// Helpers of the `.indexOn` tests: a dump and an invariant check of an
// index set, and random writes and queries over the locations the test
// rules index.

// indexRules declare indexes at the root, at a named location, below a
// wildcard with a named sibling that declares others, and at every
// top-level key (a wildcard that also reaches "items", declared twice,
// and "rooms", which its own rule governs and does not index).
const indexRules = `{
  "rules": {
    ".read": true, ".write": true, ".indexOn": ["h"],
    "items": {".indexOn": ["h", "n/v", ".value", "h"]},
    "rooms": {
      "$r": {"msgs": {".indexOn": ["t", ".value"]}},
      "special": {"msgs": {".indexOn": "h"}}
    },
    "$any": {".indexOn": "h"}
  }
}`

// otherIndexRules keep some of indexRules' indexes, drop others and add one.
const otherIndexRules = `{
  "rules": {
    ".read": true, ".write": true,
    "items": {".indexOn": ["h", "t"]},
    "rooms": {"$r": {"msgs": {".indexOn": "t"}}}
  }
}`

// noIndexRules declare no index.
const noIndexRules = `{"rules": {".read": true, ".write": true}}`

// dumpIndexes renders every index of s: location, child path, and the
// children in index order with their index values.
func dumpIndexes(s *IndexSet) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	s.locs.Scan(func(li *locIndex) bool {
		fmt.Fprintf(&b, "%q by %s:", li.loc, li.ix.Order().Child())
		li.ix.Each(func(k string, v *tree.Node) bool {
			fmt.Fprintf(&b, " %q=%s", k, render(v))
			return true
		})
		b.WriteByte('\n')
		return true
	})
	return b.String()
}

// indexItems lists ix's children in index order with their index values.
func indexItems(ix *tree.Index) []indexItemDump {
	var out []indexItemDump
	ix.Each(func(k string, v *tree.Node) bool { out = append(out, indexItemDump{k, v}); return true })
	return out
}

// indexItemDump is one child of an index: its key and its very index value.
type indexItemDump struct {
	key   string
	value *tree.Node
}

// checkIndexSet checks that s indexes root exactly as a build from
// scratch does (a partial set: some of those indexes, none else), and that
// every index is of the node at its location and holds that node's very
// children.
func checkIndexSet(t *testing.T, what string, s *IndexSet, r *Rules, root *tree.Node) {
	t.Helper()
	var want *IndexSet
	if r != nil {
		var err error
		if want, err = buildIndexSet(context.Background(), r.Set, root, nil); err != nil {
			t.Fatal(err)
		}
	}
	if s.Pending() {
		s.locs.Scan(func(li *locIndex) bool {
			if want.get(li.key) == nil {
				t.Fatalf("%s: a partial set has %s by %s, which the rules do not declare", what, li.loc, li.ix.Order().Child())
			}
			return true
		})
	} else if got, w := dumpIndexes(s), dumpIndexes(want); got != w {
		t.Fatalf("%s: indexes kept:\n%s\nbuilt from scratch:\n%s", what, got, w)
	}
	if s == nil {
		return
	}
	s.locs.Scan(func(li *locIndex) bool {
		ix, child := li.ix, li.ix.Order().Child()
		n := root.Get(li.loc)
		if ix.Of() != n || n.Kind() != tree.KindObject || li.key != indexKey(li.loc, child) {
			t.Fatalf("%s: index %s by %s is not of the node there", what, li.loc, child)
		}
		if ix.Len() != n.Len() {
			t.Fatalf("%s: index %s by %s has %d children, the node %d", what, li.loc, child, ix.Len(), n.Len())
		}
		if !slices.Equal(indexItems(ix), indexItems(tree.BuildIndex(n, ix.Order()))) {
			t.Fatalf("%s: index %s by %s: children are stale", what, li.loc, child)
		}
		return true
	})
}

// indexKeys are the keys of random paths: integer keys, others, and ones
// whose UTF-16 order differs from their byte order.
var indexKeys = []string{"a", "b", "1", "10", "2", "-3", "zz", "\ue000x", "😀", "special", "r1"}

// indexTemplates are the paths random writes take prefixes of; "*" is a
// random key.
var indexTemplates = [][]string{
	{"items", "*", "h"},
	{"items", "*", "n", "v"},
	{"rooms", "*", "msgs", "*", "t"},
	{"rooms", "special", "msgs", "*", "h"},
	{"*", "h"},
	{"*", "*", "*"},
}

// randomIndexPath returns a prefix of a template, sometimes one key longer.
func randomIndexPath(r *rand.Rand) tree.Path {
	tpl := indexTemplates[r.Intn(len(indexTemplates))]
	p := tree.Path{}
	n := len(tpl) // most writes set the values indexes order by
	if r.Intn(2) == 0 {
		n = r.Intn(len(tpl) + 1)
	}
	for _, k := range tpl[:n] {
		if k == "*" {
			k = indexKeys[r.Intn(len(indexKeys))]
		}
		p = append(p, k)
	}
	if len(p) == 0 && r.Intn(4) > 0 {
		// Writes at the root replace everything: keep them rare enough
		// for the tree to grow.
		p = append(p, tpl[0])
		if p[0] == "*" {
			p[0] = indexKeys[r.Intn(len(indexKeys))]
		}
	}
	if r.Intn(5) == 0 {
		p = append(p, []string{"h", "t", "n", "x"}[r.Intn(4)])
	}
	return p
}

// indexScalars are values of every type, with ties across types of
// numbers (2 and 2.0) and strings ordered differently in UTF-16.
var indexScalars = []string{
	"null", "true", "false", "-3", "0", "2", "2.0", "1.5", "-0.5", "9007199254740993", "9007199254740992.0", "1e300",
	`""`, `"a"`, `"b"`, `"A"`, `"10"`, `"\ue000"`, `"😀"`,
}

// randomIndexValue returns JSON for a value: a scalar, or an object of
// the children the test rules index by, sometimes with a priority.
func randomIndexValue(r *rand.Rand, depth int) string {
	if depth <= 0 || r.Intn(3) > 0 {
		return indexScalars[r.Intn(len(indexScalars))]
	}
	var fields []string
	for _, k := range []string{"h", "t", "n", "v", "x", "1"} {
		if r.Intn(2) == 0 {
			fields = append(fields, fmt.Sprintf("%q:%s", k, indexFieldValue(r, k, depth-1)))
		}
	}
	if r.Intn(6) == 0 {
		fields = append(fields, `".priority":`+[]string{"1", `"p"`, "2.5"}[r.Intn(3)])
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// indexFieldValue is mostly a scalar under a key queries order by (so
// that index values vary), else any value.
func indexFieldValue(r *rand.Rand, key string, depth int) string {
	switch {
	case (key == "h" || key == "t" || key == "v") && r.Intn(4) > 0:
		return indexScalars[r.Intn(len(indexScalars))]
	case key == "n" && r.Intn(2) > 0:
		return `{"v":` + indexScalars[r.Intn(len(indexScalars))] + `}`
	}
	return randomIndexValue(r, depth)
}

// randomIndexWrite returns a random PUT, DELETE, PATCH, POST or priority
// write, acting as a user a quarter of the time (judged by open rules).
func randomIndexWrite(r *rand.Rand) Command {
	c := Command{Kind: CmdSet, Path: randomIndexPath(r), Now: 1700000000000 + int64(r.Intn(100))}
	r.Read(c.Rand[:])
	for i := range c.Rand {
		c.Rand[i] &= 63
	}
	kind := r.Intn(8)
	if kind < 4 && len(c.Path) < 3 && r.Intn(4) > 0 {
		kind = 4 // replacing a whole subtree is common enough at 1 in 4
	}
	switch kind {
	case 0, 1, 2:
		c.Body = []byte(indexFieldValue(r, c.Path[max(len(c.Path)-1, 0):].String()[1:], 3))
	case 3:
		c.Body = []byte("null")
	case 4, 5:
		c.Kind = CmdUpdate
		var fields []string
		for i, k := range r.Perm(len(indexKeys))[:1+r.Intn(3)] {
			rel, last := indexKeys[k], ""
			if i%2 == 1 {
				last = []string{"h", "t", "v"}[r.Intn(3)]
				rel += "/" + map[string]string{"h": "h", "t": "t", "v": "n/v"}[last]
			}
			fields = append(fields, fmt.Sprintf("%q:%s", rel, indexFieldValue(r, last, 2)))
		}
		c.Body = []byte("{" + strings.Join(fields, ",") + "}")
	case 6:
		c.Kind = CmdPush
		c.Body = []byte(randomIndexValue(r, 2))
		if r.Intn(2) == 0 {
			c.Body = []byte(`{"h":` + indexFieldValue(r, "h", 1) + `,"t":` + indexFieldValue(r, "t", 1) + `}`)
		}
	default:
		c.Path = append(c.Path, ".priority")
		c.Body = []byte([]string{"1", `"p"`, "null"}[r.Intn(3)])
	}
	if r.Intn(4) == 0 {
		c.As = &Access{Auth: map[string]any{"uid": "u"}}
	}
	return c
}

// indexOrderBys are orderBy values: indexed child paths, $value, and
// child paths no rule indexes.
var indexOrderBys = []string{`"h"`, `"n/v"`, `"/n//v/"`, `"t"`, `"$value"`, `"x"`, `"n"`}

// orderSpec is the query orderBy=<orderBy> as the URL spells it ("$key",
// "a/b", …; empty keys of a child path dropped), without a range or limit.
func orderSpec(orderBy string) tree.QuerySpec {
	name, _ := tree.ParseJSONString(orderBy)
	switch name {
	case "$key":
		return tree.QuerySpec{Order: tree.OrderByKey}
	case "$value":
		return tree.QuerySpec{Order: tree.OrderByValue}
	case "$priority":
		return tree.QuerySpec{Order: tree.OrderByPriority}
	}
	child := slices.DeleteFunc(strings.Split(name, "/"), func(k string) bool { return k == "" })
	return tree.QuerySpec{Order: tree.OrderByChild, Child: child}
}

// mustQuery is the query orderBy=<orderBy>.
func mustQuery(tb testing.TB, orderBy string) *tree.Query {
	tb.Helper()
	q, err := tree.NewQuery(orderSpec(orderBy))
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// randomIndexQuery returns a random query: every kind of bound, with and
// without tie-breaker keys, and limits from each end.
func randomIndexQuery(r *rand.Rand) tree.QuerySpec {
	bound := func() *tree.Bound {
		v, err := tree.ParseBody([]byte(indexScalars[r.Intn(len(indexScalars))]), 0)
		if err != nil {
			panic(err)
		}
		b := &tree.Bound{Value: v}
		if r.Intn(3) == 0 {
			names := append([]string{"[MIN_NAME]", "[MAX_NAME]"}, indexKeys...)
			b.Key, b.Named = names[r.Intn(len(names))], true
		}
		return b
	}
	s := orderSpec(indexOrderBys[r.Intn(len(indexOrderBys))])
	if r.Intn(5) == 0 {
		s.EqualTo = bound()
	} else {
		switch r.Intn(3) {
		case 0:
			s.StartAt = bound()
		case 1:
			s.StartAfter = bound()
		}
		switch r.Intn(3) {
		case 0:
			s.EndAt = bound()
		case 1:
			s.EndBefore = bound()
		}
	}
	switch r.Intn(3) {
	case 0:
		s.Limit, s.HasLimit = r.Intn(5), true
	case 1:
		s.Limit, s.HasLimit, s.LimitToLast = r.Intn(5), true, true
	}
	return s
}

// compareIndexedQueries runs n random queries at loc both from its index
// and by scanning, and describes the first difference, or a declared
// index of an object that is missing from a complete set. It returns how many used an index.
// It does not fail the test itself, so that any goroutine may call it.
func compareIndexedQueries(r *rand.Rand, what string, rr ReadResult, loc tree.Path, n int) (used int, problem string) {
	for range n {
		spec := randomIndexQuery(r)
		q, err := tree.NewQuery(spec)
		if err != nil {
			continue
		}
		ix := rr.Indexes.Lookup(loc, q)
		declared := rr.Rules != nil && rr.Rules.MissingIndex(loc, q) == nil && !rr.Indexes.Pending()
		if declared && rr.Value.Kind() == tree.KindObject && ix.Of() != rr.Value {
			return used, fmt.Sprintf("%s: %s by %s is declared but has no index", what, loc, q.IndexName())
		}
		if ix != nil {
			used++
		}
		scanned, err1 := q.Eval(context.Background(), rr.Value)
		walked, err2 := q.EvalWith(context.Background(), rr.Value, ix)
		if err1 != nil || err2 != nil {
			return used, fmt.Sprintf("%s: %v, %v", what, err1, err2)
		}
		if !scanned.Same(walked) {
			return used, fmt.Sprintf("%s: query %+v at %s: scan and index differ\nscan:  %s\nindex: %s", what, spec, loc,
				tree.AppendQueryResult(nil, scanned, tree.RenderOptions{}), tree.AppendQueryResult(nil, walked, tree.RenderOptions{}))
		}
	}
	return used, ""
}

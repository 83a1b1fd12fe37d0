package httpapi

import (
	"context"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

func TestParseQueryNoQuery(t *testing.T) {
	for _, params := range []map[string]string{
		nil,
		{"print": "pretty"},
		{"shallow": "true"},
		{"shallow": "true", "timeout": "5s", "format": "export"},
	} {
		if q, err := parseQueryParams(params); q != nil || err != nil {
			t.Errorf("parseQueryParams(%v) = %+v, %v; want no query", params, q, err)
		}
	}
}

func TestParseQueryOrderBy(t *testing.T) {
	for _, tc := range []struct {
		orderBy string
		order   tree.OrderBy
		child   tree.Path
		index   string
	}{
		{`"$key"`, tree.OrderByKey, nil, ""},
		{` "$value" `, tree.OrderByValue, nil, ".value"},
		{`"$priority"`, tree.OrderByPriority, nil, ""},
		{`"height"`, tree.OrderByChild, tree.Path{"height"}, "height"},
		{`"dimensions/height"`, tree.OrderByChild, tree.Path{"dimensions", "height"}, "dimensions/height"},
		{`"\u00e9/x"`, tree.OrderByChild, tree.Path{"é", "x"}, "é/x"},
		{`"/a//b/"`, tree.OrderByChild, tree.Path{"a", "b"}, "a/b"},
	} {
		q, err := parseQueryParams(map[string]string{"orderBy": tc.orderBy})
		if err != nil {
			t.Errorf("%s: %v", tc.orderBy, err)
			continue
		}
		if q.Order() != tc.order || !slices.Equal(q.Child(), tc.child) || q.IndexName() != tc.index {
			t.Errorf("%s: %+v index %q", tc.orderBy, q, q.IndexName())
		}
	}
	deep := `"` + strings.Repeat("a/", tree.MaxDepth) + `a"`
	if _, err := parseQueryParams(map[string]string{"orderBy": deep}); err == nil || err.Error() != MsgOrderByJSON {
		t.Errorf("a child path deeper than %d: %v", tree.MaxDepth, err)
	}
}

func TestParseQueryLimits(t *testing.T) {
	q, err := parseQueryParams(map[string]string{"orderBy": `"$key"`, "limitToFirst": "0007"})
	if s := q.Spec(); err != nil || s.Limit != 7 || !s.HasLimit || s.LimitToLast {
		t.Errorf("limitToFirst=0007: %+v %v", s, err)
	}
	q, err = parseQueryParams(map[string]string{"orderBy": `"$key"`, "limitToLast": "99999999999999999999999"})
	if s := q.Spec(); err != nil || s.Limit != math.MaxInt32 || !s.LimitToLast {
		t.Errorf("huge limitToLast: %+v %v", s, err)
	}
	for _, bad := range []string{"+1", " 1", "1e3", "0x10", "１"} {
		if _, err := parseQueryParams(map[string]string{"orderBy": `"$key"`, "limitToFirst": bad}); err == nil {
			t.Errorf("limitToFirst=%q accepted", bad)
		}
	}
}

// queryParamsOf turns a query string into parseQueryParams' map, as
// parseQuery does.
func queryParamsOf(tb testing.TB, query string) map[string]string {
	tb.Helper()
	v, err := url.ParseQuery(query)
	if err != nil {
		tb.Fatalf("query %q: %v", query, err)
	}
	m := make(map[string]string, len(v))
	for k, vs := range v {
		m[k] = vs[0]
	}
	return m
}

// TestIndexedFixtureQueries answers every query of the conformance
// fixture from the `.indexOn` indexes of an FSM on everything it orders
// by: the same children, the very same nodes, as a scan.
func TestIndexedFixtureQueries(t *testing.T) {
	fx := loadQueryFixture(t)
	f := fsm.New()
	for i, c := range []fsm.Command{
		{Kind: fsm.CmdSetRules, Body: []byte(`{"rules": {"$loc": {".indexOn": [".value", "height", "order", "nonexistent",
			"ratings/pos", "appeared", "weight", "v"]}}}`)},
		{Kind: fsm.CmdSet, Body: fx.Data},
	} {
		c = parsed(t, c)
		if r := f.Apply(fsm.Entry{Index: uint64(i + 1), Command: true, Data: c.Encode()}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if err := f.BuildIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	used := 0
	for _, c := range fx.Cases {
		q, err := parseQueryParams(queryParamsOf(t, c.Query))
		if err != nil || q == nil {
			continue
		}
		p, err := tree.SplitPath(c.Path)
		if err != nil {
			t.Fatal(err)
		}
		rr := f.ReadLocal(p)
		ix := rr.Indexes.Lookup(p, q)
		if ix != nil {
			used++
		}
		scanned, err1 := q.Eval(context.Background(), rr.Value)
		walked, err2 := q.EvalWith(context.Background(), rr.Value, ix)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", c.Name, err1, err2)
		}
		if !scanned.Same(walked) {
			o := tree.RenderOptions{Export: true}
			t.Errorf("%s: scan and index differ:\nscan:  %s\nindex: %s", c.Name,
				tree.AppendQueryResult(nil, scanned, o), tree.AppendQueryResult(nil, walked, o))
		}
	}
	if used < 60 {
		t.Fatalf("only %d fixture queries had an index", used)
	}
}

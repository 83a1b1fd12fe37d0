package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// FuzzParseQuery feeds arbitrary query strings to the parser the way
// parseQuery does (url.ParseQuery, then the first value of each name).
// Every refusal must be a *tree.PublicError wrapping tree.ErrBadRequest,
// which errors.go answers with a 400: no query string yields a 5xx. An accepted query runs
// on several locations of the dinosaurs fixture and must return at most
// its limit of children, each inside the range, in strictly increasing
// query order, rendered as valid JSON (pretty compacting to compact).
func FuzzParseQuery(f *testing.F) {
	fx := loadQueryFixture(f)
	root, err := tree.ParseBody(fx.Data, tree.MaxDepth)
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range fx.Cases {
		f.Add(c.Query)
	}
	locations := []tree.Path{nil, {"dinosaurs"}, {"keys"}, {"values"}, {"things"}, {"prios"}, {"array"}, {"leaf"}, {"nothing"}}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return // httpapi refuses a malformed query string with a 400 before parsing
		}
		params := make(map[string]string, len(v))
		for name, vs := range v {
			params[name] = vs[0]
		}
		q, err := parseQueryParams(params)
		if err != nil {
			var pe *tree.PublicError
			if !errors.As(err, &pe) || !errors.Is(err, tree.ErrBadRequest) || pe.Message == "" {
				t.Fatalf("parseQueryParams(%q): %v (%T) is not a public bad request", raw, err, err)
			}
			return
		}
		if q == nil {
			return
		}
		for _, p := range locations {
			n := root.Get(p)
			res, err := q.Eval(context.Background(), n)
			if err != nil {
				t.Fatalf("%q on %s: %v", raw, p, err)
			}
			checkQueryResult(t, q, res, raw)
			for _, o := range []tree.RenderOptions{{}, {Export: true}} {
				compact := tree.AppendQueryResult(nil, res, o)
				o.Pretty = true
				var buf bytes.Buffer
				if err := json.Compact(&buf, tree.AppendQueryResult(nil, res, o)); err != nil || !bytes.Equal(buf.Bytes(), compact) {
					t.Fatalf("%q on %s: pretty does not compact to %s (%v)", raw, p, compact, err)
				}
			}
		}
	})
}

// checkQueryResult checks a result's size, range and order.
func checkQueryResult(t *testing.T, q *tree.Query, res tree.QueryResult, raw string) {
	t.Helper()
	if s := q.Spec(); s.HasLimit && res.Len() > s.Limit {
		t.Fatalf("%q: %d children over a limit of %d", raw, res.Len(), s.Limit)
	}
	var (
		prevKey  string
		prevNode *tree.Node
		first    = true
	)
	res.Each(func(k string, n *tree.Node) bool {
		if !q.Admits(k, n) {
			t.Fatalf("%q: child %q is outside the range", raw, k)
		}
		if !first && q.CompareChildren(prevKey, prevNode, k, n) >= 0 {
			t.Fatalf("%q: %q comes after %q", raw, k, prevKey)
		}
		prevKey, prevNode, first = k, n, false
		return true
	})
}

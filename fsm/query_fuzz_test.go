package fsm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
)

// FuzzParseQuery feeds arbitrary query strings to the parser the way
// httpapi does (url.ParseQuery, then the first value of each name). Every
// refusal must be a *PublicError wrapping ErrBadRequest, which httpapi
// answers with a 400: no query string yields a 5xx. An accepted query runs
// on several locations of the dinosaurs fixture and must return at most
// its limit of children, each inside the range, in strictly increasing
// query order, rendered as valid JSON (pretty compacting to compact).
func FuzzParseQuery(f *testing.F) {
	root, cases := loadQueryFixture(f)
	for _, c := range cases {
		f.Add(c.Query)
	}
	locations := []Path{nil, {"dinosaurs"}, {"keys"}, {"values"}, {"things"}, {"prios"}, {"array"}, {"leaf"}, {"nothing"}}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return // httpapi refuses a malformed query string with a 400 before parsing
		}
		params := make(map[string]string, len(v))
		for name, vs := range v {
			params[name] = vs[0]
		}
		q, err := ParseQuery(params)
		if err != nil {
			var pe *PublicError
			if !errors.As(err, &pe) || !errors.Is(err, ErrBadRequest) || pe.Message == "" {
				t.Fatalf("ParseQuery(%q): %v (%T) is not a public bad request", raw, err, err)
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
			for _, o := range []RenderOptions{{}, {Export: true}} {
				compact := AppendQueryResult(nil, res, o)
				o.Pretty = true
				var buf bytes.Buffer
				if err := json.Compact(&buf, AppendQueryResult(nil, res, o)); err != nil || !bytes.Equal(buf.Bytes(), compact) {
					t.Fatalf("%q on %s: pretty does not compact to %s (%v)", raw, p, compact, err)
				}
			}
		}
	})
}

// checkQueryResult checks a result's size, range and order.
func checkQueryResult(t *testing.T, q *Query, res QueryResult, raw string) {
	t.Helper()
	if q.limitSet && res.Len() > q.limit {
		t.Fatalf("%q: %d children over a limit of %d", raw, res.Len(), q.limit)
	}
	var prev *indexed
	for _, e := range res.children {
		it := indexed{e: e}
		if q.Order() != OrderByKey {
			it.idx = q.indexValue(e.node)
		}
		if !q.admitsStart(&it.e, it.idx) || !q.admitsEnd(&it.e, it.idx) {
			t.Fatalf("%q: child %q is outside the range", raw, e.key)
		}
		if prev != nil {
			c := compareKeyInfo(&prev.e.keyInfo, &it.e.keyInfo)
			if q.Order() != OrderByKey {
				c = compareIndexed(*prev, it)
			}
			if c >= 0 {
				t.Fatalf("%q: %q comes after %q", raw, e.key, prev.e.key)
			}
		}
		prev = &it
	}
}

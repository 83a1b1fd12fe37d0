package fsm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
)

// queryFixture is testdata/dinosaurs.json: a tree and the query cases of
// issue 3, shared with the httpapi and end-to-end tests.
type queryFixture struct {
	Data  json.RawMessage `json:"data"`
	Cases []queryCase     `json:"cases"`
}

// queryCase is one GET <path>.json?<query>: the answer is an object of
// Keys in that order, the exact Body, or a 400 with Error.
type queryCase struct {
	Name  string   `json:"name"`
	Path  string   `json:"path"`
	Query string   `json:"query"`
	Keys  []string `json:"keys"`
	Body  *string  `json:"body"`
	Error string   `json:"error"`
}

func loadQueryFixture(tb testing.TB) (*Node, []queryCase) {
	tb.Helper()
	raw, err := os.ReadFile("testdata/dinosaurs.json")
	if err != nil {
		tb.Fatal(err)
	}
	var fx queryFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		tb.Fatal(err)
	}
	root, err := ParseBody(fx.Data, MaxDepth)
	if err != nil {
		tb.Fatal(err)
	}
	return root, fx.Cases
}

// queryParams turns a query string into ParseQuery's map, as httpapi does.
func queryParams(tb testing.TB, query string) map[string]string {
	tb.Helper()
	v, err := url.ParseQuery(query)
	if err != nil {
		tb.Fatalf("ParseQuery(%q): %v", query, err)
	}
	m := make(map[string]string, len(v))
	for k, vs := range v {
		m[k] = vs[0]
	}
	return m
}

// expectedKeysBody renders an object of n's children named keys, in that
// order: what a case's Keys mean, built without the query engine.
func expectedKeysBody(tb testing.TB, n *Node, keys []string) string {
	tb.Helper()
	if len(keys) == 0 {
		tb.Fatal("a keys case needs keys; use body \"null\" for an empty result")
	}
	es := make([]entry, len(keys))
	buf := []byte{'{'}
	for i, k := range keys {
		child := n.Child(k)
		if child == nil {
			tb.Fatalf("fixture has no child %q", k)
		}
		es[i] = entry{keyInfo: newKeyInfo(k), node: child}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendQuoted(buf, k)
		buf = append(buf, ':')
		buf = AppendJSON(buf, child, RenderOptions{})
	}
	if entriesAreArray(es) {
		tb.Fatalf("keys %q render as an array: give the case a body", keys)
	}
	return string(append(buf, '}'))
}

// TestQueryTable runs every case of the fixture through ParseQuery, Eval
// and AppendQueryResult.
func TestQueryTable(t *testing.T) {
	root, cases := loadQueryFixture(t)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			params := queryParams(t, tc.Query)
			q, err := ParseQuery(params)
			if tc.Error != "" {
				var pe *PublicError
				if err == nil || !errors.As(err, &pe) || !errors.Is(err, ErrBadRequest) || err.Error() != tc.Error {
					t.Fatalf("error %v, want a bad request %q", err, tc.Error)
				}
				return
			}
			if err != nil || q == nil {
				t.Fatalf("ParseQuery: %v %v", q, err)
			}
			n := root.Get(mustPath(t, tc.Path))
			res, err := q.Eval(context.Background(), n)
			if err != nil {
				t.Fatal(err)
			}
			o := RenderOptions{Pretty: params["print"] == "pretty", Export: params["format"] == "export"}
			got := string(AppendQueryResult(nil, res, o))
			want := ""
			if tc.Body != nil {
				want = *tc.Body
			} else {
				want = expectedKeysBody(t, n, tc.Keys)
			}
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("invalid JSON %s", got)
			}
		})
	}
}

func TestParseQueryNoQuery(t *testing.T) {
	for _, params := range []map[string]string{
		nil,
		{"print": "pretty"},
		{"shallow": "true"},
		{"shallow": "true", "timeout": "5s", "format": "export"},
	} {
		if q, err := ParseQuery(params); q != nil || err != nil {
			t.Errorf("ParseQuery(%v) = %+v, %v; want no query", params, q, err)
		}
	}
}

func TestParseQueryOrderBy(t *testing.T) {
	for _, tc := range []struct {
		orderBy string
		order   OrderBy
		child   Path
		index   string
	}{
		{`"$key"`, OrderByKey, nil, ""},
		{` "$value" `, OrderByValue, nil, ".value"},
		{`"$priority"`, OrderByPriority, nil, ""},
		{`"height"`, OrderByChild, Path{"height"}, "height"},
		{`"dimensions/height"`, OrderByChild, Path{"dimensions", "height"}, "dimensions/height"},
		{`"\u00e9/x"`, OrderByChild, Path{"é", "x"}, "é/x"},
		{`"/a//b/"`, OrderByChild, Path{"a", "b"}, "a/b"},
	} {
		q, err := ParseQuery(map[string]string{"orderBy": tc.orderBy})
		if err != nil {
			t.Errorf("%s: %v", tc.orderBy, err)
			continue
		}
		if q.Order() != tc.order || !slices.Equal(q.Child(), tc.child) || q.IndexName() != tc.index {
			t.Errorf("%s: %+v index %q", tc.orderBy, q, q.IndexName())
		}
	}
	deep := `"` + strings.Repeat("a/", MaxDepth) + `a"`
	if _, err := ParseQuery(map[string]string{"orderBy": deep}); err == nil || err.Error() != MsgOrderByJSON {
		t.Errorf("a child path deeper than %d: %v", MaxDepth, err)
	}
}

func TestParseQueryLimits(t *testing.T) {
	q, err := ParseQuery(map[string]string{"orderBy": `"$key"`, "limitToFirst": "0007"})
	if err != nil || q.limit != 7 || !q.limitSet || q.fromEnd {
		t.Errorf("limitToFirst=0007: %+v %v", q, err)
	}
	q, err = ParseQuery(map[string]string{"orderBy": `"$key"`, "limitToLast": "99999999999999999999999"})
	if err != nil || q.limit != math.MaxInt32 || !q.fromEnd {
		t.Errorf("huge limitToLast: %+v %v", q, err)
	}
	for _, bad := range []string{"+1", " 1", "1e3", "0x10", "１"} {
		if _, err := ParseQuery(map[string]string{"orderBy": `"$key"`, "limitToFirst": bad}); err == nil {
			t.Errorf("limitToFirst=%q accepted", bad)
		}
	}
}

func TestCompareValues(t *testing.T) {
	obj := mustParseBody(t, `{"a":1}`)
	// Each value sorts strictly before the next.
	ordered := []*Node{
		nil, Bool(false), Bool(true),
		Float(math.Inf(-1)), Int(math.MinInt64), Float(-1.5), Int(-1), Float(-0.5), Int(0), Float(0.5),
		Int(1), Float(1.5), Int(1<<53 + 1), Float(1 << 54), Int(math.MaxInt64), Float(1e300),
		String(""), String("A"), String("a"), String("b"), String("b\U0001F600"), String("b\uf8ff"), String("\uff21"),
		obj,
	}
	for i := range ordered {
		for j := range ordered {
			want := cmpInt(i, j)
			if got := compareValues(ordered[i], ordered[j]); got != want {
				t.Errorf("compareValues(%s, %s) = %d, want %d", render(ordered[i]), render(ordered[j]), got, want)
			}
		}
	}
	for _, eq := range [][2]*Node{
		{Int(5), Float(5)},
		{Int(0), Float(math.Copysign(0, -1))},
		{Int(math.MinInt64), Float(-9223372036854775808)},
		{obj, mustParseBody(t, `{"z":{"y":true}}`)},
		{String("x"), String("x").WithPriority(Int(3))},
	} {
		if compareValues(eq[0], eq[1]) != 0 || compareValues(eq[1], eq[0]) != 0 {
			t.Errorf("%s and %s should compare equal", render(eq[0]), render(eq[1]))
		}
	}
}

// TestQueryMatchesReference compares Eval on random trees and random
// queries with a naive reference: sort every child, filter, then slice.
func TestQueryMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keyPool := []string{"0", "1", "2", "007", "7", "10", "-1", "-5", "2147483648", "a", "b", "ba", "b\uf8ff",
		"b\U0001F600", "é", "-Nabc", "z"}
	valuePool := []string{`null`, `false`, `true`, `0`, `1`, `1.0`, `1.5`, `-2`, `"a"`, `"b"`, `"b\uf8ff"`,
		`"b\ud83d\ude00"`, `{"x":1}`}
	for round := 0; round < 300; round++ {
		var sb strings.Builder
		sb.WriteByte('{')
		for i, k := range rng.Perm(len(keyPool))[:1+rng.IntN(len(keyPool))] {
			if i > 0 {
				sb.WriteByte(',')
			}
			v := valuePool[rng.IntN(len(valuePool))]
			if v != "null" && v[0] != '{' && rng.IntN(2) == 0 {
				prio := valuePool[3+rng.IntN(len(valuePool)-4)] // a number or a string
				v = fmt.Sprintf(`{".value":%s,".priority":%s}`, v, prio)
			}
			if rng.IntN(2) == 0 {
				v = `{"v":` + v + `}` // a child to order by "v"
			}
			fmt.Fprintf(&sb, `%q:%s`, keyPool[k], v)
		}
		sb.WriteByte('}')
		n, err := ParseBody([]byte(sb.String()), MaxDepth)
		if err != nil {
			t.Fatalf("%s: %v", sb.String(), err)
		}
		if n == nil {
			continue
		}
		for qi := 0; qi < 20; qi++ {
			params := randomQuery(rng, keyPool, valuePool)
			q, err := ParseQuery(params)
			if err != nil {
				continue
			}
			res, err := q.Eval(context.Background(), n)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			res.Each(func(k string, _ *Node) bool { got = append(got, k); return true })
			want := referenceQuery(q, n)
			if !slices.Equal(got, want) {
				t.Fatalf("tree %s\nquery %v\ngot  %q\nwant %q", render(n), params, got, want)
			}
		}
	}
}

func randomQuery(rng *rand.Rand, keys, values []string) map[string]string {
	orders := []string{`"$key"`, `"$value"`, `"$priority"`, `"v"`}
	p := map[string]string{"orderBy": orders[rng.IntN(len(orders))]}
	bound := func() string {
		var v string
		if p["orderBy"] == `"$key"` {
			b, _ := json.Marshal(keys[rng.IntN(len(keys))] + []string{"", "a", "\uf8ff"}[rng.IntN(3)])
			v = string(b)
		} else {
			v = values[rng.IntN(len(values)-1)]
		}
		if rng.IntN(3) == 0 {
			names := append([]string{minName, maxName}, keys...)
			b, _ := json.Marshal(names[rng.IntN(len(names))])
			v += "," + string(b)
		}
		return v
	}
	switch rng.IntN(4) {
	case 0:
		p["equalTo"] = bound()
	case 1:
		p[[]string{"startAt", "startAfter"}[rng.IntN(2)]] = bound()
		p[[]string{"endAt", "endBefore"}[rng.IntN(2)]] = bound()
	case 2:
		p[[]string{"startAt", "startAfter", "endAt", "endBefore"}[rng.IntN(4)]] = bound()
	}
	if rng.IntN(2) == 0 {
		p[[]string{"limitToFirst", "limitToLast"}[rng.IntN(2)]] = fmt.Sprint(rng.IntN(5))
	}
	return p
}

// referenceQuery evaluates q the slow, obvious way.
func referenceQuery(q *Query, n *Node) []string {
	var all []indexed
	n.children.Scan(func(e entry) bool {
		var idx *Node
		if q.Order() == OrderByKey {
			idx = String(e.key)
		} else {
			idx = q.indexValue(e.node)
		}
		all = append(all, indexed{e: e, idx: idx})
		return true
	})
	slices.SortFunc(all, func(a, b indexed) int {
		if q.Order() == OrderByKey {
			return compareKeyInfo(&a.e.keyInfo, &b.e.keyInfo)
		}
		return compareIndexed(a, b)
	})
	var in []string
	for _, it := range all {
		if q.admitsStart(&it.e, it.idx) && q.admitsEnd(&it.e, it.idx) {
			in = append(in, it.e.key)
		}
	}
	if q.limitSet && q.limit < len(in) {
		if q.fromEnd {
			in = in[len(in)-q.limit:]
		} else {
			in = in[:q.limit]
		}
	}
	return in
}

func TestQueryEvalCancelled(t *testing.T) {
	b := newObjectBuilder()
	for i := 0; i < 3*cancelCheckEvery; i++ {
		b.set(fmt.Sprintf("k%05d", i), Int(int64(i)))
	}
	n := b.build(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, orderBy := range []string{`"$key"`, `"$value"`} {
		q, err := ParseQuery(map[string]string{"orderBy": orderBy, "startAt": `"k"`})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Eval(ctx, n); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Eval with a cancelled context: %v", orderBy, err)
		}
	}
}

// TestQueryKeyWalkIsBounded checks the O(log n + k) promise of $key
// queries: Eval looks at its context once every cancelCheckEvery entries it
// visits, so a walk that never looks visited fewer than that many, while a
// scan of the same node looks at it n/cancelCheckEvery times.
func TestQueryKeyWalkIsBounded(t *testing.T) {
	const size = 100_000
	b := newObjectBuilder()
	for i := 0; i < size; i++ {
		b.set(fmt.Sprintf("k%06d", i), Int(int64(i)))
	}
	n := b.build(nil)
	for _, tc := range []struct {
		params map[string]string
		looks  int
	}{
		{map[string]string{"orderBy": `"$key"`, "startAt": `"k050000"`, "limitToFirst": "10"}, 0},
		{map[string]string{"orderBy": `"$key"`, "endBefore": `"k050000"`, "limitToLast": "10"}, 0},
		{map[string]string{"orderBy": `"$key"`, "startAfter": `"k050000"`, "endAt": `"k050005"`}, 0},
		{map[string]string{"orderBy": `"$key"`, "limitToLast": "3"}, 0},
		{map[string]string{"orderBy": `"$value"`, "startAt": "50000", "limitToFirst": "10"}, size / cancelCheckEvery},
	} {
		q, err := ParseQuery(tc.params)
		if err != nil {
			t.Fatal(err)
		}
		ctx := &countingContext{Context: context.Background()}
		res, err := q.Eval(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if res.Len() == 0 || res.Len() > 10 || ctx.looks != tc.looks {
			t.Errorf("%v: %d results, %d looks at the context, want %d", tc.params, res.Len(), ctx.looks, tc.looks)
		}
	}
}

// countingContext counts Err calls.
type countingContext struct {
	context.Context
	looks int
}

func (c *countingContext) Err() error {
	c.looks++
	return c.Context.Err()
}

package tree

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// render is n's compact JSON.
func render(n *Node) string { return string(AppendJSON(nil, n, RenderOptions{})) }

// mustQuery builds the query s describes.
func mustQuery(tb testing.TB, s QuerySpec) *Query {
	tb.Helper()
	q, err := NewQuery(s)
	if err != nil {
		tb.Fatalf("NewQuery(%+v): %v", s, err)
	}
	return q
}

// TestNewQueryCombinations checks NewQuery's refusals: bounds that cannot
// be combined, a key query's bound that is not a string, impossible
// orderings and limits, each a public bad request.
func TestNewQueryCombinations(t *testing.T) {
	k := &Bound{Value: String("k")}
	five := &Bound{Value: Int(5)}
	for _, tc := range []struct {
		s    QuerySpec
		want string
	}{
		{QuerySpec{Order: OrderByValue, EqualTo: five, StartAt: five}, msgEqualToWithRange},
		{QuerySpec{Order: OrderByValue, EqualTo: five, EndBefore: five}, msgEqualToWithRange},
		{QuerySpec{Order: OrderByValue, StartAt: five, StartAfter: five}, msgBothStarts},
		{QuerySpec{Order: OrderByValue, EndAt: five, EndBefore: five}, msgBothEnds},
		{QuerySpec{Order: OrderByKey, StartAt: five}, MsgKeyIndexType},
		{QuerySpec{Order: OrderByKey, EqualTo: &Bound{}}, MsgKeyIndexType},
		{QuerySpec{}, msgBadOrder},
		{QuerySpec{Order: OrderByChild}, msgBadOrder},
		{QuerySpec{Order: OrderByChild, Child: Path{"a", "b/c"}}, msgBadOrder},
		{QuerySpec{Order: OrderByKey, HasLimit: true, Limit: -1}, msgBadLimit},
		{QuerySpec{Order: OrderByKey, StartAt: k, EndBefore: k, HasLimit: true}, ""},
	} {
		q, err := NewQuery(tc.s)
		if tc.want == "" {
			if err != nil || q == nil {
				t.Errorf("%+v: %v", tc.s, err)
			}
			continue
		}
		var pe *PublicError
		if !errors.As(err, &pe) || !errors.Is(err, ErrBadRequest) || err.Error() != tc.want {
			t.Errorf("%+v: %v, want a bad request %q", tc.s, err, tc.want)
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
			spec := randomQuery(rng, keyPool, valuePool)
			q, err := NewQuery(spec)
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
				t.Fatalf("tree %s\nquery %s\ngot  %q\nwant %q", render(n), describeSpec(spec), got, want)
			}
		}
	}
}

// randomQuery is a random query over children keyed from keys with
// values from values (JSON texts): every ordering but a child path's
// ("v"), every kind of bound, with and without tie-breaker keys.
func randomQuery(rng *rand.Rand, keys, values []string) QuerySpec {
	orders := []QuerySpec{{Order: OrderByKey}, {Order: OrderByValue}, {Order: OrderByPriority}, {Order: OrderByChild, Child: Path{"v"}}}
	s := orders[rng.IntN(len(orders))]
	bound := func() *Bound {
		b := &Bound{}
		if s.Order == OrderByKey {
			b.Value = String(keys[rng.IntN(len(keys))] + []string{"", "a", "\uf8ff"}[rng.IntN(3)])
		} else {
			v, err := ParseBody([]byte(values[rng.IntN(len(values)-1)]), 0)
			if err != nil {
				panic(err)
			}
			b.Value = v
		}
		if rng.IntN(3) == 0 {
			names := append([]string{minName, maxName}, keys...)
			b.Key, b.Named = names[rng.IntN(len(names))], true
		}
		return b
	}
	pick := func(bs ...**Bound) **Bound { return bs[rng.IntN(len(bs))] }
	switch rng.IntN(4) {
	case 0:
		s.EqualTo = bound()
	case 1:
		*pick(&s.StartAt, &s.StartAfter) = bound()
		*pick(&s.EndAt, &s.EndBefore) = bound()
	case 2:
		*pick(&s.StartAt, &s.StartAfter, &s.EndAt, &s.EndBefore) = bound()
	}
	if rng.IntN(2) == 0 {
		s.Limit, s.HasLimit, s.LimitToLast = rng.IntN(5), true, rng.IntN(2) == 0
	}
	return s
}

// describeSpec shows s for a failure message.
func describeSpec(s QuerySpec) string {
	out := fmt.Sprintf("order %d %v", s.Order, s.Child)
	for _, b := range []struct {
		name string
		b    *Bound
	}{{"startAt", s.StartAt}, {"startAfter", s.StartAfter}, {"endAt", s.EndAt}, {"endBefore", s.EndBefore}, {"equalTo", s.EqualTo}} {
		if b.b != nil {
			out += fmt.Sprintf(" %s=%s", b.name, render(b.b.Value))
			if b.b.Named {
				out += fmt.Sprintf(",%q", b.b.Key)
			}
		}
	}
	if s.HasLimit {
		out += fmt.Sprintf(" limit %d (last %v)", s.Limit, s.LimitToLast)
	}
	return out
}

// referenceQuery evaluates q the slow, obvious way.
func referenceQuery(q *Query, n *Node) []string {
	var all []indexed
	n.obj.children.Scan(func(e entry) bool {
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
			return CompareKeys(a.e.key, b.e.key)
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
	b := NewObjectBuilder()
	for i := 0; i < 3*cancelCheckEvery; i++ {
		b.Set(fmt.Sprintf("k%05d", i), Int(int64(i)))
	}
	n := b.Build(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, order := range []OrderBy{OrderByKey, OrderByValue} {
		q := mustQuery(t, QuerySpec{Order: order, StartAt: &Bound{Value: String("k")}})
		if _, err := q.Eval(ctx, n); !errors.Is(err, context.Canceled) {
			t.Errorf("order %d: Eval with a cancelled context: %v", order, err)
		}
	}
}

// TestQueryKeyWalkIsBounded checks the O(log n + k) promise of $key
// queries: Eval looks at its context once every cancelCheckEvery entries it
// visits, so a walk that never looks visited fewer than that many, while a
// scan of the same node looks at it n/cancelCheckEvery times.
func TestQueryKeyWalkIsBounded(t *testing.T) {
	const size = 100_000
	b := NewObjectBuilder()
	for i := 0; i < size; i++ {
		b.Set(fmt.Sprintf("k%06d", i), Int(int64(i)))
	}
	n := b.Build(nil)
	key := func(k string) *Bound { return &Bound{Value: String(k)} }
	for _, tc := range []struct {
		spec  QuerySpec
		looks int
	}{
		{QuerySpec{Order: OrderByKey, StartAt: key("k050000"), Limit: 10, HasLimit: true}, 0},
		{QuerySpec{Order: OrderByKey, EndBefore: key("k050000"), Limit: 10, HasLimit: true, LimitToLast: true}, 0},
		{QuerySpec{Order: OrderByKey, StartAfter: key("k050000"), EndAt: key("k050005")}, 0},
		{QuerySpec{Order: OrderByKey, Limit: 3, HasLimit: true, LimitToLast: true}, 0},
		{QuerySpec{Order: OrderByValue, StartAt: &Bound{Value: Int(50000)}, Limit: 10, HasLimit: true}, size / cancelCheckEvery},
	} {
		q := mustQuery(t, tc.spec)
		ctx := &countingContext{Context: context.Background()}
		res, err := q.Eval(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if res.Len() == 0 || res.Len() > 10 || ctx.looks != tc.looks {
			t.Errorf("%s: %d results, %d looks at the context, want %d", describeSpec(tc.spec), res.Len(), ctx.looks, tc.looks)
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

package fsm

import (
	"context"
	"fmt"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// `.indexOn` benchmarks (issue 16). BenchmarkIndexedRangeQuery is a narrow
// orderByChild range over 100,000 children with and without an index:
// with one it must not grow with the node. BenchmarkIndexedWrite is the
// price an index adds to a write of one child.

// applyParsed applies c, which must be Parsed, as its log entry.
func (t *testFSM) applyParsed(c Command) (Result, error) {
	t.index++
	r := t.Apply(Entry{Index: t.index, Command: true, Data: c.Encode()})
	return r.Result, r.Err
}

// scoresNode is an object of n children "k0000000"… whose values are
// {"score": s} with the scores a permutation of 0..n-1 (so a child query
// cannot ride on key order), as httpapi's query benchmarks use.
func scoresNode(tb testing.TB, n int) *tree.Node {
	tb.Helper()
	body := []byte{'{'}
	for i := range n {
		if i > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `"k%07d":{"score":%d}`, i, (i*7919)%n) // 7919 is prime
	}
	node, err := tree.ParseBody(append(body, '}'), tree.MaxDepth)
	if err != nil {
		tb.Fatal(err)
	}
	return node
}

// scoresFSM is an FSM holding scoresNode(tb, n) at /items under rules that
// declare indexOn there (none when empty), its indexes built.
func scoresFSM(tb testing.TB, n int, indexOn string) *testFSM {
	tb.Helper()
	f := newTestFSM()
	src := `{"rules": {}}`
	if indexOn != "" {
		src = `{"rules": {"items": {".indexOn": ` + indexOn + `}}}`
	}
	if _, err := f.apply(Command{Kind: CmdSetRules, Body: []byte(src)}); err != nil {
		tb.Fatal(err)
	}
	if _, err := f.applyParsed(Command{Kind: CmdSet, Path: tree.Path{"items"}, Parsed: true, Value: scoresNode(tb, n)}); err != nil {
		tb.Fatal(err)
	}
	if got := f.Root().Get(tree.Path{"items"}).Len(); got != n {
		tb.Fatalf("%d children, want %d", got, n)
	}
	if err := f.BuildIndexes(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return f
}

// BenchmarkIndexedRangeQuery is orderBy="score"&startAt=<middle>&endAt=<middle+9>&limitToFirst=10
// over 100,000 children: ten results, found by a scan of every child
// without an index, by a seek and a walk of ten with one.
func BenchmarkIndexedRangeQuery(b *testing.B) {
	const n = 100_000
	spec := tree.QuerySpec{Order: tree.OrderByChild, Child: tree.Path{"score"},
		StartAt: &tree.Bound{Value: tree.Int(n / 2)}, EndAt: &tree.Bound{Value: tree.Int(n/2 + 9)}, Limit: 10, HasLimit: true}
	for _, c := range []struct{ name, indexOn string }{{"index=none", ""}, {"index=score", `"score"`}} {
		b.Run(c.name, func(b *testing.B) {
			f := scoresFSM(b, n, c.indexOn)
			ctx := context.Background()
			var buf []byte
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rr := f.ReadLocal(tree.Path{"items"})
				q, err := tree.NewQuery(spec)
				if err != nil {
					b.Fatal(err)
				}
				res, err := q.EvalWith(ctx, rr.Value, rr.Indexes.Lookup(tree.Path{"items"}, q))
				if err != nil {
					b.Fatal(err)
				}
				if res.Len() != 10 {
					b.Fatalf("%d results, want 10", res.Len())
				}
				buf = tree.AppendQueryResult(buf[:0], res, tree.RenderOptions{})
			}
		})
	}
}

// BenchmarkIndexedWrite applies PUT /items/<key>/<field> over 100,000
// children with no index, one, and two: the difference is what keeping
// the indexes costs a one-child write. A write of the indexed field moves
// the child in the index; one of another field leaves it in place.
func BenchmarkIndexedWrite(b *testing.B) {
	const n = 100_000
	for _, c := range []struct{ name, indexOn, field string }{
		{"index=none/field=score", "", "score"},
		{"index=score/field=score", `"score"`, "score"},
		{"index=score+value/field=score", `["score", ".value"]`, "score"},
		{"index=score/field=name", `"score"`, "name"},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := scoresFSM(b, n, c.indexOn)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				key := fmt.Sprintf("k%07d", (i*7)%n)
				if _, err := f.applyParsed(Command{Kind: CmdSet, Path: tree.Path{"items", key, c.field}, Parsed: true, Value: tree.Int(int64(i))}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

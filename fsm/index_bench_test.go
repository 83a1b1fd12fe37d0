package fsm

import (
	"context"
	"fmt"
	"testing"
)

// `.indexOn` benchmarks (issue 16). BenchmarkIndexedRangeQuery is a narrow
// orderByChild range over 100,000 children with and without an index:
// with one it must not grow with the node. BenchmarkIndexedWrite is the
// price an index adds to a write of one child.

// applyParsed applies c, which must be Parsed, as an entry of format 2.
func (t *testFSM) applyParsed(c Command) (Result, error) {
	t.index++
	r := t.Apply(Entry{Index: t.index, Command: true, Data: c.EncodeParsed()})
	return r.Result, r.Err
}

// scoresFSM is an FSM holding queryBenchNode(tb, n) at /items under rules that
// declare indexOn there (none when empty).
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
	if _, err := f.applyParsed(Command{Kind: CmdSet, Path: Path{"items"}, Parsed: true, Value: queryBenchNode(tb, n)}); err != nil {
		tb.Fatal(err)
	}
	if got := f.Root().Get(Path{"items"}).Len(); got != n {
		tb.Fatalf("%d children, want %d", got, n)
	}
	return f
}

// BenchmarkIndexedRangeQuery is orderBy="score"&startAt=<middle>&endAt=<middle+9>&limitToFirst=10
// over 100,000 children: ten results, found by a scan of every child
// without an index, by a seek and a walk of ten with one.
func BenchmarkIndexedRangeQuery(b *testing.B) {
	const n = 100_000
	params := map[string]string{"orderBy": `"score"`, "startAt": fmt.Sprint(n / 2), "endAt": fmt.Sprint(n/2 + 9), "limitToFirst": "10"}
	for _, c := range []struct{ name, indexOn string }{{"index=none", ""}, {"index=score", `"score"`}} {
		b.Run(c.name, func(b *testing.B) {
			f := scoresFSM(b, n, c.indexOn)
			ctx := context.Background()
			var buf []byte
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rr := f.ReadLocal(Path{"items"})
				q, err := ParseQuery(params)
				if err != nil {
					b.Fatal(err)
				}
				res, err := q.EvalWith(ctx, rr.Value, rr.Indexes.Lookup(Path{"items"}, q))
				if err != nil {
					b.Fatal(err)
				}
				if res.Len() != 10 {
					b.Fatalf("%d results, want 10", res.Len())
				}
				buf = AppendQueryResult(buf[:0], res, RenderOptions{})
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
				if _, err := f.applyParsed(Command{Kind: CmdSet, Path: Path{"items", key, c.field}, Parsed: true, Value: Int(int64(i))}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

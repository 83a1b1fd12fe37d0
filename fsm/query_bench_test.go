package fsm

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// Query benchmarks (issue 3, `make bench`). Each runs the whole read-side
// work of a query GET after the tree lookup: ParseQuery, Eval and
// AppendQueryResult. The $key benchmark must not grow with the node's size
// (compare children=10k with children=1M); the child-ordered one scans
// every child, which is the number an `.indexOn` index beats (index_bench_test.go).

var queryBenchNodes sync.Map // int → *Node

// queryBenchNode returns an object of n children "k0000000"… whose values
// are {"score": s} with the scores a permutation of 0..n-1 (so a child
// query cannot ride on key order), built once per size.
func queryBenchNode(tb testing.TB, n int) *Node {
	tb.Helper()
	if v, ok := queryBenchNodes.Load(n); ok {
		return v.(*Node)
	}
	ob := newObjectBuilder()
	for i := 0; i < n; i++ {
		child := newObjectBuilder()
		child.set("score", Int(int64((i*7919)%n))) // 7919 is prime: a permutation
		ob.set(fmt.Sprintf("k%07d", i), child.build(nil))
	}
	node := ob.build(nil)
	queryBenchNodes.Store(n, node)
	return node
}

func benchQuery(b *testing.B, n int, params map[string]string, want int) {
	node := queryBenchNode(b, n)
	ctx := context.Background()
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q, err := ParseQuery(params)
		if err != nil {
			b.Fatal(err)
		}
		res, err := q.Eval(ctx, node)
		if err != nil {
			b.Fatal(err)
		}
		if res.Len() != want {
			b.Fatalf("%d results, want %d", res.Len(), want)
		}
		buf = AppendQueryResult(buf[:0], res, RenderOptions{})
	}
}

var querySizes = []struct {
	name string
	n    int
}{{"children=10k", 10_000}, {"children=1M", 1_000_000}}

// BenchmarkQueryKeyStartAtLimit10 is orderBy="$key"&startAt=<middle key>&limitToFirst=10.
func BenchmarkQueryKeyStartAtLimit10(b *testing.B) {
	for _, s := range querySizes {
		b.Run(s.name, func(b *testing.B) {
			start := fmt.Sprintf(`"k%07d"`, s.n/2)
			benchQuery(b, s.n, map[string]string{"orderBy": `"$key"`, "startAt": start, "limitToFirst": "10"}, 10)
		})
	}
}

// BenchmarkQueryChildNoIndex is orderBy="score"&startAt=<middle score>&limitToFirst=10
// without an index: a scan of every child keeping the best 10.
func BenchmarkQueryChildNoIndex(b *testing.B) {
	for _, s := range querySizes {
		b.Run(s.name, func(b *testing.B) {
			start := fmt.Sprint(s.n / 2)
			benchQuery(b, s.n, map[string]string{"orderBy": `"score"`, "startAt": start, "limitToFirst": "10"}, 10)
		})
	}
}

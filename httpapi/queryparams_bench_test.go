package httpapi

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// Query benchmarks (issue 3, `make bench`). Each runs the whole read-side
// work of a query GET after the tree lookup: parseQueryParams, Eval and
// AppendQueryResult. The $key benchmark must not grow with the node's size
// (compare children=10k with children=1M); the child-ordered one scans
// every child, which is the number an `.indexOn` index beats
// (fsm/index_bench_test.go).

var queryBenchNodes sync.Map // int → *tree.Node

// queryBenchNode returns an object of n children "k0000000"… whose values
// are {"score": s} with the scores a permutation of 0..n-1 (so a child
// query cannot ride on key order), built once per size.
func queryBenchNode(tb testing.TB, n int) *tree.Node {
	tb.Helper()
	if v, ok := queryBenchNodes.Load(n); ok {
		return v.(*tree.Node)
	}
	ob := tree.NewObjectBuilder()
	for i := 0; i < n; i++ {
		child := tree.NewObjectBuilder()
		child.Set("score", tree.Int(int64((i*7919)%n))) // 7919 is prime: a permutation
		ob.Set(fmt.Sprintf("k%07d", i), child.Build(nil))
	}
	node := ob.Build(nil)
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
		q, err := parseQueryParams(params)
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
		buf = tree.AppendQueryResult(buf[:0], res, tree.RenderOptions{})
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

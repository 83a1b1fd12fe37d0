package tree

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkMemoryPerLeaf is the live heap of a tree of small leaves, as
// scripts/bench/leaves.sh loads it into a cluster: PATCHes of 10,000
// fields {"k0000000":"v0",…} into /leaves. Its figure, B/leaf, is the heap
// after two collections divided by the leaves, without the collector's
// headroom that a node's RSS adds.
//
//	go test -run '^$' -bench MemoryPerLeaf -benchtime 1x ./fsm/tree
func BenchmarkMemoryPerLeaf(b *testing.B) {
	for _, leaves := range []int{100_000, 1_000_000} {
		b.Run(strconv.Itoa(leaves), func(b *testing.B) {
			for range b.N {
				before := liveHeap()
				root := loadLeaves(b, leaves, 10_000)
				after := liveHeap()
				b.ReportMetric(float64(after-before)/float64(leaves), "B/leaf")
				runtime.KeepAlive(root)
			}
		})
	}
}

// loadLeaves writes leaves string leaves under /leaves, batch at a time.
func loadLeaves(tb testing.TB, leaves, batch int) *Node {
	tb.Helper()
	var root *Node
	path := Path{"leaves"}
	for i := 0; i < leaves; i += batch {
		fields := make([]Field, 0, batch)
		for j := i; j < min(i+batch, leaves); j++ {
			fields = append(fields, Field{Path: Path{fmt.Sprintf("k%07d", j)}, Value: String("v" + strconv.Itoa(j))})
		}
		var err error
		if root, _, _, err = Update(root, Write{Path: path}, fields); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

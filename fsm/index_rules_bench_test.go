package fsm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// BenchmarkIndexOnRulesApply is the apply of the rules write that adds
// `.indexOn` over /items of a million children: by the named location,
// and through a wildcard under it (an index at each child, a million of
// them). Each iteration sets the rules with the index and builds it, then
// sets the rules without it (not timed). apply-ms/op is the rules' apply,
// build-ms/op BuildIndexes, which runs outside Apply; ns/op is both, so
// the benchmark's iteration count follows the whole cost (timing the
// apply alone made it run the untimed build thousands of times).
//
//	go test -run '^$' -bench BenchmarkIndexOnRulesApply -benchtime 3x ./fsm/
func BenchmarkIndexOnRulesApply(b *testing.B) {
	const n = 1_000_000
	f := scoresFSM(b, n, "")
	for _, c := range []struct{ name, rules string }{
		{"named", `{"rules": {"items": {".indexOn": "score"}}}`},
		{"wildcard", `{"rules": {"items": {"$k": {".indexOn": "score"}}}}`},
	} {
		b.Run(fmt.Sprintf("%s/children=%d", c.name, n), func(b *testing.B) {
			var apply, build time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				setRules(b, f, `{"rules": {}}`)
				b.StartTimer()
				start := time.Now()
				setRules(b, f, c.rules)
				applied := time.Now()
				if err := f.BuildIndexes(context.Background()); err != nil {
					b.Fatal(err)
				}
				apply += applied.Sub(start)
				build += time.Since(applied)
			}
			b.StopTimer()
			b.ReportMetric(float64(apply.Microseconds())/1000/float64(b.N), "apply-ms/op")
			b.ReportMetric(float64(build.Milliseconds())/float64(b.N), "build-ms/op")
			if f.Root().Get(tree.Path{"items"}).Len() != n {
				b.Fatal("the data changed")
			}
		})
	}
}

// BenchmarkWritesDuringIndexBuild adds `.indexOn` over /items of a
// million children while one-child writes go on, 20 µs apart, and reports
// the longest apply among them (max-apply-ms, the rules' own included)
// and how many were applied while the index was built (writes/op): what
// the build held writes up.
//
//	go test -run '^$' -bench BenchmarkWritesDuringIndexBuild -benchtime 2x ./fsm/
func BenchmarkWritesDuringIndexBuild(b *testing.B) {
	const n = 1_000_000
	f := scoresFSM(b, n, "")
	var longest time.Duration
	writes := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		setRules(b, f, `{"rules": {}}`)
		b.StartTimer()
		done := make(chan error, 1)
		go func() {
			<-f.IndexWork()
			done <- f.BuildIndexes(context.Background())
		}()
		start := time.Now()
		setRules(b, f, `{"rules": {"items": {".indexOn": "score"}}}`)
		longest = max(longest, time.Since(start))
		for building := true; building; writes++ {
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
				building = false
			default:
			}
			time.Sleep(20 * time.Microsecond)
			start := time.Now()
			if _, err := f.applyParsed(Command{Kind: CmdSet, Path: tree.Path{"items", fmt.Sprintf("k%07d", writes%n), "score"},
				Parsed: true, Value: tree.Int(int64(writes))}); err != nil {
				b.Fatal(err)
			}
			longest = max(longest, time.Since(start))
		}
	}
	b.StopTimer()
	if f.cur.Load().indexes.Pending() {
		b.Fatal("the index was not installed")
	}
	b.ReportMetric(float64(longest.Microseconds())/1000, "max-apply-ms")
	b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
}

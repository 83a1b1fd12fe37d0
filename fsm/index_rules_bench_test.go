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
// them). Each iteration sets the rules with the index (timed) and then
// the rules without it (not timed). build-ms/op is BuildIndexes, which
// runs outside Apply.
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
			var build time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				setRules(b, f, `{"rules": {}}`)
				b.StartTimer()
				setRules(b, f, c.rules)
				b.StopTimer()
				start := time.Now()
				if err := f.BuildIndexes(context.Background()); err != nil {
					b.Fatal(err)
				}
				build += time.Since(start)
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(build.Milliseconds())/float64(b.N), "build-ms/op")
			if f.Root().Get(tree.Path{"items"}).Len() != n {
				b.Fatal("the data changed")
			}
		})
	}
}

package fsm

import (
	"fmt"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// BenchmarkIndexOnRulesApply is the apply of the rules write that adds
// `.indexOn` over /items of a million children: by the named location,
// and through a wildcard under it (an index at each child, a million of
// them). Each iteration sets the rules with the index (timed) and then
// the rules without it (not timed).
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
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				setRules(b, f, `{"rules": {}}`)
				b.StartTimer()
				setRules(b, f, c.rules)
			}
			b.StopTimer()
			if f.Root().Get(tree.Path{"items"}).Len() != n {
				b.Fatal("the data changed")
			}
		})
	}
}

package fsm

import (
	"fmt"
	"maps"
	"testing"
)

// BenchmarkDisconnectRegister is the cost, inside Apply, of registering
// one more onDisconnect operation when n sessions hold one each: the
// copy-on-write B-tree the state keeps (btree), against the simplest
// immutable form, a map copied on every change (mapCopy), which the
// B-tree was chosen over. Presence apps register one per client.
//
//	go test -run '^$' -bench BenchmarkDisconnectRegister ./fsm/
func BenchmarkDisconnectRegister(b *testing.B) {
	op := &Command{Kind: CmdSet}
	for _, n := range []int{100, 10_000, 100_000} {
		var set *disconnectSet
		plain := map[Holder][]*Command{}
		for i := range n {
			h := Holder{Node: "n1", Run: "r1", Session: fmt.Sprintf("s%06d", i)}
			set = set.register(h, op)
			plain[h] = []*Command{op}
		}
		next := Holder{Node: "n1", Run: "r1", Session: "new"}
		b.Run(fmt.Sprintf("btree/sessions=%d", n), func(b *testing.B) {
			for range b.N {
				_ = set.register(next, op)
			}
		})
		b.Run(fmt.Sprintf("mapCopy/sessions=%d", n), func(b *testing.B) {
			for range b.N {
				m := maps.Clone(plain)
				m[next] = append(m[next], op)
			}
		})
	}
}

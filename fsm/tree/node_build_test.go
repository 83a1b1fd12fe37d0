package tree

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestBuilderLargeObjects builds objects past lazyChildren members, in
// key order, in no order, with members repeated and removed (a later
// null), and checks them against their lane sum and size recomputed
// child by child, and against the same members given once, in order.
func TestBuilderLargeObjects(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, n := range []int{10, lazyChildren - 1, lazyChildren + 1, 3 * lazyChildren} {
		for _, shuffle := range []bool{false, true} {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%d", i) // "k10" sorts before "k2": not the insertion order
			}
			slices.SortFunc(keys, CompareKeys)
			var body, want strings.Builder
			body.WriteByte('{')
			want.WriteByte('{')
			order := r.Perm(n)
			if !shuffle {
				slices.Sort(order)
			}
			final := map[string]string{}
			for _, i := range order {
				k := keys[i]
				switch r.Intn(10) {
				case 0: // repeated: the last one wins
					fmt.Fprintf(&body, "%q:%d,", k, i+1)
				case 1: // removed again
					fmt.Fprintf(&body, "%q:%d,%q:null,", k, i, k)
					continue
				}
				fmt.Fprintf(&body, "%q:%d,", k, i)
				final[k] = fmt.Sprint(i)
			}
			body.WriteString(`"zz":1}`)
			for _, k := range keys {
				if v, ok := final[k]; ok {
					fmt.Fprintf(&want, "%q:%s,", k, v)
				}
			}
			want.WriteString(`"zz":1}`)
			got, err := ParseBody([]byte(body.String()), MaxDepth)
			if err != nil {
				t.Fatal(err)
			}
			canon, err := ParseBody([]byte(want.String()), MaxDepth)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffNodes(canon, got, fmt.Sprintf("%d members (shuffled %v)", n, shuffle)); d != "" {
				t.Fatal(d)
			}
			var parts [][]entry
			size := int64(2)
			got.obj.children.Walk(func(items []entry) bool {
				parts = append(parts, items)
				for _, e := range items {
					size += entrySize(e.key, e.node)
				}
				return true
			})
			if got.sumLanes() != digestParts(parts) || got.obj.size != size {
				t.Fatalf("%d members (shuffled %v): lane sum or size (%d, want %d) differ from their children's", n, shuffle, got.obj.size, size)
			}
		}
	}
}

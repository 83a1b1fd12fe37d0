package tree

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// TestStreamedLeafDigestIsTheSame: a leaf streamed into the hash (long
// strings) hashes exactly as one hashed from the stack, priority or not.
func TestStreamedLeafDigestIsTheSame(t *testing.T) {
	leaves := []*Node{Bool(true), Int(-7), Float(2.5), String(""), String("short")}
	for _, k := range []int{100, 141, 142, 160, 4095, 4096, 4097, 10000} {
		leaves = append(leaves, String(strings.Repeat("é", k/2)+strings.Repeat("x", k%2)))
	}
	for _, leaf := range leaves {
		for _, prio := range []*Node{nil, Int(3), String("p"), String(strings.Repeat("q", 300))} {
			n := leaf.WithPriority(prio)
			var arr []byte
			arr = prioBytes(arr, n.prio)
			arr = leafBytes(arr, n)
			want := sha256.Sum256(arr)
			if got := streamedLeafDigest(n); got != want {
				t.Errorf("%d-byte %v with priority %v: streamed digest differs", len(n.s), n.kind, prio)
			}
			if got := leafDigest(n); got != want {
				t.Errorf("%d-byte %v with priority %v: digest differs", len(n.s), n.kind, prio)
			}
		}
	}
}

// TestLeafEqualAgreesWithHash: Equal compares leaves without hashing
// them, and must say what comparing their hashes says.
func TestLeafEqualAgreesWithHash(t *testing.T) {
	var leaves []*Node
	for _, v := range []*Node{Bool(true), Bool(false), Int(0), Int(1), Float(0), Float(1), Float(2.5), String(""), String("1"), String("x")} {
		for _, prio := range []*Node{nil, Int(1), Float(1), String("1")} {
			leaves = append(leaves, v.WithPriority(prio))
		}
	}
	for _, a := range leaves {
		for _, b := range leaves {
			if got, want := a.Equal(b), a.hash() == b.hash(); got != want {
				t.Errorf("%v (priority %v) vs %v (priority %v): Equal %v, hashes equal %v", a.kind, a.prio, b.kind, b.prio, got, want)
			}
		}
	}
}

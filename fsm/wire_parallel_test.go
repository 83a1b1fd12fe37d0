package fsm

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestWireFieldsParallel decodes PATCH entries of many fields, whole,
// cut short and with a byte changed, with the fields shared among
// goroutines and read one after the other: commands and errors must be
// the same.
func TestWireFieldsParallel(t *testing.T) {
	g := newMergeGen(5)
	defer func(n int) { wireParallelFields = n }(wireParallelFields)
	decodeBoth := func(data []byte) string {
		wireParallelFields = 1 << 30
		seq, errSeq := DecodeCommand(data)
		wireParallelFields = 2
		par, errPar := DecodeCommand(data)
		if fmt.Sprint(errSeq) != fmt.Sprint(errPar) {
			return fmt.Sprintf("errors %v vs %v", errSeq, errPar)
		}
		if d := diffFields(seq.Fields, par.Fields); d != "" {
			return d
		}
		if seq.IfMatch != par.IfMatch || seq.Now != par.Now || seq.WriteLimit != par.WriteLimit || seq.Rand != par.Rand {
			return "trailers differ"
		}
		return ""
	}
	for round := range 40 {
		fields, err := ParseUpdate([]byte(g.patch(5+g.r.Intn(60))), MaxDepth)
		if err != nil {
			t.Fatal(err)
		}
		c := Command{Kind: CmdUpdate, Path: Path{"x"}, Parsed: true, Fields: fields, IfMatch: "e", HasIfMatch: true, Now: 7, WriteLimit: 9}
		data := c.EncodeParsed()
		// Whole, the fields are shared and read to their end.
		wireParallelFields = 2
		d := decoder{b: appendWireFields(nil, fields)}
		shared := make([]Field, d.uvarint()-1)
		if !d.wireFieldsParallel(shared) || len(d.b) != 0 {
			t.Fatalf("round %d: %d fields not shared, or not to their end (%d bytes left)", round, len(shared), len(d.b))
		}
		d = decoder{b: appendWireFields(nil, fields)}
		read := make([]Field, d.uvarint()-1)
		if !d.readFields(read) {
			t.Fatalf("round %d: %v", round, d.err)
		}
		if d := diffFields(read, shared); d != "" {
			t.Fatalf("round %d: %s", round, d)
		}
		if d := decodeBoth(data); d != "" {
			t.Fatalf("round %d: %s", round, d)
		}
		for i := 3; i < len(data); i++ {
			if d := decodeBoth(data[:i]); d != "" {
				t.Fatalf("round %d, cut at %d: %s", round, i, d)
			}
			changed := append([]byte(nil), data...)
			changed[i] ^= byte(1 + g.r.Intn(255))
			if d := decodeBoth(changed); d != "" {
				t.Fatalf("round %d, byte %d changed: %s", round, i, d)
			}
		}
	}
}

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
			got.children.Walk(func(items []entry) bool {
				parts = append(parts, items)
				for _, e := range items {
					size += entrySize(e.key, e.node)
				}
				return true
			})
			if got.sumLanes() != digestParts(parts) || got.size != size {
				t.Fatalf("%d members (shuffled %v): lane sum or size (%d, want %d) differ from their children's", n, shuffle, got.size, size)
			}
		}
	}
}

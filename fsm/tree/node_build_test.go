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

// TestCarryOverMatchesTheMerge: an object's size keeps its history (a
// priority it had); CarryOver gives another object built from the same
// children exactly what a merge into the old one gives.
func TestCarryOverMatchesTheMerge(t *testing.T) {
	plain := mustParseBody(t, `{"a":1,"b":{"c":"x"}}`)
	if h := plain.SizeBeyondChildren(); h != 0 {
		t.Fatalf("built from its children: %d beyond", h)
	}
	withPrio := mustParseBody(t, `{"a":1,"b":{"c":"x"},".priority":"p"}`)
	lost := withPrio.WithPriority(nil)
	if lost.SizeBeyondChildren() == 0 || lost.Size() != withPrio.Size() {
		t.Fatalf("a priority removed keeps the size: %d, beyond %d", lost.Size(), lost.SizeBeyondChildren())
	}
	if (*Node)(nil).SizeBeyondChildren() != 0 || EntrySize("k", nil) != 0 || EntrySize("k", Int(1)) != 1+4+Int(1).Size() {
		t.Fatal("nil nodes and entries")
	}
	fields := []Field{{Path: Path{"a"}, Value: nil}, {Path: Path{"d"}, Value: Int(4)}}
	for _, old := range []*Node{plain, withPrio, lost, nil} {
		merged, err := UpdateCounted(old, Write{}, fields)
		if err != nil {
			t.Fatal(err)
		}
		rebuilt, err := UpdateCounted(nil, Write{}, []Field{{Path: Path{"b"}, Value: old.Child("b")}, {Path: Path{"d"}, Value: Int(4)}})
		if err != nil {
			t.Fatal(err)
		}
		got := rebuilt.Root.CarryOver(old, 0)
		if got.Size() != merged.Root.Size() || got.ETag() != merged.Root.ETag() {
			t.Errorf("size %d, etag %s; the merge's %d, %s", got.Size(), got.ETag(), merged.Root.Size(), merged.Root.ETag())
		}
	}
}

// TestWithoutSharedKeepsWhatChanged: the children a merge made or changed,
// as an object built from them, and the keys of base's changed ones.
func TestWithoutSharedKeepsWhatChanged(t *testing.T) {
	base := mustParseBody(t, `{"a":1,"b":{"c":"x"},"d":3,"e":{"f":1},".priority":"p"}`)
	u, err := UpdateCounted(base, Write{}, []Field{
		{Path: Path{"b", "c"}, Value: String("y")}, {Path: Path{"d"}, Value: nil},
		{Path: Path{"g"}, Value: Int(7)}, {Path: Path{"0"}, Value: Bool(true)}})
	if err != nil {
		t.Fatal(err)
	}
	got, changed := u.Root.WithoutShared(base, 10)
	want := mustParseBody(t, `{"0":true,"b":{"c":"y"},"g":7}`)
	if got.ETag() != want.ETag() || got.Size() != want.Size() || got.Priority() != nil {
		t.Fatalf("kept %s (size %d), want %s (size %d)", renderExport(got), got.Size(), renderExport(want), want.Size())
	}
	if fmt.Sprint(changed) != "[b d]" {
		t.Fatalf("changed %v, want [b d]", changed)
	}
	if got, changed := base.WithoutShared(base, 10); got != nil || len(changed) != 0 {
		t.Fatalf("nothing changed: %v %v", got, changed)
	}
	if got, changed := Int(1).WithoutShared(base, 10); got != nil || changed != nil {
		t.Fatal("a leaf")
	}
	if got, changed := (*Node)(nil).WithoutShared(base, 10); got != nil || len(changed) != base.Len() {
		t.Fatalf("nothing left: %v %v", got, changed)
	}
	if got, changed := u.Root.WithoutShared(base, 1); got != nil || changed != nil {
		t.Fatalf("over the bound: %v %v", got, changed)
	}
}

// TestWithMemberAsTheBuilder: a member added to an object is the one an
// ObjectBuilder would have set, ".priority" included.
func TestWithMemberAsTheBuilder(t *testing.T) {
	b := NewObjectBuilder()
	b.Set("a", Int(1))
	b.Set(".priority", String("p"))
	b.Set("z", Bool(true))
	want := b.Build(nil)
	got := (*Node)(nil).WithMember("a", Int(2)).WithMember("z", Bool(true)).WithMember("a", Int(1)).WithMember(".priority", String("p"))
	if got.ETag() != want.ETag() || got.Size() != want.Size() || renderExport(got) != renderExport(want) || got.Priority() != nil {
		t.Fatalf("got %s (size %d), want %s (size %d)", renderExport(got), got.Size(), renderExport(want), want.Size())
	}
}

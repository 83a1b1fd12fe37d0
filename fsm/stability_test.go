package fsm

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unsafe"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestETagsAreStable pins content hashes and sizes computed by an earlier
// release. Both are part of Apply (if-match compares ETags, write limits
// add sizes), so every release must compute them exactly alike or replicas
// of a mixed-version cluster would disagree; a change to how nodes store
// their hashes must not change a single one.
func TestETagsAreStable(t *testing.T) {
	f := newTestFSM()
	for _, c := range randomCommands(5, 200) {
		f.apply(c)
	}
	body, err := tree.ParseBody([]byte(`{"a":{".priority":1.5,"x":{".value":"s",".priority":"p"},"y":[1,2.5,true,null,"z"]},"b":{".sv":{"increment":2}},"c":{".sv":{"increment":2.5}}}`), tree.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		root *tree.Node
		path string
		etag string
		size int64
	}{
		{f.Root(), "", "izj9M84wN1oMkpkI2et0WveqC2w=", 147},
		{f.Root(), "/0", "Gci1YPh0L65axHszFsq388PUMzQ=", 66},
		{f.Root(), "/0/10", "s2H/7Wy8EKQxsPeMz+5GBtMSrMw=", 58},
		{f.Root(), "/0/10/0", "b07soRBbCT2tD1oMKcu0Bydq2xI=", 42},
		{f.Root(), "/0/10/0/x", "qpL3BLNa/1Z4qYHAZQUTB8OZykE=", 35},
		{f.Root(), "/0/10/q", "vWGoOvgzovI6LItojVE2JiDbIrg=", 4},
		{body, "", "O0qqnXrnz1NmT8VQXdGou4CA+is=", 129},
		{body, "/a", "fVh0IUI9Bl8OGsAbhJEvWzIivnM=", 112},
		{body, "/a/x", "/SWKd86NyjP4ErqEYuGkdKBdXek=", 30},
		{body, "/a/y", "toZPSyTh5sgs8k1nKbfKx7aF9T8=", 46},
		{body, "/a/y/0", "BOVHwJREqgDEYLqZUSnqJMLJKF8=", 8},
		{body, "/a/y/1", "5XafxAp/3XHLmDazOUYc65Q3ErY=", 8},
		{body, "/a/y/2", "+7We0Q6c1P9FoSxbuSy9gN+YS6E=", 5},
		{body, "/a/y/4", "lJVCKJNwv23sbfy3Ci4hVrZsLwQ=", 3},
	}
	for _, tt := range tests {
		n := tt.root.Get(mustPath(t, tt.path))
		if n.ETag() != tt.etag || n.Size() != tt.size {
			t.Errorf("%q: ETag %s size %d, want %s %d", tt.path, n.ETag(), n.Size(), tt.etag, tt.size)
		}
	}
}

// TestNodeLayout guards the memory of a leaf: a million of them should
// stay near 100 MB (see Node).
func TestNodeLayout(t *testing.T) {
	if got := unsafe.Sizeof(tree.Node{}); got > 96 {
		t.Errorf("a Node takes %d bytes, want at most 96", got)
	}
}

// TestApplyHistoryIsStable replays random writes — PATCHes of many fields
// with nested paths, priorities, nulls and server values, PUTs, failures —
// and compares every result, every root ETag and the final snapshot with
// what an earlier build computed (the snapshot digest is that of snapshot
// format 1; a body that does not parse never reaches the log, so it takes
// no index): replicas running different releases must agree on every
// entry.
func TestApplyHistoryIsStable(t *testing.T) {
	want := map[int64]string{
		1: "14c3afc6b254cfb2 5002e2f58701a9e8acbb4a97b0c9dc375c0ac2df90c16cb086068252886ad6aa",
		2: "010a3ba25e20575b 49192e2f28694a6984b48cff0149fc5f78fed09e7dfe65a09c27483fb7327263",
		3: "24efc5e2c4bcd8da 52dd99b4f392b2b188a809397ae524fcef62717fa25c0bfccdd6f2d8ad71fc00",
		4: "4bad468d4ce1809d b1b5f51d68e9793c1099f66cc16aa9b73ca8c08949607b5b992af42009db84e3",
		5: "31e90264d79c0d41 0519656a46e37f1fe66c938ef834e781a7e8ffd4803fbf2d994ddc889880c634",
		6: "54900e54d6ff4d24 924674490bc6a59f0998013a10f3be19f8c6025d421c5b373e7bec2eff6f429f",
	}
	keys := []string{"a", "b", "c", "0", "1", "10", "z", ".priority"}
	vals := []string{"null", "1", "2.5", `"s"`, `{"x":1,"y":{"z":true}}`, `{".value":"p",".priority":3}`, `{".sv":{"increment":2}}`, `{".sv":"timestamp"}`, `[1,null,2]`, `{}`, `{"a":null}`}
	for seed := int64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewSource(seed))
		f := newTestFSM()
		h := sha256.New()
		for i := 0; i < 300; i++ {
			base := tree.Path{}
			for d := r.Intn(3); d > 0; d-- {
				base = append(base, keys[r.Intn(len(keys)-1)])
			}
			var c Command
			c.Now = 1700000000000 + int64(i)
			c.WriteLimit = int64(r.Intn(3) * 60)
			if r.Intn(3) == 0 {
				c.Kind, c.Path = CmdSet, base
				c.Body = []byte(vals[r.Intn(len(vals))])
			} else {
				c.Kind, c.Path = CmdUpdate, base
				var sb strings.Builder
				sb.WriteByte('{')
				for j := r.Intn(8); j >= 0; j-- {
					if sb.Len() > 1 {
						sb.WriteByte(',')
					}
					var p []string
					for d := 1 + r.Intn(3); d > 0; d-- {
						p = append(p, keys[r.Intn(len(keys))])
					}
					fmt.Fprintf(&sb, "%q:%s", strings.Join(p, "/"), vals[r.Intn(len(vals))])
				}
				sb.WriteByte('}')
				c.Body = []byte(sb.String())
			}
			res, err := f.apply(c)
			fmt.Fprintf(h, "%d %v %s %s %s|", i, err, res.ETag, renderExport(res.Value), f.Root().ETag())
			for _, fl := range res.Fields {
				fmt.Fprintf(h, "%s=%s ", fl.Path, renderExport(fl.Value))
			}
		}
		got := fmt.Sprintf("%x %x", h.Sum(nil)[:8], sha256.Sum256(snapshotBytes(t, f.FSM)))
		if got != want[seed] {
			t.Errorf("seed %d: results and snapshot digest %s, an earlier release had %s", seed, got, want[seed])
		}
	}
}

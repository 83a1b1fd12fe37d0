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
// format 1): replicas running different releases must agree on every
// entry.
func TestApplyHistoryIsStable(t *testing.T) {
	want := map[int64]string{
		1: "14c3afc6b254cfb2 7d1dee95aeb3dfe9ed1f22f5a88714ddba9bb3d74a09ca47840ea771c0f89bdc",
		2: "010a3ba25e20575b 6874aff6a7f2dd82473348178e3a793e92b6ebdfc52dc11b116381bd633c6fe0",
		3: "24efc5e2c4bcd8da d54d5564b0be39414f4aceb2aa29f9b81c32ced85a2d344f3c2ced3b7b3309ff",
		4: "4bad468d4ce1809d 0e02dc40fad6b47c982f4d707f49aee880a2690e0f7919b942c38433a4cd872f",
		5: "31e90264d79c0d41 788157a8dc1768f69706c505643d76d85a8c591ed3cfea4ad632df21af2160a6",
		6: "54900e54d6ff4d24 120596a3b20bc547b96deebce8a5677893bd2b38d27e8408597c15316f30bfcf",
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

package fsm

import (
	"errors"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestTreeSteps runs sequences of writes and checks the whole tree after each.
func TestTreeSteps(t *testing.T) {
	type step struct {
		kind    CommandKind
		path    string
		body    string
		want    string // whole tree afterwards, compact JSON
		wantErr error
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"put get overwrite", []step{
			{CmdSet, "/", `{"users":{"jack":{"name":"Jack","age":31}}}`, `{"users":{"jack":{"age":31,"name":"Jack"}}}`, nil},
			{CmdSet, "/users/jack/name", `"J"`, `{"users":{"jack":{"age":31,"name":"J"}}}`, nil},
			{CmdSet, "/users/jack", `{"x":true}`, `{"users":{"jack":{"x":true}}}`, nil},
			{CmdSet, "/users/jack/x", ``, `null`, nil},
		}},
		{"null and empty prune", []step{
			{CmdSet, "/a/b/c", `1`, `{"a":{"b":{"c":1}}}`, nil},
			{CmdSet, "/a/b", `{}`, `null`, nil},
			{CmdSet, "/a", `{"x":null,"y":{"z":null},"k":2}`, `{"a":{"k":2}}`, nil},
			{CmdSet, "/a/k", `null`, `null`, nil},
		}},
		{"leaf becomes object and back", []step{
			{CmdSet, "/a", `5`, `{"a":5}`, nil},
			{CmdSet, "/a/b", `6`, `{"a":{"b":6}}`, nil},
			{CmdSet, "/a", `5.5`, `{"a":5.5}`, nil},
			{CmdSet, "/a", `5.0`, `{"a":5.0}`, nil},
		}},
		{"patch multi-path", []step{
			{CmdSet, "/users", `{"alan":{"nick":"a","full":"Alan"},"grace":{"nick":"g"}}`, `{"users":{"alan":{"full":"Alan","nick":"a"},"grace":{"nick":"g"}}}`, nil},
			{CmdUpdate, "/users", `{"alan/nick":"A","grace/nick":null,"bob":{"n":1}}`, `{"users":{"alan":{"full":"Alan","nick":"A"},"bob":{"n":1}}}`, nil},
			{CmdUpdate, "/users", `{"alan":{"only":1}}`, `{"users":{"alan":{"only":1},"bob":{"n":1}}}`, nil},
			{CmdUpdate, "/users", `{"a":1,"a/b":2}`, `{"users":{"alan":{"only":1},"bob":{"n":1}}}`, tree.ErrInvalidData},
			{CmdUpdate, "/users", `null`, `null`, nil},
		}},
		{"arrays", []step{
			{CmdSet, "/l", `["a","b",null,"d"]`, `{"l":["a","b",null,"d"]}`, nil},
			{CmdSet, "/l/1", `null`, `{"l":["a",null,null,"d"]}`, nil},
			{CmdSet, "/l/0", `null`, `{"l":{"3":"d"}}`, nil},
		}},
		{"increment", []step{
			{CmdSet, "/c", `{".sv":{"increment":2}}`, `{"c":2}`, nil},
			{CmdSet, "/c", `{".sv":{"increment":3}}`, `{"c":5}`, nil},
			{CmdSet, "/c", `{".sv":{"increment":0.5}}`, `{"c":5.5}`, nil},
			{CmdSet, "/c", `9223372036854775807`, `{"c":9223372036854775807}`, nil},
			{CmdSet, "/c", `{".sv":{"increment":1}}`, `{"c":9223372036854776000.0}`, nil},
			{CmdSet, "/s", `"x"`, `{"c":9223372036854776000.0,"s":"x"}`, nil},
			{CmdUpdate, "/", `{"s":{".sv":{"increment":4}}}`, `{"c":9223372036854776000.0,"s":4}`, nil},
		}},
		{"timestamp", []step{
			{CmdSet, "/t", `{"at":{".sv":"timestamp"}}`, `{"t":{"at":1700000000000}}`, nil},
			{CmdSet, "/t", `{".sv":"bogus"}`, `{"t":{"at":1700000000000}}`, tree.ErrInvalidData},
		}},
		{"priorities", []step{
			{CmdSet, "/p", `{".value":"v",".priority":3}`, `{"p":"v"}`, nil},
			{CmdSet, "/p/.priority", `"hi"`, `{"p":"v"}`, nil},
			{CmdSet, "/p/.priority", `true`, `{"p":"v"}`, tree.ErrInvalidData},
		}},
		{"key order", []step{
			{CmdSet, "/", `{"b":1,"a":1,"10":1,"9":1,"-1":1,"007":1,"7":1,"\uf8ff":1,"😀":1}`, "{\"-1\":1,\"7\":1,\"007\":1,\"9\":1,\"10\":1,\"a\":1,\"b\":1,\"😀\":1,\"\uf8ff\":1}", nil},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestFSM()
			for i, st := range tc.steps {
				_, err := f.apply(cmd(t, st.kind, st.path, st.body))
				if st.wantErr != nil {
					if !errors.Is(err, st.wantErr) {
						t.Fatalf("step %d: err = %v, want %v", i, err, st.wantErr)
					}
				} else if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := render(f.Root()); got != st.want {
					t.Fatalf("step %d: tree = %s\nwant %s", i, got, st.want)
				}
			}
		})
	}
}

func TestPriorityExport(t *testing.T) {
	f := newTestFSM()
	if _, err := f.apply(cmd(t, CmdSet, "/p", `{"a":{".value":1,".priority":"x"},".priority":2}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := renderExport(f.Root()), `{"p":{".priority":2,"a":{".value":1,".priority":"x"}}}`; got != want {
		t.Fatalf("export = %s, want %s", got, want)
	}
	if got := render(f.Root().Get(tree.Path{"p"}).Priority()); got != "2" {
		t.Fatalf("priority = %s", got)
	}
}

func TestIfMatch(t *testing.T) {
	f := newTestFSM()
	c := cmd(t, CmdSet, "/a", `1`)
	c.HasIfMatch, c.IfMatch = true, "null_etag"
	res, err := f.apply(c)
	if err != nil {
		t.Fatal(err)
	}
	etag := res.ETag
	if etag != f.Root().Get(tree.Path{"a"}).ETag() {
		t.Fatalf("result etag %s differs from node etag", etag)
	}
	c2 := cmd(t, CmdSet, "/a", `2`)
	c2.HasIfMatch, c2.IfMatch = true, "null_etag"
	_, err = f.apply(c2)
	var pe *PreconditionError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPreconditionFailed) || render(pe.Current) != "1" {
		t.Fatalf("err = %v, want precondition failure with current 1", err)
	}
	c2.IfMatch = etag
	if _, err := f.apply(c2); err != nil || render(f.Root()) != `{"a":2}` {
		t.Fatalf("matching if-match: err %v tree %s", err, render(f.Root()))
	}
}

func TestETagChangesWithContent(t *testing.T) {
	f := newTestFSM()
	seen := map[string]bool{}
	for _, body := range []string{`{"a":1}`, `{"a":1.0}`, `{"a":"1"}`, `{"a":true}`, `{"a":{"b":1}}`, `{"b":1}`, `{".value":1,".priority":1}`} {
		if _, err := f.apply(cmd(t, CmdSet, "/x", body)); err != nil {
			t.Fatal(err)
		}
		e := f.Root().ETag()
		if seen[e] {
			t.Fatalf("etag %s repeated for %s", e, body)
		}
		seen[e] = true
	}
	// The same content reached by different histories has the same ETag.
	g := newTestFSM()
	for _, c := range []Command{cmd(t, CmdSet, "/x/a", `1`), cmd(t, CmdSet, "/x/b", `2`), cmd(t, CmdSet, "/x/a", ``)} {
		if _, err := g.apply(c); err != nil {
			t.Fatal(err)
		}
	}
	h := newTestFSM()
	if _, err := h.apply(cmd(t, CmdSet, "/", `{"x":{"b":2}}`)); err != nil {
		t.Fatal(err)
	}
	if g.Root().ETag() != h.Root().ETag() {
		t.Fatal("equal trees have different ETags")
	}
}

func TestWriteLimit(t *testing.T) {
	f := newTestFSM()
	if _, err := f.apply(cmd(t, CmdSet, "/big", `"`+string(make([]byte, 0))+`xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"`)); err != nil {
		t.Fatal(err)
	}
	c := cmd(t, CmdSet, "/big", ``)
	c.WriteLimit = 10
	if _, err := f.apply(c); !errors.Is(err, tree.ErrTooLarge) {
		t.Fatalf("deleting 60 bytes with a 10-byte limit: err = %v", err)
	}
	if f.Root() == nil {
		t.Fatal("refused write changed the tree")
	}
}

func TestPushKeysIncrease(t *testing.T) {
	f := newTestFSM()
	var last string
	for i := 0; i < 5000; i++ {
		c := cmd(t, CmdPush, "/list", `1`)
		// Clock goes backwards and repeats: keys must still increase.
		c.Now = 1700000000000 - int64(i%7)
		c.Rand = [12]byte{byte(i), 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63}
		res, err := f.apply(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Name) != 20 || res.Name <= last {
			t.Fatalf("key %d %q not after %q", i, res.Name, last)
		}
		last = res.Name
	}
	if n := f.Root().Get(tree.Path{"list"}).Len(); n != 5000 {
		t.Fatalf("%d children, want 5000", n)
	}
}

func TestCompareKeysAndUTF16(t *testing.T) {
	ordered := []string{"-2147483648", "-1", "0", "1", "01", "2", "10", "2147483647", "-", "-a", "2147483648", "A", "a", "aa", "b", "😀", "\U0010ffff", "\uffff"}
	for i := range ordered {
		for j := range ordered {
			got := tree.CompareKeys(ordered[i], ordered[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got != want {
				t.Errorf("CompareKeys(%q, %q) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

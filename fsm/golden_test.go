package fsm

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite fsm/testdata/golden (only for a NEW format version: old files must keep decoding)")

// goldenCommands are one entry of every kind, as this release writes them.
// Files written by earlier releases stay in testdata/golden forever: every
// later release must decode and apply them (SPEC §9, rolling upgrades).
func goldenCommands() map[string]Command {
	return map[string]Command{
		"v1_set.bin": {Kind: CmdSet, Path: tree.Path{"users", "jack"}, Body: []byte(`{"name":"Jack","n":1,"at":{".sv":"timestamp"}}`),
			Now: 1700000000123, WriteLimit: 16 << 20},
		"v1_set_ifmatch.bin": {Kind: CmdSet, Path: tree.Path{"users", "jack", "n"}, Body: []byte(`{".sv":{"increment":2.5}}`),
			HasIfMatch: true, IfMatch: "null_etag", Now: 1700000000124},
		"v1_delete.bin": {Kind: CmdSet, Path: tree.Path{"gone"}, Now: 1700000000125},
		"v1_update.bin": {Kind: CmdUpdate, Path: tree.Path{"users"}, Body: []byte(`{"jack/name":"J","jill":{"a":[1,2]},"x":null}`),
			Now: 1700000000126},
		"v1_push.bin": {Kind: CmdPush, Path: tree.Path{"log"}, Body: []byte(`"hello"`), Now: 1700000000127,
			Rand: [12]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 63}},
		"v1_priority.bin": {Kind: CmdSet, Path: tree.Path{"users", ".priority"}, Body: []byte(`7`), Now: 1700000000128},
	}
}

// goldenOrder applies the golden entries in this order to build the golden snapshot.
var goldenOrder = []string{"v1_set.bin", "v1_set_ifmatch.bin", "v1_delete.bin", "v1_update.bin", "v1_push.bin", "v1_priority.bin"}

const goldenTree = `{"log":{"-NjEtLWz0123456789Az":"hello"},"users":{".priority":7,"jack":{"at":1700000000123,"n":1,"name":"J"},"jill":{"a":{"0":1,"1":2}}}}`

func TestGoldenEntriesAndSnapshot(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	if *updateGolden {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, c := range goldenCommands() {
			if err := os.WriteFile(filepath.Join(dir, name), c.Encode(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := goldenCommands()
	f := newTestFSM()
	for _, name := range goldenOrder {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeCommand(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w := want[name]; !reflect.DeepEqual(got, w) {
			t.Fatalf("%s decodes to %+v, want %+v", name, got, w)
		}
		if _, err := f.apply(got); err != nil && name != "v1_set_ifmatch.bin" {
			t.Fatalf("%s: apply: %v", name, err)
		}
	}
	if got := renderExport(f.Root()); got != goldenTree {
		t.Fatalf("tree after golden entries:\n got %s\nwant %s", got, goldenTree)
	}
	snapFile := filepath.Join(dir, "v1_snapshot.bin")
	if *updateGolden {
		if err := os.WriteFile(snapFile, snapshotBytes(t, f.FSM), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(snapFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readSnapshot(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := renderExport(st.root); got != goldenTree {
		t.Fatalf("golden snapshot tree:\n got %s\nwant %s", got, goldenTree)
	}
	if st.index != uint64(len(goldenOrder)) {
		t.Fatalf("golden snapshot index %d", st.index)
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {9, 1, 0}, {1, 9, 0}, {1, 1, 0, 200}, {0, 1, 0}} {
		if _, err := DecodeCommand(b); err == nil {
			t.Errorf("DecodeCommand(%v) succeeded", b)
		}
	}
}

package fsm

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

var updateGolden = flag.Bool("update-golden", false, "write missing fsm/testdata/golden files (a NEW format's): committed files must keep decoding")

// The golden entries are one or more entries of every kind of entry
// format 1, the format of release v0.1.0, and the golden snapshot is a
// snapshot of format 1. Files of a released format stay in
// testdata/golden forever: every later release must decode and apply them
// (SPEC §9, rolling upgrades). -update-golden writes only missing files.

// goldenCommands are the writes (kinds CmdSet, CmdUpdate, CmdPush) as a
// client sends them; their entries carry the bodies parsed.
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

// goldenOrder applies the golden entries in this order.
var goldenOrder = []string{"v1_set.bin", "v1_set_ifmatch.bin", "v1_delete.bin", "v1_update.bin", "v1_push.bin", "v1_priority.bin"}

// goldenTree is the tree the goldenOrder entries build.
const goldenTree = `{"log":{"-NjEtLWz0123456789Az":"hello"},"users":{".priority":7,"jack":{"at":1700000000123,"n":1,"name":"J"},"jill":{"a":{"0":1,"1":2}}}}`

// goldenRules and the judged entries follow the golden writes (indexes
// 1 to 6), so the rules are those of index 7.
const goldenRules = `{"rules": {".read": true, "users": {"$uid": {".write": "auth.uid == $uid"}}}}`

// goldenJudged are the entries of kinds CmdSetRules, CmdAs and
// CmdAsPrejudged, applied in this order after the golden writes.
func goldenJudged(t *testing.T) []goldenEntry {
	jill := parsedSet(t, "/users/jill/name", `"Jill"`)
	jill.Now, jill.As = 1700000000129, &Access{Auth: map[string]any{"uid": "jill"}}
	jack := parsedSet(t, "/users/jack/n", `2`)
	jack.Now, jack.As, jack.Prejudged, jack.PrejudgedRules = 1700000000130, &Access{OpenIfUnset: true}, true, 7
	return []goldenEntry{
		{"v1_rules.bin", Command{Kind: CmdSetRules, Body: []byte(goldenRules), Now: 1700000000128}},
		{"v1_as.bin", jill},
		{"v1_as_prejudged.bin", jack},
	}
}

// goldenJudgedTree is the tree after the judged entries.
const goldenJudgedTree = `{"log":{"-NjEtLWz0123456789Az":"hello"},"users":{".priority":7,"jack":{"at":1700000000123,"n":2,"name":"J"},"jill":{"a":{"0":1,"1":2},"name":"Jill"}}}`

type goldenEntry struct {
	name string
	c    Command
}

// checkGolden writes the file for c if asked and missing, then checks
// that it is c's entry as this release encodes it, decodes to a command
// encoding the same, and returns it.
func checkGolden(t *testing.T, e goldenEntry) []byte {
	t.Helper()
	file := filepath.Join("testdata", "golden", e.name)
	if _, err := os.Stat(file); *updateGolden && os.IsNotExist(err) {
		if err := os.WriteFile(file, e.c.Encode(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, e.c.Encode()) {
		t.Fatalf("%s: this build encodes differently from the committed entry", e.name)
	}
	if want := e.name[1] - '0'; data[0] != want {
		t.Fatalf("%s: entry format %d, want %d", e.name, data[0], want)
	}
	got, err := DecodeCommand(data)
	if err != nil {
		t.Fatalf("%s: %v", e.name, err)
	}
	if !bytes.Equal(got.Encode(), data) {
		t.Fatalf("%s decodes to %+v, which encodes differently", e.name, got)
	}
	return data
}

// TestGoldenEntriesAndSnapshot pins entry format 1 and snapshot format 1:
// every kind's committed entries decode and build the golden trees, and
// the committed snapshot restores the last one with its rules.
func TestGoldenEntriesAndSnapshot(t *testing.T) {
	kinds := map[CommandKind]bool{}
	parsed := newTestFSM()
	for _, name := range goldenOrder {
		p, ok := parsedTwin(goldenCommands()[name])
		if !ok {
			t.Fatalf("%s: body does not parse", name)
		}
		data := checkGolden(t, goldenEntry{name, p})
		kinds[CommandKind(data[1])] = true
		parsed.index++
		if r := parsed.Apply(Entry{Index: parsed.index, Command: true, Data: data}); r.Err != nil && name != "v1_set_ifmatch.bin" {
			t.Fatalf("%s: apply: %v", name, r.Err)
		}
	}
	if got := renderExport(parsed.Root()); got != goldenTree {
		t.Fatalf("tree after golden entries:\n got %s\nwant %s", got, goldenTree)
	}
	for _, e := range goldenJudged(t) {
		data := checkGolden(t, e)
		kinds[CommandKind(data[1])] = true
		parsed.index++
		if r := parsed.Apply(Entry{Index: parsed.index, Command: true, Data: data}); r.Err != nil {
			t.Fatalf("%s: apply: %v", e.name, r.Err)
		}
	}
	if got := renderExport(parsed.Root()); got != goldenJudgedTree {
		t.Fatalf("tree after judged golden entries:\n got %s\nwant %s", got, goldenJudgedTree)
	}
	for k, f := range CommandKinds() {
		if f == 1 && !kinds[k] {
			t.Errorf("no golden entry of kind %d (entry format 1)", k)
		}
	}

	snapFile := filepath.Join("testdata", "golden", "v1_snapshot.bin")
	if _, err := os.Stat(snapFile); *updateGolden && os.IsNotExist(err) {
		if err := os.WriteFile(snapFile, snapshotBytes(t, parsed.FSM), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(snapFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, snapshotBytes(t, parsed.FSM)) {
		t.Fatal("this build writes the golden state's snapshot differently from the committed one")
	}
	st, err := readSnapshot(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := renderExport(st.root); got != goldenJudgedTree {
		t.Fatalf("golden snapshot tree:\n got %s\nwant %s", got, goldenJudgedTree)
	}
	if st.index != parsed.index || st.rules == nil || st.rules.Index != 7 || string(st.rules.Source) != goldenRules {
		t.Fatalf("golden snapshot index %d rules %+v", st.index, st.rules)
	}
}

// goldenV2 are the entries of entry format 2 (the onDisconnect
// commands), applied in this order to the state of the v1 golden entries.
func goldenV2(t *testing.T) []goldenEntry {
	jill := parsedSet(t, "/users/jill/seen", `{".sv":"timestamp"}`)
	jill.Now, jill.As = 0, &Access{Auth: map[string]any{"uid": "jill"}}
	admin := parsedSet(t, "/log/left", `"jill"`)
	admin.Now = 0
	gone := parsedSet(t, "/gone/x", `1`)
	gone.Now = 0
	h := Holder{Node: "n1", Run: "0123456789abcdef", Session: "5e55"}
	return []goldenEntry{
		{"v2_disconnect_register.bin", Command{Kind: CmdDisconnectRegister, Holder: h, Op: &jill}},
		{"v2_disconnect_register_admin.bin", Command{Kind: CmdDisconnectRegister, Holder: h, Op: &admin}},
		{"v2_disconnect_register_cancelled.bin", Command{Kind: CmdDisconnectRegister, Holder: h, Op: &gone}},
		{"v2_disconnect_cancel.bin", Command{Kind: CmdDisconnectCancel, Holder: h, Path: tree.Path{"gone"}}},
		{"v2_disconnect_register_other.bin", Command{Kind: CmdDisconnectRegister, Holder: Holder{Node: "n2", Run: "fedcba9876543210", Session: "0ther"}, Op: &gone}},
		{"v2_snapshot.bin", Command{}},
		{"v2_disconnect_run.bin", Command{Kind: CmdDisconnectRun, Holder: Holder{Node: "n1", Run: "0123456789abcdef"}, Now: 1700000000200, Rand: [12]byte{1, 2, 3}}},
	}
}

// goldenV2Tree is the tree after the v2 golden entries.
const goldenV2Tree = `{"log":{"-NjEtLWz0123456789Az":"hello","left":"jill"},"users":{".priority":7,"jack":{"at":1700000000123,"n":2,"name":"J"},"jill":{"a":{"0":1,"1":2},"name":"Jill","seen":1700000000200}}}`

// TestGoldenV2EntriesAndSnapshot pins entry format 2 and snapshot format
// 2: the onDisconnect entries decode and apply as they did, and the
// snapshot taken with operations registered restores them.
func TestGoldenV2EntriesAndSnapshot(t *testing.T) {
	m := newTestFSM()
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "v1_snapshot.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	m.index = m.AppliedIndex()
	kinds := map[CommandKind]bool{}
	for _, e := range goldenV2(t) {
		if e.name == "v2_snapshot.bin" {
			checkGoldenSnapshot(t, e.name, m.FSM)
			continue
		}
		data := checkGolden(t, e)
		kinds[CommandKind(data[1])] = true
		m.index++
		if r := m.Apply(Entry{Index: m.index, Command: true, Data: data}); r.Err != nil {
			t.Fatalf("%s: apply: %v", e.name, r.Err)
		}
	}
	if got := renderExport(m.Root()); got != goldenV2Tree {
		t.Fatalf("tree after the v2 golden entries:\n got %s\nwant %s", got, goldenV2Tree)
	}
	if runs := m.DisconnectRuns(); len(runs) != 1 || runs[0].Node != "n2" {
		t.Fatalf("runs holding operations after the golden run: %v", runs)
	}
	for k, f := range CommandKinds() {
		if f == 2 && !kinds[k] {
			t.Errorf("no golden entry of kind %d (entry format 2)", k)
		}
	}
}

// checkGoldenSnapshot writes the named snapshot of f if asked and
// missing, then checks that f's snapshot is it and that it restores to a
// state whose snapshot is it again.
func checkGoldenSnapshot(t *testing.T, name string, f *FSM) {
	t.Helper()
	file := filepath.Join("testdata", "golden", name)
	if _, err := os.Stat(file); *updateGolden && os.IsNotExist(err) {
		if err := os.WriteFile(file, snapshotBytes(t, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := name[1] - '0'; data[len(snapshotMagic)] != want {
		t.Fatalf("%s: snapshot format %d, want %d", name, data[len(snapshotMagic)], want)
	}
	if !bytes.Equal(data, snapshotBytes(t, f)) {
		t.Fatalf("%s: this build writes the state's snapshot differently from the committed one", name)
	}
	r := New()
	if err := r.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, r), data) {
		t.Fatalf("%s restores to a different state", name)
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {9, 1, 0}, {1, 9, 0}, {1, 1, 0, 200}, {0, 1, 0}} {
		if _, err := DecodeCommand(b); err == nil {
			t.Errorf("DecodeCommand(%v) succeeded", b)
		}
	}
}

package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

var (
	sessA = Holder{Node: "n1", Run: "r1", Session: "a"}
	sessB = Holder{Node: "n1", Run: "r1", Session: "b"}
	sessC = Holder{Node: "n2", Run: "r9", Session: "c"}
)

// register is the entry keeping a parsed set or update of body at path
// for h, acting as as (nil: an admin).
func register(t *testing.T, h Holder, kind CommandKind, path, body string, as *Access) Command {
	t.Helper()
	op, err := parseCommand(cmd(t, kind, path, body))
	if err != nil {
		t.Fatal(err)
	}
	op.Now, op.As = 0, as
	return Command{Kind: CmdDisconnectRegister, Holder: h, Op: &op}
}

func runOf(h Holder, now int64) Command {
	return Command{Kind: CmdDisconnectRun, Holder: h, Now: now}
}

func TestDisconnectRunMakesTheWritesInOrderOnce(t *testing.T) {
	m := newTestFSM()
	mustApply(t, m, register(t, sessA, CmdSet, "/status/a", `"online"`, nil))
	mustApply(t, m, register(t, sessA, CmdSet, "/status/a", `{"state":"offline","at":{".sv":"timestamp"}}`, nil))
	mustApply(t, m, register(t, sessA, CmdUpdate, "/log", `{"a":"left"}`, nil))
	mustApply(t, m, register(t, sessB, CmdSet, "/status/b", `"gone"`, nil))
	if got := m.DisconnectsOf(sessA); got != 2 {
		t.Fatalf("session a holds %d operations, want 2 (the second set replaced the first)", got)
	}
	if got := m.DisconnectsOf(Holder{Node: "n1", Run: "r1"}); got != 3 {
		t.Fatalf("run r1 holds %d operations, want 3", got)
	}
	if m.Root() != nil {
		t.Fatal("registering wrote data")
	}
	var events []Event
	m.SetEventSink(func(_ uint64, e []Event) { events = append(events, e...) })
	mustApply(t, m, runOf(sessA, 1700000009999))
	if got, want := renderExport(m.Root()), `{"log":{"a":"left"},"status":{"a":{"at":1700000009999,"state":"offline"}}}`; got != want {
		t.Fatalf("after the run:\n got %s\nwant %s", got, want)
	}
	last := events[len(events)-1]
	if last.Kind != EventDisconnectsRan || len(last.Holders) != 1 || last.Holders[0] != sessA {
		t.Fatalf("last event %+v, want EventDisconnectsRan of session a", last)
	}
	// One change event for the entry (an SSE stream sends the entry's
	// index as each event's id): a patch at the root of each written
	// path's value after the run.
	if len(events) != 2 || events[0].Kind != EventPatch || len(events[0].Path) != 0 || len(events[0].Fields) != 2 ||
		events[0].Fields[0].Path.String() != "/log/a" || renderExport(events[0].Fields[0].Value) != `"left"` ||
		events[0].Fields[1].Path.String() != "/status/a" || renderExport(events[0].Fields[1].Value) != `{"at":1700000009999,"state":"offline"}` {
		t.Fatalf("change events %+v, want one patch at / of /log/a and /status/a", events[:len(events)-1])
	}
	before := m.Root().ETag()
	events = nil
	mustApply(t, m, runOf(sessA, 1700000019999))
	if m.Root().ETag() != before || len(events) != 0 {
		t.Fatalf("running again changed the tree or said so (%d events)", len(events))
	}
	if got := m.DisconnectRuns(); len(got) != 1 || got[0] != (Holder{Node: "n1", Run: "r1"}) {
		t.Fatalf("runs holding operations: %v", got)
	}
	mustApply(t, m, runOf(Holder{Node: "n1", Run: "r1"}, 1700000029999))
	if got := renderExport(m.Root().Get(tree.Path{"status", "b"})); got != `"gone"` {
		t.Fatalf("run of every session: status/b = %s", got)
	}
	if got := m.DisconnectRuns(); len(got) != 0 {
		t.Fatalf("runs left after running them all: %v", got)
	}
}

// TestOneChangePerRun: the changes of a run entry become one event, at the
// deepest path above them all, keeping only the topmost of paths one
// inside another, each with its value after the run.
func TestOneChangePerRun(t *testing.T) {
	root, err := tree.ParseBody([]byte(`{"a":{"b":{"c":1,"d":2},"e":3}}`), tree.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	p := func(s string) tree.Path { return mustPath(t, s) }
	for _, c := range []struct {
		events []Event
		want   string
	}{
		{[]Event{{Kind: EventPut, Path: p("/a/b/c")}}, `put /a/b/c`},
		{[]Event{{Kind: EventPut, Path: p("/a/b/c")}, {Kind: EventPut, Path: p("/a/b/c")}}, `put /a/b/c 1`},
		{[]Event{{Kind: EventPut, Path: p("/a/e")}, {Kind: EventPut, Path: p("/a/b/d")}}, `patch /a b/d=2 e=3`},
		{[]Event{{Kind: EventPut, Path: p("/a/b/d")}, {Kind: EventPatch, Path: p("/a"), Fields: []tree.Field{{Path: p("/b")}, {Path: p("/x")}}}}, `patch /a b={"c":1,"d":2} x=null`},
		{[]Event{{Kind: EventPut, Path: p("/a/b")}, {Kind: EventPut, Path: p("/a")}}, `put /a {"b":{"c":1,"d":2},"e":3}`},
		{[]Event{{Kind: EventPut, Path: p("/z")}, {Kind: EventPut, Path: p("/a/e")}}, `patch / a/e=3 z=null`},
	} {
		got := oneChange(root, c.events)
		var text string
		if len(c.events) == 1 {
			text = "put " + got[0].Path.String()
		} else if e := got[0]; len(got) != 1 {
			text = fmt.Sprintf("%d events", len(got))
		} else if e.Kind == EventPut {
			text = "put " + e.Path.String() + " " + renderExport(e.Value)
		} else {
			text = "patch " + e.Path.String()
			for _, f := range e.Fields {
				text += " " + strings.TrimPrefix(f.Path.String(), "/") + "=" + renderExport(f.Value)
			}
		}
		if text != c.want {
			t.Errorf("%+v: got %s, want %s", c.events, text, c.want)
		}
	}
}

func TestDisconnectCancelForgetsAtAndBelowThePath(t *testing.T) {
	m := newTestFSM()
	mustApply(t, m, register(t, sessA, CmdSet, "/p/x/y", `1`, nil))
	mustApply(t, m, register(t, sessA, CmdSet, "/q", `2`, nil))
	mustApply(t, m, register(t, sessB, CmdSet, "/p/x", `3`, nil))
	mustApply(t, m, Command{Kind: CmdDisconnectCancel, Holder: sessA, Path: tree.Path{"p"}})
	if a, b := m.DisconnectsOf(sessA), m.DisconnectsOf(sessB); a != 1 || b != 1 {
		t.Fatalf("after cancel: a holds %d, b %d; want 1 and 1 (another session's are its own)", a, b)
	}
	mustApply(t, m, Command{Kind: CmdDisconnectCancel, Holder: sessA})
	mustApply(t, m, runOf(sessA, 1))
	if m.Root() != nil {
		t.Fatalf("cancelled operations ran: %s", renderExport(m.Root()))
	}
}

// A refused operation (the rules in force when it runs) is skipped, and
// the others run.
func TestDisconnectRunJudgesEachOperationAsItsUser(t *testing.T) {
	m := newTestFSM()
	mustApply(t, m, Command{Kind: CmdSetRules, Body: []byte(`{"rules":{"users":{"$uid":{".write":"auth.uid == $uid"}},"open":{"$k":{".write":true,".validate":"newData.isString()"}}}}`)})
	jill := &Access{Auth: map[string]any{"uid": "jill"}}
	mustApply(t, m, register(t, sessC, CmdSet, "/users/jill/on", `false`, jill))
	mustApply(t, m, register(t, sessC, CmdSet, "/users/jack/on", `false`, jill))
	mustApply(t, m, register(t, sessC, CmdSet, "/open/n", `5`, jill))
	mustApply(t, m, register(t, sessC, CmdSet, "/open/s", `"bye"`, jill))
	mustApply(t, m, runOf(sessC, 1700000000000))
	if got, want := renderExport(m.Root()), `{"open":{"s":"bye"},"users":{"jill":{"on":false}}}`; got != want {
		t.Fatalf("after the run:\n got %s\nwant %s", got, want)
	}
	if m.DisconnectsOf(sessC) != 0 {
		t.Fatal("refused operations stayed registered")
	}
}

func TestDisconnectCommandsRoundTripAndRefuseNonsense(t *testing.T) {
	as := &Access{Auth: map[string]any{"uid": "u"}, OpenIfUnset: true}
	for _, c := range []Command{
		register(t, sessA, CmdUpdate, "/a", `{"b":1,"c/d":{".sv":"timestamp"}}`, as),
		register(t, sessA, CmdSet, "/a/.priority", `3`, nil),
		{Kind: CmdDisconnectCancel, Holder: sessB, Path: tree.Path{"x", "y"}},
		{Kind: CmdDisconnectRun, Holder: Holder{Node: "n", Run: "r"}, Now: 42, Rand: [12]byte{1, 2, 3}},
	} {
		data := c.Encode()
		if data[0] != 2 {
			t.Fatalf("kind %d stamped with entry format %d, want 2", c.Kind, data[0])
		}
		got, err := DecodeCommand(data)
		if err != nil {
			t.Fatalf("kind %d: %v", c.Kind, err)
		}
		if !bytes.Equal(got.Encode(), data) {
			t.Fatalf("kind %d decodes to %+v, which encodes differently", c.Kind, got)
		}
	}
	push, _ := parseCommand(cmd(t, CmdPush, "/l", `1`))
	inner := register(t, sessA, CmdSet, "/a", `1`, nil)
	nested := Command{Kind: CmdDisconnectRegister, Holder: sessA, Op: &inner}
	for name, c := range map[string]Command{
		"no session":    register(t, Holder{Node: "n", Run: "r"}, CmdSet, "/a", `1`, nil),
		"no run":        {Kind: CmdDisconnectRun, Holder: Holder{Node: "n"}},
		"a push":        {Kind: CmdDisconnectRegister, Holder: sessA, Op: &push},
		"no operation":  {Kind: CmdDisconnectRegister, Holder: sessA},
		"a nested one":  nested,
		"cancel of all": {Kind: CmdDisconnectCancel, Holder: Holder{Node: "n", Run: "r"}},
	} {
		m := newTestFSM()
		m.index++
		r := m.Apply(Entry{Index: m.index, Command: true, Data: c.Encode()})
		if !errors.Is(r.Err, tree.ErrInvalidData) {
			t.Errorf("%s: %v, want ErrInvalidData", name, r.Err)
		}
		if len(m.DisconnectRuns()) != 0 {
			t.Errorf("%s: registered", name)
		}
	}
}

// The registrations travel in the snapshot (format 2); a state without
// any is written in format 1, which older members read.
func TestDisconnectsInSnapshots(t *testing.T) {
	m := newTestFSM()
	if got := snapshotBytes(t, m.FSM)[len(snapshotMagic)]; got != 1 {
		t.Fatalf("empty state's snapshot format %d, want 1", got)
	}
	jill := &Access{Auth: map[string]any{"uid": "jill"}, OpenIfUnset: true}
	mustApply(t, m, register(t, sessA, CmdSet, "/x", `{".sv":"timestamp"}`, jill))
	mustApply(t, m, register(t, sessC, CmdUpdate, "/y", `{"a":1}`, nil))
	mustApply(t, m, register(t, sessA, CmdSet, "/z", `2`, nil))
	snap := snapshotBytes(t, m.FSM)
	if snap[len(snapshotMagic)] != 2 {
		t.Fatalf("snapshot format %d, want 2", snap[len(snapshotMagic)])
	}
	r := New()
	if err := r.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, r), snap) {
		t.Fatal("the restored state's snapshot differs")
	}
	mustApply(t, m, runOf(Holder{Node: "n1", Run: "r1"}, 7))
	if err := applyTo(r, m.index, runOf(Holder{Node: "n1", Run: "r1"}, 7)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, r), snapshotBytes(t, m.FSM)) {
		t.Fatal("the restored replica and the original differ after the same run")
	}
	if got := renderExport(r.Root()); got != `{"x":7,"z":2}` {
		t.Fatalf("restored replica after the run: %s", got)
	}
	mustApply(t, m, runOf(sessC, 8))
	if got := snapshotBytes(t, m.FSM)[len(snapshotMagic)]; got != 1 {
		t.Fatalf("snapshot format %d once every operation ran, want 1", got)
	}
	for _, cut := range []int{len(snapshotMagic) + 60, len(snap) - 10} {
		bad := append([]byte(nil), snap[:cut]...)
		if _, err := readSnapshot(bytes.NewReader(bad)); err == nil {
			t.Errorf("a snapshot cut at %d was read", cut)
		}
	}
}

func mustApply(t *testing.T, m *testFSM, c Command) {
	t.Helper()
	m.index++
	if r := m.Apply(Entry{Index: m.index, Command: true, Data: c.Encode()}); r.Err != nil {
		t.Fatalf("apply kind %d: %v", c.Kind, r.Err)
	}
}

func applyTo(f *FSM, index uint64, c Command) error {
	return f.Apply(Entry{Index: index, Command: true, Data: c.Encode()}).Err
}

// A replica sent a snapshot rather than the entries learns which of the
// sessions it knew had their operations run meanwhile.
func TestRestoreTellsTheSessionsWhoseOperationsRan(t *testing.T) {
	m := newTestFSM()
	mustApply(t, m, register(t, sessA, CmdSet, "/a", `1`, nil))
	mustApply(t, m, register(t, sessB, CmdSet, "/b", `1`, nil))
	behind := New()
	if err := behind.Restore(bytes.NewReader(snapshotBytes(t, m.FSM))); err != nil {
		t.Fatal(err)
	}
	mustApply(t, m, runOf(sessA, 5))
	mustApply(t, m, register(t, sessC, CmdSet, "/c", `1`, nil))
	var ran []Holder
	behind.SetEventSink(func(_ uint64, events []Event) {
		for _, e := range events {
			if e.Kind == EventDisconnectsRan {
				ran = append(ran, e.Holders...)
			}
		}
	})
	if err := behind.Restore(bytes.NewReader(snapshotBytes(t, m.FSM))); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 1 || ran[0] != sessA {
		t.Fatalf("restore reported %v, want session a", ran)
	}
}

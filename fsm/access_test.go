package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// userRules lets each user write their own node, with a name that is a
// short string; everyone signed in reads /public; admins flag users.
const userRules = `{
  // comments are kept
  "rules": {
    "public": {".read": "auth != null"},
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth != null && auth.uid == $uid && !root.child('banned/' + $uid).exists()",
        "name": {".validate": "newData.isString() && newData.val().length < 10"}
      }
    }
  }
}`

func as(uid string) *Access {
	if uid == "" {
		return &Access{}
	}
	return &Access{Auth: map[string]any{"uid": uid}}
}

func setRules(t testing.TB, f *testFSM, src string) {
	t.Helper()
	if _, err := f.apply(Command{Kind: CmdSetRules, Body: []byte(src)}); err != nil {
		t.Fatalf("set rules: %v", err)
	}
}

func TestJudgedWrites(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, userRules)
	if r := f.cur.Load().rules; r == nil || r.Index != f.index || !bytes.Equal(r.Source, []byte(userRules)) {
		t.Fatalf("rules in force: %+v", r)
	}
	tests := []struct {
		name    string
		c       Command
		as      *Access
		allowed bool
	}{
		{"own node", cmd(t, CmdSet, "/users/alice/name", `"Alice"`), as("alice"), true},
		{"other's node", cmd(t, CmdSet, "/users/bob/name", `"Bob"`), as("alice"), false},
		{"unauthenticated", cmd(t, CmdSet, "/users/alice/name", `"A"`), as(""), false},
		{"validate fails", cmd(t, CmdSet, "/users/alice/name", `"far too long a name"`), as("alice"), false},
		{"validate of a child in a parent write", cmd(t, CmdSet, "/users/alice", `{"name": 5}`), as("alice"), false},
		{"parent write passes", cmd(t, CmdSet, "/users/alice", `{"name": "Al", "age": 3}`), as("alice"), true},
		{"push into own node", cmd(t, CmdPush, "/users/alice/posts", `"hi"`), as("alice"), true},
		{"push elsewhere", cmd(t, CmdPush, "/users", `"hi"`), as("alice"), false},
		{"multi-path: one part denied", cmd(t, CmdUpdate, "/users", `{"alice/x": 1, "bob/x": 1}`), as("alice"), false},
		{"multi-path: all parts allowed", cmd(t, CmdUpdate, "/users/alice", `{"x": 1, "name": "A"}`), as("alice"), true},
		{"admin", cmd(t, CmdSet, "/users/bob/name", `"Bob"`), nil, true},
		{"rules only by admins", Command{Kind: CmdSetRules, Body: []byte(`{"rules":{}}`)}, as("alice"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.As = tt.as
			var err error
			if tt.c, err = parseCommand(tt.c); err != nil {
				t.Fatal(err)
			}
			before := f.Root()
			judged := f.Judge(&tt.c)
			_, err = f.apply(tt.c)
			if tt.allowed {
				if err != nil || judged != nil {
					t.Fatalf("apply: %v, judge: %v; want allowed", err, judged)
				}
				return
			}
			if !errors.Is(err, ErrPermissionDenied) || !errors.Is(judged, ErrPermissionDenied) {
				t.Fatalf("apply: %v, judge: %v; want permission denied", err, judged)
			}
			if f.Root() != before {
				t.Fatal("a denied write changed the tree")
			}
		})
	}
	// A write the rules allowed is refused once data it depends on changes.
	if _, err := f.apply(cmd(t, CmdSet, "/banned/alice", "true")); err != nil {
		t.Fatal(err)
	}
	c := cmd(t, CmdSet, "/users/alice/name", `"A"`)
	c.As = as("alice")
	if _, err := f.apply(c); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("banned user's write: %v", err)
	}
}

func TestJudgedReads(t *testing.T) {
	f := newTestFSM()
	if _, err := f.apply(cmd(t, CmdSet, "/users/alice/name", `"Alice"`)); err != nil {
		t.Fatal(err)
	}
	// Before rules are set, non-admins are refused, unless the proposer
	// promised open rules (--dev).
	if _, err := f.ReadAs(Read{Path: tree.Path{"users"}, Access: as("alice")}); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("default rules: %v", err)
	}
	if res, err := f.ReadAs(Read{Path: tree.Path{"users"}, Access: &Access{OpenIfUnset: true}}); err != nil || res.Value == nil {
		t.Fatalf("open default: %v %v", res.Value, err)
	}
	setRules(t, f, userRules)
	if res, err := f.ReadAs(Read{Path: mustPath(t, "/users/alice"), Access: as("alice")}); err != nil || render(res.Value) != `{"name":"Alice"}` {
		t.Fatalf("own read: %s %v", render(res.Value), err)
	}
	for _, p := range []string{"/users/alice", "/users", "/"} {
		if _, err := f.ReadAs(Read{Path: mustPath(t, p), Access: as("bob")}); !errors.Is(err, ErrPermissionDenied) {
			t.Fatalf("bob reads %s: %v", p, err)
		}
	}
	if _, err := f.ReadAs(Read{Path: tree.Path{"users"}, Access: nil}); err != nil {
		t.Fatalf("admin read: %v", err)
	}
}

// A failed if-match shows the current value only to a writer who may
// both write and read it.
func TestJudgedPreconditionHidesData(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, `{"rules": {"w": {".write": true}, "rw": {".write": true, ".read": true}}}`)
	for _, p := range []string{"/w", "/rw", "/none"} {
		if _, err := f.apply(cmd(t, CmdSet, p, `"secret"`)); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range map[string]error{"/w": ErrPermissionDenied, "/rw": ErrPreconditionFailed, "/none": ErrPermissionDenied} {
		c := cmd(t, CmdSet, p, `"x"`)
		c.IfMatch, c.HasIfMatch, c.As = "bogus", true, as("u")
		if _, err := f.apply(c); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", p, err, want)
		}
	}
}

func TestRulesSurviveSnapshot(t *testing.T) {
	f := newTestFSM()
	if _, err := f.apply(cmd(t, CmdSet, "/a", "1")); err != nil {
		t.Fatal(err)
	}
	// Without rules the snapshot restores the default rules (none set).
	var buf bytes.Buffer
	sn, _ := f.Snapshot()
	if err := sn.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[len(snapshotMagic)]; v != 1 {
		t.Fatalf("snapshot without onDisconnect operations has version %d, want 1", v)
	}
	d := New()
	if err := d.Restore(&buf); err != nil || d.cur.Load().rules != nil {
		t.Fatalf("restored a snapshot without rules: rules %+v, %v", d.cur.Load().rules, err)
	}
	setRules(t, f, userRules)
	buf.Reset()
	sn, _ = f.Snapshot()
	if err := sn.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	g := New()
	if err := g.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	r := g.cur.Load().rules
	if r == nil || r.Index != f.index || string(r.Source) != userRules {
		t.Fatalf("restored rules: %+v", r)
	}
	if _, err := g.ReadAs(Read{Path: tree.Path{"a"}, Access: as("alice")}); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("restored rules do not judge: %v", err)
	}
}

// A judged entry is a CmdAs wrapping the command, and its answer is
// rendered as the wrapped command's.
func TestJudgedEntryFormat(t *testing.T) {
	c := cmd(t, CmdPush, "/users/alice/posts", `"hi"`)
	c.As = as("alice")
	data := mustEncode(c)
	if int(data[0]) != CmdAs.EntryFormat() || CommandKind(data[1]) != CmdAs {
		t.Fatalf("judged entry header %v", data[:2])
	}
	if k := AnswerKind(data); k != CmdPush {
		t.Fatalf("AnswerKind = %d", k)
	}
	got, err := DecodeCommand(data)
	if err != nil || got.As == nil || got.As.Auth.(map[string]any)["uid"] != "alice" || got.Kind != CmdPush {
		t.Fatalf("decode: %+v %v", got, err)
	}
	for _, bad := range [][]byte{data[:3], append(append([]byte{}, data[:4]...), 0xff)} {
		if _, err := DecodeCommand(bad); err == nil {
			t.Errorf("decoded a truncated judged entry %v", bad)
		}
	}
}

// A read verdict is fixed only when the rules that granted it read neither
// stored data nor `now`: a stream judged once can then skip judging again.
func TestReadAccessFixed(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, `{"rules": {
		"open": {".read": "auth != null"},
		"own": {"$uid": {".read": "auth.uid === $uid"}},
		"docs": {"$d": {".read": "data.child('public').val() === true"}},
		"members": {".read": "root.child('allowed').child(auth.uid).exists()"},
		"timed": {".read": "now >= 0"}
	}}`)
	for _, p := range []string{"/docs/a/public", "/allowed/alice"} {
		if _, err := f.apply(cmd(t, CmdSet, p, "true")); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path  string
		fixed bool
	}{
		{"/open", true}, {"/own/alice", true}, {"/own/alice/deep", true},
		{"/docs/a", false}, {"/members", false}, {"/timed", false},
	} {
		res, err := f.ReadAs(Read{Path: mustPath(t, c.path), Access: as("alice"), Watch: true})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if res.AccessFixed != c.fixed {
			t.Errorf("%s: AccessFixed %v, want %v", c.path, res.AccessFixed, c.fixed)
		}
		if res, _ := f.ReadAs(Read{Path: mustPath(t, c.path), Access: as("alice")}); res.AccessFixed {
			t.Errorf("%s: AccessFixed without Watch", c.path)
		}
	}
	if res, err := f.ReadAs(Read{Path: tree.Path{"docs"}}); err != nil || !res.AccessFixed {
		t.Fatalf("an admin's read is fixed: %v %v", res.AccessFixed, err)
	}
}

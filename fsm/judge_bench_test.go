package fsm

import (
	"fmt"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// judgeBenchRules are the users part of cmd/arbor/e2e's BenchmarkRules
// rule set.
const judgeBenchRules = `{"rules": {"users": {"$uid": {
	".read": "auth != null && auth.uid == $uid",
	".write": "auth != null && auth.uid == $uid",
	".validate": "newData.hasChildren(['name', 'n'])",
	"name": {".validate": "newData.isString() && newData.val().length > 0 && newData.val().length <= 64"},
	"n": {".validate": "newData.isNumber() && newData.val() >= 0"},
	"email": {".validate": "newData.isString() && newData.val().matches(/^[^@]+@[^@]+$/)"},
	"$other": {".validate": false}}}}}`

// judgeBenchFSM is an FSM with judgeBenchRules and 64 users' profiles,
// and a profile write and a read judged as user 7.
func judgeBenchFSM(b *testing.B) (*testFSM, Command, *Access) {
	f := newTestFSM()
	for i := range 64 {
		if _, err := f.apply(cmd(b, CmdSet, fmt.Sprintf("/users/user%02d", i), fmt.Sprintf(`{"name":"user %d","n":%d}`, i, i))); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := f.apply(Command{Kind: CmdSetRules, Body: []byte(judgeBenchRules)}); err != nil {
		b.Fatal(err)
	}
	a := &Access{Auth: map[string]any{"uid": "user07", "provider": "password", "token": map[string]any{"sub": "user07"}}}
	body := []byte(`{"name":"user 7","n":7}`)
	v, err := tree.ParseBody(body, tree.MaxDepth)
	if err != nil {
		b.Fatal(err)
	}
	c := Command{Kind: CmdSet, Path: tree.Path{"users", "user07"}, Now: 1700000000000, Parsed: true, Body: body, Value: v, As: a}
	return f, c, a
}

// BenchmarkJudgeProfileWrite is the receiving node's judgement of a
// user's profile write before it is proposed.
func BenchmarkJudgeProfileWrite(b *testing.B) {
	f, c, _ := judgeBenchFSM(b)
	if err := f.Judge(&c); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = f.Judge(&c)
	}
}

// BenchmarkReadAsProfile is a user's read of their own profile.
func BenchmarkReadAsProfile(b *testing.B) {
	f, _, a := judgeBenchFSM(b)
	p := tree.Path{"users", "user07"}
	if _, err := f.ReadAs(Read{Path: p, Access: a}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = f.ReadAs(Read{Path: p, Access: a})
	}
}

// BenchmarkJudgedBigPatch is a user's PATCH of a million keys below their
// own node, judged by owner rules when applied (issue 19): a write that
// cannot be prepared across its chunks (chunkprep.go), so every other
// write waits for all of it.
func BenchmarkJudgedBigPatch(b *testing.B) {
	f := newTestFSM()
	rules := `{"rules": {"users": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid",
		"n": {".validate": "newData.isNumber() && newData.val() < 100"}}}}}`
	if _, err := f.apply(Command{Kind: CmdSetRules, Body: []byte(rules)}); err != nil {
		b.Fatal(err)
	}
	fields, err := tree.ParseUpdate(bigKeysBody(1_000_000), tree.MaxDepth-2)
	if err != nil {
		b.Fatal(err)
	}
	c := Command{Kind: CmdUpdate, Path: tree.Path{"users", "u1"}, Now: 1700000000000, Parsed: true, Fields: fields,
		As: &Access{Auth: map[string]any{"uid": "u1"}}}
	data := c.Encode()
	base := f.cur.Load()
	benchCPU(b, func(i int) {
		f.cur.Store(base)
		if r := f.Apply(Entry{Index: uint64(10 + i), Command: true, Data: data}); r.Err != nil {
			b.Fatal(r.Err)
		}
	})
}

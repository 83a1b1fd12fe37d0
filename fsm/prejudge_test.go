package fsm

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// prejudgeRules add to aheadRules rules whose verdict depends on `now`
// and on an unchanged stored child that the judge skips.
var prejudgeRules = append(append([]string{}, aheadRules...),
	`{"rules": {"t": {"$k": {".write": "auth != null && newData.val() <= now"}}}}`,
	`{"rules": {"users": {"$uid": {".write": "auth.uid == $uid",
		"name": {".validate": "newData.isString() && newData.val().length < 8"}}}}}`,
)

// TestPrejudgedEntryFormat: a prejudged write is a CmdAsPrejudged entry
// that keeps the rules version and no auth.
func TestPrejudgedEntryFormat(t *testing.T) {
	c := parsedSet(t, "/users/alice", `{"name": "Al"}`)
	c.As = as("alice")
	c.Prejudged, c.PrejudgedRules = true, 1<<40
	data := c.Encode()
	if int(data[0]) != CmdAsPrejudged.EntryFormat() || CommandKind(data[1]) != CmdAsPrejudged {
		t.Fatalf("prejudged entry header %v", data[:2])
	}
	if k := AnswerKind(data); k != CmdSet {
		t.Fatalf("AnswerKind = %d", k)
	}
	got, err := DecodeCommand(data)
	if err != nil || !got.Prejudged || got.PrejudgedRules != 1<<40 || got.As == nil || got.As.Auth != nil || got.Kind != CmdSet {
		t.Fatalf("decode: %+v %v", got, err)
	}
	c.Prejudged = false
	plain := c.Encode()
	if len(data) >= len(plain) {
		t.Errorf("prejudged entry of %d bytes, judged one %d: the auth travels", len(data), len(plain))
	}
	for _, bad := range [][]byte{data[:3], data[:4], append(append([]byte{}, data[:9]...), 0xff)} {
		if _, err := DecodeCommand(bad); err == nil {
			t.Errorf("decoded a truncated prejudged entry %v", bad)
		}
	}
	if CommandKind(plain[1]) != CmdAs {
		t.Fatalf("a write not prejudged is entry %v", plain[:2])
	}
}

// TestPrejudgedHoldsOnAnyData judges every write of aheadPaths ×
// aheadValues by every user under every one of prejudgeRules on
// aheadData: whenever Judge marks one prejudged, judging the applied
// write on random other data under the same rules allows it too — the
// promise that lets Apply take the verdict.
func TestPrejudgedHoldsOnAnyData(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 16))
	prejudged := 0
	for i, src := range prejudgeRules {
		f := ruledFSM(t, aheadData, src)
		others := make([]*state, 24)
		for j := range others {
			others[j] = ruledFSM(t, randomData(rng), src).cur.Load()
		}
		for _, p := range append(aheadPaths, "/t/x") {
			for _, body := range aheadValues {
				for _, uid := range aheadUsers {
					c := parsedSet(t, p, body)
					c.As = as(uid)
					if err := f.Judge(&c); err != nil || !c.Prejudged {
						continue
					}
					prejudged++
					if c.PrejudgedRules != f.cur.Load().rulesVersion() {
						t.Fatalf("prejudged under rules %d, %d in force", c.PrejudgedRules, f.cur.Load().rulesVersion())
					}
					for j, s := range others {
						plain := c
						plain.Prejudged = false
						if !judgedByApplying(s, plain) {
							t.Errorf("rules %d, %q writes %s at %s: prejudged, but denied over data %d %s", i, uid, body, p, j, render(s.root))
						}
					}
				}
			}
		}
	}
	if prejudged == 0 {
		t.Fatal("no write was prejudged")
	}
}

// randomData is a small random tree over aheadData's keys.
func randomData(rng *rand.Rand) string {
	keys := []string{"a", "b", "c", "x", "lock", "free", "only", "leaf", "users", "alice", "bob", "name", "open", "t"}
	return randomJSON(rng, keys, []string{"null", "1", "5", "true", `"s"`, `"Al"`, `"far too long"`}, 7, 3)
}

// TestNotPrejudgedWhenTheDataDecides: rules that read stored data, `now`,
// or skip an unchanged child leave the write to be judged at apply.
func TestNotPrejudgedWhenTheDataDecides(t *testing.T) {
	tests := []struct {
		name, rules, data, path, body, uid string
	}{
		{"data", `{"rules": {"a": {"$k": {".write": "!data.exists()"}}}}`, `{}`, "/a/x", `1`, "alice"},
		{"root", `{"rules": {"a": {".write": "root.child('open').val() === true"}}}`, `{"open": true}`, "/a", `1`, "alice"},
		{"sibling", `{"rules": {"a": {"$k": {".write": "newData.parent().child('lock').val() !== true"}}}}`, `{"a": {"lock": false}}`, "/a/x", `1`, "alice"},
		{"now", prejudgeRules[len(aheadRules)], `{}`, "/t/x", `1`, "alice"},
		// name is stored invalid and written unchanged: the judge skips it.
		{"unchanged child", prejudgeRules[len(aheadRules)+1], `{"users": {"alice": {"name": "far too long"}}}`, "/users/alice", `{"name": "far too long", "x": 1}`, "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ruledFSM(t, tt.data, tt.rules)
			c := parsedSet(t, tt.path, tt.body)
			c.As = as(tt.uid)
			if err := f.Judge(&c); err != nil {
				t.Fatalf("judge: %v", err)
			}
			if c.Prejudged {
				t.Fatal("prejudged although the stored data or the time decided")
			}
		})
	}
}

// TestApplyTakesPrejudgedVerdictOnlyUnderItsRules: Apply takes a
// prejudged write's verdict while the rules it was judged by are in
// force, and refuses it with ErrRulesChanged, applying nothing, once other
// rules replaced them before it reached the log — no write passes rules
// replaced before it committed.
func TestApplyTakesPrejudgedVerdictOnlyUnderItsRules(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, aheadRules[0])
	c := parsedSet(t, "/users/alice", `{"name": "Al"}`)
	c.As = as("alice")
	if err := f.Judge(&c); err != nil || !c.Prejudged {
		t.Fatalf("judge: %v, prejudged %v", err, c.Prejudged)
	}
	// The rules change between the dry run and the write's entry.
	setRules(t, f, `{"rules": {"users": {"$uid": {".write": false}}}}`)
	if _, err := f.apply(c); !errors.Is(err, ErrRulesChanged) || FromCode(Code(err), err.Error()) == nil || !errors.Is(FromCode(Code(err), ""), ErrRulesChanged) {
		t.Fatalf("a write judged by replaced rules: %v, want ErrRulesChanged (surviving forwarding)", err)
	}
	if v := f.Root().Get(tree.Path{"users", "alice"}); v != nil {
		t.Fatalf("denied write applied: %s", render(v))
	}
	// Judged again, it is refused by the new rules.
	if err := f.Judge(&c); !errors.Is(err, ErrPermissionDenied) || c.Prejudged {
		t.Fatalf("judged again: %v, prejudged %v", err, c.Prejudged)
	}
	// Under the rules it was judged by, Apply takes the verdict: an entry
	// claiming a verdict these rules would not give is applied, which
	// shows Apply did not judge it (members are trusted; the entry is
	// made only by FSM.Judge).
	claim := c
	claim.Prejudged, claim.PrejudgedRules = true, f.cur.Load().rulesVersion()
	if _, err := f.apply(claim); err != nil {
		t.Fatalf("prejudged under the rules in force: %v", err)
	}
	if v := f.Root().Get(tree.Path{"users", "alice", "name"}); v == nil || v.StringValue() != "Al" {
		t.Fatal("prejudged write not applied")
	}
}

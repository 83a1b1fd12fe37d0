package fsm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// aheadRules exercise what a judgement can read of the new tree: the
// written value and its children, siblings through newData.parent(), the
// written node's parents (which only applying the write can tell), old
// data, and .validate rules above the written node.
var aheadRules = []string{
	`{"rules": {"users": {"$uid": {
		".write": "auth.uid == $uid",
		".validate": "newData.hasChildren(['name'])",
		"name": {".validate": "newData.isString() && newData.val().length < 8"},
		"$other": {".validate": false}}}}}`,
	`{"rules": {"a": {
		".validate": "newData.child('b').exists() || newData.child('c').exists()",
		"$k": {".write": "auth != null"}}}}`,
	`{"rules": {"a": {"$k": {
		".write": "newData.parent().child('lock').val() !== true && !data.exists()",
		".validate": "newData.parent().exists()"}}}}`,
	`{"rules": {"a": {"$k": {".write": "newData.parent().child('lock').val() !== true || newData.parent().child('leaf').val() == 5"}}}}`,
	`{"rules": {"a": {
		".write": "newData.exists() && root.child('open').val() === true",
		"$k": {"$j": {".validate": "newData.val() == $j || newData.parent().child('free').exists()"}}}}}`,
	`{"rules": {".write": "auth.uid == 'root'", "$k": {".validate": "newData.isNumber() || newData.hasChildren()"}}}`,
	`{"rules": {"a": {".write": "newData.child('x').val() == 1 && data.child('x').val() != 1"}}}`,
	`{"rules": {"a": {"b": {".write": "newData.parent().parent().child('open').val() === true"}}}}`,
}

// aheadData is the tree the writes are judged on.
const aheadData = `{"users": {"alice": {"name": "Al"}}, "open": true,
	"a": {"b": {"x": 1, "free": true}, "lock": true, "leaf": 5, "c": {"only": 1}}}`

// aheadPaths and aheadValues make the writes: every value at every path.
var (
	aheadPaths  = []string{"/", "/users", "/users/alice", "/users/bob", "/users/alice/name", "/a", "/a/b", "/a/c", "/a/c/only", "/a/b/x", "/a/b/q", "/a/leaf/x", "/a/new/deep/er", "/open"}
	aheadValues = []string{`null`, `1`, `"x"`, `true`, `{"name": "Bo"}`, `{"name": "far too long"}`, `{"name": "Bo", "age": 3}`,
		`{"x": 1}`, `{"b": {"x": 2}}`, `{"c": 1, "x": 1}`, `{"y": {"z": "y"}}`, `{".value": 3, ".priority": 1}`, `{"free": null, "x": 0}`}
	aheadUsers = []string{"", "alice", "bob", "root"}
)

// randomJSON is a random tree: objects of up to width-1 children named
// from keys, leaves from leaves, nothing deeper than maxDepth+1 levels.
func randomJSON(rng *rand.Rand, keys, leaves []string, width, maxDepth int) string {
	var value func(depth int) string
	value = func(depth int) string {
		switch n := rng.IntN(width); {
		case n == 0 || depth > maxDepth:
			return leaves[rng.IntN(len(leaves))]
		default:
			out, sep := "{", ""
			for range n {
				out += fmt.Sprintf(`%s%q: %s`, sep, keys[rng.IntN(len(keys))], value(depth+1))
				sep = ","
			}
			return out + "}"
		}
	}
	return value(0)
}

// ruledFSM is an FSM holding data (JSON) under the rules src.
func ruledFSM(t *testing.T, data, src string) *testFSM {
	t.Helper()
	f := newTestFSM()
	if _, err := f.apply(Command{Kind: CmdSet, Path: tree.Path{}, Body: []byte(data)}); err != nil {
		t.Fatal(err)
	}
	setRules(t, f, src)
	return f
}

// judgedByApplying is FSM.Judge without the shortcut: apply c to a copy
// of s and judge the result.
func judgedByApplying(s *state, c Command) bool {
	next := s.clone()
	next.indexes = nil
	_, _, _, err := applyCommand(next, &c)
	return !isDenied(err)
}

// parsedSet is a Set of body at path as the HTTP layer makes it: parsed.
func parsedSet(t *testing.T, path, body string) Command {
	t.Helper()
	c := Command{Kind: CmdSet, Path: mustPath(t, path), Now: 1700000000000, Parsed: true, Body: []byte(body)}
	v, err := tree.ParseBody([]byte(body), tree.MaxDepth-len(c.Path))
	if err != nil {
		t.Fatalf("ParseBody(%s): %v", body, err)
	}
	c.Value = v
	return c
}

// TestAllowedWithoutApplyAgrees checks every write of aheadPaths ×
// aheadValues by every user under every one of aheadRules: whenever the
// shortcut allows a write, applying and judging it allows it too, and the
// shortcut does answer for writes whose rules read only the new value.
func TestAllowedWithoutApplyAgrees(t *testing.T) {
	answered := 0
	for i, src := range aheadRules {
		s := ruledFSM(t, aheadData, src).cur.Load()
		for _, p := range aheadPaths {
			for _, body := range aheadValues {
				for _, uid := range aheadUsers {
					c := parsedSet(t, p, body)
					c.As = as(uid)
					quick, full := allowedWithoutApply(s, &c), judgedByApplying(s, c)
					if quick && !full {
						t.Errorf("rules %d, %q writes %s at %s: allowed without applying, denied when applied", i, uid, body, p)
					}
					if quick {
						answered++
					}
				}
			}
		}
	}
	if answered == 0 {
		t.Fatal("the shortcut never answered")
	}
	t.Logf("the shortcut allowed %d writes", answered)
}

// TestAllowedWithoutApplyProfileWrite checks that a user's write of their
// own profile — BenchmarkRules' write — needs no applying.
func TestAllowedWithoutApplyProfileWrite(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, aheadRules[0])
	c := parsedSet(t, "/users/bob", `{"name": "Bo"}`)
	c.As = as("bob")
	if !allowedWithoutApply(f.cur.Load(), &c) {
		t.Fatal("a profile write was applied to be judged")
	}
	c.As = as("alice")
	if allowedWithoutApply(f.cur.Load(), &c) || f.Judge(&c) == nil {
		t.Fatal("alice may write bob's profile")
	}
}

// TestAllowedWithoutApplyRandom writes random small values at random
// paths over random data under aheadRules and compares the shortcut with
// applying.
func TestAllowedWithoutApplyRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 90))
	keys := []string{"a", "b", "c", "x", "lock", "free", "only", "leaf"}
	value := func(int) string {
		return randomJSON(rng, keys, []string{"null", "1", "true", `"s"`, `"far too long"`}, 6, 2)
	}
	path := func() string {
		p := ""
		for range rng.IntN(4) {
			p += "/" + keys[rng.IntN(len(keys))]
		}
		return p + "/"
	}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		f := ruledFSM(t, value(0), aheadRules[1+rng.IntN(len(aheadRules)-1)])
		if _, err := f.apply(Command{Kind: CmdSet, Path: mustPath(t, "/open"), Body: []byte("true")}); err != nil {
			t.Fatal(err)
		}
		s := f.cur.Load()
		c := parsedSet(t, path(), value(0))
		c.As = as(aheadUsers[rng.IntN(len(aheadUsers))])
		if allowedWithoutApply(s, &c) && !judgedByApplying(s, c) {
			t.Fatalf("write %d: %s at %s over %s: allowed without applying, denied when applied",
				i, c.Body, c.Path, render(s.root))
		}
	}
}

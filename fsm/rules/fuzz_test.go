package rules

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// fuzzRoot is the fixed data the fuzzers judge against.
const fuzzRoot = `{
	"users": {"u1": {"name": "Ann", "age": 30, "admin": true}, "u2": {"name": "Bob"}},
	"posts": {"p1": {"owner": "u1", "text": "hi", "tags": {"a": true}}},
	"n": 5, "s": "Hello", "p": {".value": 3, ".priority": "x"}
}`

// fuzzPaths are the locations the fuzzers ask about.
var fuzzPaths = [][]string{nil, {"users"}, {"users", "u1"}, {"users", "u1", "name"}, {"posts", "p1", "tags", "a"}, {"x", "y", "z"}}

// fuzzAuths are the clients the fuzzers ask for.
var fuzzAuths = []any{nil, map[string]any{"uid": "u1", "token": map[string]any{"admin": true, "roles": []any{"a", 1.0}}}}

// fuzzTrees are the trees the fuzzers judge with, built once: the root,
// the root after an edit, and the root after a write at each fuzz path.
var fuzzTrees = sync.OnceValues(func() (Value, []Value) {
	var x any
	if err := json.Unmarshal([]byte(fuzzRoot), &x); err != nil {
		panic(err) // a constant of this file
	}
	root := val0(x)
	trees := []Value{set(root, "users/u1/name", "Zed")}
	for _, path := range fuzzPaths {
		trees = append(trees, set(root, joinPath(path), map[string]any{"name": "Q", "n": 1.0}))
	}
	return root, trees
})

// judgeAll runs every kind of judgement and returns the verdicts, so the
// fuzzers can check that a ruleset gives the same answers twice.
func judgeAll(r *Ruleset) []bool {
	root, trees := fuzzTrees()
	q := &Query{OrderByChild: "owner", EqualTo: "u1", LimitToFirst: 10}
	var out []bool
	for _, a := range fuzzAuths {
		for i, path := range fuzzPaths {
			out = append(out,
				r.CanRead(path, &Env{Auth: a, Now: 1, Root: root}),
				r.CanRead(path, &Env{Auth: a, Now: 1, Root: root, Query: q}),
				r.CanWrite([][]string{path}, &Env{Auth: a, Now: 1, Root: root, NewRoot: trees[i+1]}),
			)
		}
		out = append(out, r.CanWrite(fuzzPaths[1:4], &Env{Auth: a, Root: root, NewRoot: trees[0]}))
		out = append(out, r.CanWrite([][]string{{"users", "u1"}, {"posts"}}, &Env{Auth: a, Root: root, NewRoot: val0(nil)}))
	}
	for _, path := range fuzzPaths {
		_ = r.IndexOn(path)
	}
	_ = r.Indexes()
	return out
}

func joinPath(path []string) string {
	s := ""
	for _, k := range path {
		s += "/" + k
	}
	return s
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		commented,
		userRules,
		`{"rules": {".read": true}}`,
		`{"rules": {"$a": {"$b": {".validate": "newData.val() == $a + $b"}}}}`,
		`{"rules": {".read": "query.orderByChild == 'owner' && query.equalTo == auth.uid"}}`,
		`{"rules": {"x": {".indexOn": ["a", ".value"]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		start := time.Now()
		r, err := Parse(src)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("Parse took %v", d)
		}
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			if e := err.(*SyntaxError); e.Line < 1 || e.Column < 1 {
				t.Fatalf("bad position in %v", e)
			}
			return
		}
		if !bytes.Equal(r.Source(), src) {
			t.Fatal("Source() differs from the input")
		}
		strict, err := Parse(r.StrictJSON())
		if err != nil {
			t.Fatalf("StrictJSON does not parse: %v\n%s", err, r.StrictJSON())
		}
		if !bytes.Equal(strict.StrictJSON(), r.StrictJSON()) {
			t.Fatal("StrictJSON is not a fixed point")
		}
		a, b := judgeAll(r), judgeAll(strict)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("verdict %d differs between source and strict rules", i)
			}
		}
	})
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"auth != null && auth.uid == $b",
		"newData.isString() && newData.val().length < 100",
		"root.child('users/' + auth.uid + '/admin').val() == true",
		"data.child('name').val().matches(/^[a-z]+$/i)",
		"query.orderByChild == 'owner' && query.equalTo == auth.uid",
		"newData.hasChildren(['name', 'age'])",
		"data.parent().parent().child('n').val() + 1 > 5 ? true : false",
		"'abc'.replace('b', 'x').toUpperCase() == 'AXC'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		q := quote(expr)
		for _, key := range []string{".read", ".write", ".validate"} {
			r, err := Parse([]byte(`{"rules": {"$a": {"$b": {"` + key + `": ` + q + `, ".write": true}}}}`))
			if key == ".write" {
				r, err = Parse([]byte(`{"rules": {"$a": {"$b": {".write": ` + q + `}}}}`))
			}
			if err != nil {
				continue
			}
			first, second := judgeAll(r), judgeAll(r)
			for i := range first {
				if first[i] != second[i] {
					t.Fatalf("verdict %d of %s %q is not deterministic", i, key, expr)
				}
			}
		}
	})
}

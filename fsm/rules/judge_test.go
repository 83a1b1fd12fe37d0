package rules

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The Firebase documentation's per-user example, with validation.
const userRules = `{
  "rules": {
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "$uid === auth.uid",
        "name": { ".validate": "newData.isString() && newData.val().length < 100" },
        "profile": { ".validate": "newData.hasChildren(['name', 'age'])" },
        "$other": { ".validate": false }
      }
    }
  }
}`

func authAs(uid string) any {
	return map[string]any{"uid": uid, "provider": "password", "token": map[string]any{}}
}

func TestUserRulesRead(t *testing.T) {
	r := mustParse(t, userRules)
	root := tree(t, `{"users": {"u1": {"name": "Ann"}, "u2": {"name": "Bob"}}}`)
	tests := []struct {
		path string
		auth any
		want bool
	}{
		{"users/u1", authAs("u1"), true},
		{"users/u1/name", authAs("u1"), true}, // granted above
		{"users/u2", authAs("u1"), false},
		{"users/u1", nil, false},       // auth.uid of null is an error, not a match
		{"users", authAs("u1"), false}, // rules are not filters
		{"", authAs("u1"), false},
		{"other", authAs("u1"), false},
	}
	for _, tc := range tests {
		if got := r.CanRead(p(tc.path), &Env{Auth: tc.auth, Root: root}); got != tc.want {
			t.Errorf("CanRead(%q, %v) = %v, want %v", tc.path, tc.auth, got, tc.want)
		}
	}
}

func TestUserRulesWrite(t *testing.T) {
	r := mustParse(t, userRules)
	root := tree(t, `{"users": {"u1": {"name": "Ann"}, "u2": {"name": "Bob"}}}`)
	long := strings.Repeat("x", 100)
	tests := []struct {
		name  string
		path  string
		value any
		auth  any
		want  bool
	}{
		{"owner", "users/u1", map[string]any{"name": "Al", "profile": map[string]any{"name": "Al", "age": 3}}, authAs("u1"), true},
		{"other user", "users/u1", map[string]any{"name": "Al"}, authAs("u2"), false},
		{"signed out", "users/u1", map[string]any{"name": "Al"}, nil, false},
		{"name too long", "users/u1/name", long, authAs("u1"), false},
		{"name just short enough", "users/u1/name", long[:99], authAs("u1"), true},
		{"name not a string", "users/u1/name", 5, authAs("u1"), false},
		{"profile missing age", "users/u1/profile", map[string]any{"name": "Al"}, authAs("u1"), false},
		{"unknown field", "users/u1", map[string]any{"name": "Al", "x": 1}, authAs("u1"), false},
		{"unknown field alone", "users/u1/x", 1, authAs("u1"), false},
		{"delete", "users/u1", nil, authAs("u1"), true},
		{"delete invalid-named field", "users/u1/x", nil, authAs("u1"), true},
		{"write above the grant", "users", map[string]any{}, authAs("u1"), false},
	}
	for _, tc := range tests {
		env := &Env{Auth: tc.auth, Root: root, NewRoot: set(root, tc.path, tc.value)}
		if got := r.CanWrite([][]string{p(tc.path)}, env); got != tc.want {
			t.Errorf("%s: CanWrite(%q) = %v, want %v", tc.name, tc.path, got, tc.want)
		}
	}
}

func TestCascade(t *testing.T) {
	r := mustParse(t, `{
	  "rules": {
	    "foo": {
	      ".read": true,
	      ".write": false,
	      "bar": { ".read": false, ".write": true }
	    }
	  }
	}`)
	root := tree(t, `{"foo": {"bar": 1, "baz": 2}}`)
	env := func(path string) *Env { return &Env{Root: root, NewRoot: set(root, path, 7)} }
	if !r.CanRead(p("foo/bar"), env("")) {
		t.Error("a .read grant above was revoked below")
	}
	if !r.CanRead(p("foo/baz/deeper"), env("")) {
		t.Error("a .read grant does not reach descendants without rules")
	}
	if r.CanRead(nil, env("")) {
		t.Error("root read granted by rules below it")
	}
	if !r.CanWrite([][]string{p("foo/bar")}, env("foo/bar")) {
		t.Error("write to foo/bar denied")
	}
	if !r.CanWrite([][]string{p("foo/bar/x")}, env("foo/bar/x")) {
		t.Error("write below foo/bar denied")
	}
	if r.CanWrite([][]string{p("foo")}, env("foo")) {
		t.Error("write to foo granted by a deeper rule")
	}
	if r.CanWrite([][]string{p("foo/baz")}, env("foo/baz")) {
		t.Error("write to foo/baz granted")
	}
}

func TestAdminViaRoot(t *testing.T) {
	r := mustParse(t, `{"rules": {".write": "root.child('users/'+auth.uid+'/admin').val() == true", ".read": "auth != null"}}`)
	root := tree(t, `{"users": {"boss": {"admin": true}, "joe": {"admin": false}}}`)
	newRoot := set(root, "x", 1)
	if !r.CanWrite([][]string{p("x")}, &Env{Auth: authAs("boss"), Root: root, NewRoot: newRoot}) {
		t.Error("admin denied")
	}
	for _, a := range []any{authAs("joe"), authAs("nobody"), authAs("a.b"), nil} {
		if r.CanWrite([][]string{p("x")}, &Env{Auth: a, Root: root, NewRoot: newRoot}) {
			t.Errorf("%v allowed", a)
		}
	}
}

func TestQueryRules(t *testing.T) {
	r := mustParse(t, `{
	  "rules": {
	    "messages": { ".read": "query.orderByChild == 'owner' && query.equalTo == auth.uid" },
	    "feed": { ".read": "query.orderByKey && query.limitToFirst <= 100" },
	    "scores": { ".read": "query.orderByValue && query.startAt >= 10 && query.endAt == null" },
	    "byPriority": { ".read": "query.orderByPriority && query.limitToLast == 5" },
	    "plain": { ".read": "query.orderByChild == null && !query.orderByKey" }
	  }
	}`)
	u1 := authAs("u1")
	tests := []struct {
		path string
		q    *Query
		want bool
	}{
		{"messages", &Query{OrderByChild: "owner", EqualTo: "u1"}, true},
		{"messages", &Query{OrderByChild: "owner", EqualTo: "u2"}, false},
		{"messages", &Query{OrderByChild: "owner"}, false},
		{"messages", nil, false},
		{"feed", &Query{OrderByKey: true, LimitToFirst: 50}, true},
		{"feed", &Query{OrderByKey: true, LimitToFirst: 500}, false},
		{"feed", &Query{OrderByKey: true}, false}, // null <= 100 is an error
		{"scores", &Query{OrderByValue: true, StartAt: 10.0}, true},
		{"scores", &Query{OrderByValue: true, StartAt: "10"}, false},
		{"scores", &Query{OrderByValue: true, StartAt: 10.0, EndAt: 20.0}, false},
		{"byPriority", &Query{OrderByPriority: true, LimitToLast: 5}, true},
		{"plain", nil, true},
		{"plain", &Query{}, true},
		{"plain", &Query{OrderByChild: "x"}, false},
	}
	for _, tc := range tests {
		if got := r.CanRead(p(tc.path), &Env{Auth: u1, Root: val0(nil), Query: tc.q}); got != tc.want {
			t.Errorf("CanRead(%s, %+v) = %v, want %v", tc.path, tc.q, got, tc.want)
		}
	}
}

func TestWildcardPrecedence(t *testing.T) {
	r := mustParse(t, `{
	  "rules": {
	    "a": {
	      "special": { ".read": false },
	      "$any": { ".read": true, ".indexOn": "w" }
	    },
	    "rooms": {
	      "$room": {
	        "members": {
	          "$uid": { ".write": "$uid == auth.uid && root.child('rooms/' + $room + '/owner').val() == auth.uid" }
	        }
	      }
	    }
	  }
	}`)
	if r.CanRead(p("a/special"), &Env{}) {
		t.Error("wildcard matched a key that has its own rule")
	}
	if !r.CanRead(p("a/other"), &Env{}) {
		t.Error("wildcard did not match")
	}
	if got := r.IndexOn(p("a/special")); got != nil {
		t.Errorf("IndexOn(a/special) = %v", got)
	}
	root := tree(t, `{"rooms": {"r1": {"owner": "u1"}}}`)
	ok := func(path, uid string) bool {
		return r.CanWrite([][]string{p(path)}, &Env{Auth: authAs(uid), Root: root, NewRoot: set(root, path, true)})
	}
	if !ok("rooms/r1/members/u1", "u1") {
		t.Error("nested wildcards: owner denied")
	}
	if ok("rooms/r1/members/u2", "u2") || ok("rooms/r2/members/u1", "u1") {
		t.Error("nested wildcards: non-owner allowed")
	}
}

func TestNoRulesDeny(t *testing.T) {
	r := mustParse(t, `{"rules": {"a": {".read": true}}}`)
	root := tree(t, `{"a": 1, "b": 2}`)
	env := &Env{Root: root, NewRoot: set(root, "a", 3)}
	if r.CanRead(p("b"), env) || r.CanRead(nil, env) {
		t.Error("read without a rule allowed")
	}
	if r.CanWrite([][]string{p("a")}, env) {
		t.Error("write without a .write rule allowed")
	}
	if Open().CanWrite(nil, env) {
		t.Error("a write with no paths was allowed")
	}
	empty := mustParse(t, `{"rules": {}}`)
	if empty.CanRead(nil, env) || empty.CanWrite([][]string{nil}, env) {
		t.Error("empty rules allowed access")
	}
}

func TestValidateSemantics(t *testing.T) {
	root := tree(t, `{"a": {"b": 1}, "items": {"x": {"n": -1}, "z": {"n": 2}}, "users": {"a": 1}}`)
	tests := []struct {
		name  string
		rules string
		path  string
		value any
		want  bool
	}{
		{"validate false blocks a set", `{".write": true, "a": {".validate": false}}`, "a", 1, false},
		{"validate skipped on delete", `{".write": true, "a": {".validate": false}}`, "a", nil, true},
		{"validate does not cascade", `{".write": true, "a": {".validate": "newData.hasChildren()", "$k": {}}}`, "a/x", 5, true},
		{"ancestor validated", `{".write": true, "a": {".validate": "newData.child('b').val() == 1"}}`, "a/b", 2, false},
		{"ancestor validated, passes", `{".write": true, "a": {".validate": "newData.child('b').val() == 1"}}`, "a/c", 2, true},
		{"root validate is an ancestor", `{".write": true, ".validate": "newData.hasChild('a')"}`, "a", nil, false},
		{"ancestor that becomes null is skipped", `{".write": true, "users": {".validate": false, "$u": {}}}`, "users/a", nil, true},
		{"unchanged sibling skipped", `{".write": true, "items": {"$id": {".validate": "newData.child('n').val() > 0"}}}`, "items", "keep-x", true},
		{"changed child validated", `{".write": true, "items": {"$id": {".validate": "newData.child('n').val() > 0"}}}`, "items/x/n", -5, false},
		{"written node validated even if unchanged", `{".write": true, "items": {"$id": {".validate": "newData.child('n').val() > 0"}}}`, "items/x", "same", false},
		{"descendant without rules ignored", `{".write": true, "a": {"q": {".validate": false}}}`, "a", map[string]any{"b": 1, "c": 2}, true},
		{"descendant with rules checked", `{".write": true, "a": {"q": {".validate": false}}}`, "a", map[string]any{"q": 1}, false},
		{"data and newData at the node", `{".write": true, "a": {"b": {".validate": "data.val() == 1 && newData.val() == 2"}}}`, "a/b", 2, true},
	}
	for _, tc := range tests {
		r := mustParse(t, `{"rules": `+tc.rules+`}`)
		var newRoot Value
		switch tc.value {
		case "keep-x": // replace items, keeping x's subtree shared
			m := root.(tv).v.(map[string]any)["items"].(map[string]any)
			newRoot = set(root, "items", map[string]any{"x": m["x"], "y": map[string]any{"n": 1.0}})
		case "same":
			newRoot = set(root, "items/x", root.Child("items").Child("x").(tv).v)
		default:
			newRoot = set(root, tc.path, tc.value)
		}
		if got := r.CanWrite([][]string{p(tc.path)}, &Env{Root: root, NewRoot: newRoot}); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMultiPathWrite(t *testing.T) {
	r := mustParse(t, `{
	  "rules": {
	    "users": {
	      ".validate": "newData.hasChildren()",
	      "$uid": { ".write": "$uid === auth.uid", ".validate": "newData.isString()" }
	    },
	    "log": { ".write": true }
	  }
	}`)
	root := tree(t, `{"users": {"u1": "a", "u2": "b"}}`)
	patch := func(fields map[string]any) (Value, [][]string) {
		nr := root
		var paths [][]string
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			nr = set(nr, k, fields[k])
			paths = append(paths, p(k))
		}
		return nr, paths
	}
	nr, paths := patch(map[string]any{"users/u1": "x", "log/1": "edit"})
	if !r.CanWrite(paths, &Env{Auth: authAs("u1"), Root: root, NewRoot: nr}) {
		t.Error("PATCH of own data and log denied")
	}
	nr, paths = patch(map[string]any{"users/u1": "x", "users/u2": "y"})
	if r.CanWrite(paths, &Env{Auth: authAs("u1"), Root: root, NewRoot: nr}) {
		t.Error("PATCH touching another user's data allowed")
	}
	nr, paths = patch(map[string]any{"users/u1": 5.0, "log/1": "edit"})
	if r.CanWrite(paths, &Env{Auth: authAs("u1"), Root: root, NewRoot: nr}) {
		t.Error("PATCH with an invalid field allowed")
	}
	// A path inside another written path is covered by it.
	nr, paths = patch(map[string]any{"log": map[string]any{"a": 1.0}, "log/a": 1.0})
	if !r.CanWrite(paths, &Env{Root: root, NewRoot: nr}) {
		t.Error("nested paths denied")
	}
}

// Ancestors shared by several paths are validated once: the step count of
// a two-path write equals that of a one-path write.
func TestSharedAncestorValidatedOnce(t *testing.T) {
	r := mustParse(t, `{"rules": {"users": {".validate": "newData.hasChildren()", "$uid": {".write": true}}}}`)
	root := tree(t, `{"users": {"a": 1, "b": 2}}`)
	one := set(root, "users/a", 3)
	two := set(one, "users/b", 4)
	ok1, ev1 := r.canWrite([][]string{p("users/a")}, &Env{Root: root, NewRoot: one})
	ok2, ev2 := r.canWrite([][]string{p("users/a"), p("users/b")}, &Env{Root: root, NewRoot: two})
	if !ok1 || !ok2 {
		t.Fatal("writes denied")
	}
	if ev1.steps != ev2.steps || ev1.steps == 0 {
		t.Errorf("steps: one path %d, two paths %d; want equal and non-zero", ev1.steps, ev2.steps)
	}
}

// A large legitimate write is not denied by the step budget: every judged
// node brings its own allowance.
func TestLargeWriteWithinBudget(t *testing.T) {
	r := mustParse(t, `{"rules": {"items": {".write": true, "$id": {".validate": "newData.hasChildren(['a', 'b']) && newData.child('a').isString() && newData.child('a').val().length < 50 && newData.child('b').isNumber() && newData.child('b').val() >= 0 && newData.child('b').val() < 1e9"}}}}`)
	items := make(map[string]any)
	for i := range 5000 {
		items[fmt.Sprintf("k%05d", i)] = map[string]any{"a": "name", "b": float64(i)}
	}
	root := val0(nil)
	nr := set(root, "items", items)
	ok, ev := r.canWrite([][]string{p("items")}, &Env{Root: root, NewRoot: nr})
	if !ok {
		t.Fatal("large valid write denied")
	}
	if ev.steps <= baseBudget {
		t.Fatalf("test too small: %d steps", ev.steps)
	}
	items["k00042"] = map[string]any{"a": "name", "b": -1.0}
	if r.CanWrite([][]string{p("items")}, &Env{Root: root, NewRoot: set(root, "items", items)}) {
		t.Error("invalid item allowed")
	}
}

func TestIndexes(t *testing.T) {
	r := mustParse(t, `{
	  "rules": {
	    "users": { "$uid": { "posts": { ".indexOn": "date" } } },
	    "scores": { ".indexOn": ".value" },
	    "dinosaurs": { ".indexOn": ["height", "length", "dimensions/weight"] },
	    "empty": { ".indexOn": [] }
	  }
	}`)
	if got := r.IndexOn(p("dinosaurs")); !slices.Equal(got, []string{"height", "length", "dimensions/weight"}) {
		t.Errorf("IndexOn(dinosaurs) = %v", got)
	}
	if got := r.IndexOn(p("users/u1/posts")); !slices.Equal(got, []string{"date"}) {
		t.Errorf("IndexOn(users/u1/posts) = %v", got)
	}
	for _, path := range []string{"users", "nope", "empty", "", "dinosaurs/x"} {
		if got := r.IndexOn(p(path)); got != nil {
			t.Errorf("IndexOn(%q) = %v, want nil", path, got)
		}
	}
	got := fmt.Sprint(r.Indexes())
	want := "[{[dinosaurs] [height length dimensions/weight]} {[scores] [.value]} {[users $uid posts] [date]}]"
	if got != want {
		t.Errorf("Indexes() = %s\nwant %s", got, want)
	}
	r.IndexOn(p("scores"))[0] = "mutated"
	r.Indexes()[0].Pattern[0] = "mutated"
	if r.IndexOn(p("scores"))[0] != ".value" || r.Indexes()[0].Pattern[0] != "dinosaurs" {
		t.Error("results share the ruleset's storage")
	}
	if Closed().Indexes() != nil || Open().IndexOn(nil) != nil {
		t.Error("default rules have indexes")
	}
}

// nilValue answers nil where a Value is expected, as a careless adapter
// might; the judge must not crash.
type nilValue struct{ tv }

func (nilValue) Child(string) Value { return nil }
func (nilValue) Priority() Value    { return nil }
func (nilValue) Kind() Kind         { return Object }
func (nilValue) Len() int           { return 1 }
func (nilValue) Each(fn func(string, Value) bool) {
	fn("k", nil)
}

func TestDefensiveInputs(t *testing.T) {
	r := mustParse(t, `{"rules": {".read": "data.child('a/b').getPriority() == null", ".write": true, "$k": {".validate": "newData.exists()"}}}`)
	if !r.CanRead(nil, nil) {
		t.Error("nil env")
	}
	if !r.CanRead(p("x/y"), &Env{Root: nilValue{}}) {
		t.Error("nil children")
	}
	if !r.CanWrite([][]string{nil}, &Env{Root: nilValue{}, NewRoot: nilValue{}}) {
		t.Error("nil children in a write")
	}
	if !r.CanWrite([][]string{nil}, nil) {
		t.Error("nil env in a write")
	}
	bad := mustParse(t, `{"rules": {".read": "auth.uid == 'x'"}}`)
	if bad.CanRead(nil, &Env{Auth: struct{}{}}) {
		t.Error("unsupported auth type allowed")
	}
}

func TestConcurrentUse(t *testing.T) {
	r := mustParse(t, userRules)
	root := tree(t, `{"users": {"u1": {"name": "Ann"}}}`)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uid := fmt.Sprintf("u%d", g%2+1)
			for range 200 {
				env := &Env{Auth: authAs(uid), Root: root, NewRoot: set(root, "users/"+uid+"/name", "Z")}
				want := uid == "u1"
				if r.CanRead(p("users/u1"), env) != want || r.CanWrite([][]string{p("users/" + uid + "/name")}, env) != true {
					t.Error("inconsistent verdict under concurrency")
					return
				}
			}
		}()
	}
	wg.Wait()
}

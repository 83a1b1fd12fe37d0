package realtime

import (
	"reflect"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestMultiPathUpdateIsOnePush: a listener below a multi-path update's
// location gets the update as one message (the SDK raises one event per
// message, so several would show it half applied).
func TestMultiPathUpdateIsOnePush(t *testing.T) {
	r := newRig(t, nil)
	if err := r.db.set("/a", `{"obj":{"name":"Jack","deep":{"x":{"y":{"z":1}}},"tags":{"c":1}},"other":{}}`); err != nil {
		t.Fatal(err)
	}
	listener, writer := r.dial(), r.dial()
	if st, _, _ := listener.do("q", map[string]any{"p": "/a/obj", "h": ""}); st != "ok" {
		t.Fatalf("listen: %s", st)
	}
	if st, _, _ := writer.do("m", map[string]any{"p": "/a", "d": map[string]any{"obj/name": "Jill", "obj/deep/x/y/z": nil, "obj/tags/c": 3, "other/k": "v"}}); st != "ok" {
		t.Fatalf("update: %s", st)
	}
	a, body := listener.push()
	want := map[string]any{"p": "/a/obj", "d": map[string]any{"name": "Jill", "deep/x/y/z": nil, "tags/c": float64(3)}}
	if a != "m" || !reflect.DeepEqual(body, want) {
		t.Fatalf("push %s %v, want m %v", a, body, want)
	}
	listener.quiet()
}

// TestOverlappingFieldsAreOneValue: where one changed path lies within
// another (two writes of one batch), their order matters, so the batch is
// sent as the value at their common ancestor.
func TestOverlappingFieldsAreOneValue(t *testing.T) {
	for _, c := range []struct {
		paths   []tree.Path
		common  tree.Path
		overlap bool
	}{
		{[]tree.Path{{"name"}, {"deep", "x"}, {"tags", "c"}}, tree.Path{}, false},
		{[]tree.Path{{"tags", "c"}, {"tags", "d"}}, tree.Path{"tags"}, false},
		{[]tree.Path{{"tags"}, {"name"}, {"tags", "c"}}, tree.Path{}, true},
		{[]tree.Path{{"tags", "c"}, {"tags", "c"}}, tree.Path{"tags", "c"}, true},
		{[]tree.Path{{"a", "b"}, {"a", "bc"}}, tree.Path{"a"}, false},
	} {
		fields := make([]tree.Field, len(c.paths))
		for i, p := range c.paths {
			fields[i] = tree.Field{Path: p}
		}
		common, overlap := overlapping(fields)
		if overlap != c.overlap || !reflect.DeepEqual(append(tree.Path{}, common...), append(tree.Path{}, c.common...)) {
			t.Errorf("%v: common %v overlap %v, want %v %v", c.paths, common, overlap, c.common, c.overlap)
		}
	}
}

// TestDatastaleFollowsTheFreshValue: a transaction's set answered
// datastale comes after the push of the value that made it stale, which
// the SDK's next try starts from.
func TestDatastaleFollowsTheFreshValue(t *testing.T) {
	r := newRig(t, nil)
	if err := r.db.set("/n", `1`); err != nil {
		t.Fatal(err)
	}
	c := r.dial()
	if st, _, _ := c.do("q", map[string]any{"p": "/n", "h": ""}); st != "ok" {
		t.Fatalf("listen: %s", st)
	}
	r.db.lagFeeds(200 * time.Millisecond) // as a follower that applies after the leader answered
	if err := r.db.set("/n", `2`); err != nil {
		t.Fatal(err)
	}
	st, _, pushes := c.do("p", map[string]any{"p": "/n", "d": 2, "h": Hash(mustNode(t, `1`))})
	if st != "datastale" {
		t.Fatalf("a set on a stale hash: %s", st)
	}
	if len(pushes) != 1 || pushes[0]["a"] != "d" || pushes[0]["b"].(map[string]any)["d"] != float64(2) {
		t.Fatalf("before datastale came %v, want the push of 2", pushes)
	}
}

// mustNode parses JSON text into a tree node.
func mustNode(t *testing.T, text string) *tree.Node {
	t.Helper()
	n, err := tree.ParseBody([]byte(text), tree.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

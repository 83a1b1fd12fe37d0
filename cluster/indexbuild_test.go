package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// TestNodeBuildsIndexes: on a node, the indexes new rules declare are
// built without another write to trigger it, and then answer queries.
func TestNodeBuildsIndexes(t *testing.T) {
	n, f := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	propose(t, n, set("/items", `{"a": {"h": 3}, "b": {"h": 1}, "c": {"h": 2}}`))
	propose(t, n, fsm.Command{Kind: fsm.CmdSetRules, Body: []byte(`{"rules": {"items": {".indexOn": "h"}}}`)})
	q, err := tree.NewQuery(tree.QuerySpec{Order: tree.OrderByChild, Child: tree.Path{"h"}, Limit: 2, HasLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	items := tree.Path{"items"}
	waitFor(t, "the index", 10*time.Second, func() bool { return f.ReadLocal(items).Indexes.Lookup(items, q) != nil })
	rr := f.ReadLocal(items)
	res, err := q.EvalWith(context.Background(), rr.Value, rr.Indexes.Lookup(items, q))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(tree.AppendQueryResult(nil, res, tree.RenderOptions{})); got != `{"b":{"h":1},"c":{"h":2}}` {
		t.Fatalf("got %s", got)
	}
}

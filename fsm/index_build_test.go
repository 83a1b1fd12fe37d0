package fsm

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestRulesApplyBuildsNoIndex: the apply of rules that add an index over
// a large node builds nothing; a query issued while the index is being
// built scans and answers exactly what it answers from the index once
// built, also after writes made during the build.
func TestRulesApplyBuildsNoIndex(t *testing.T) {
	const n = 20_000
	f := scoresFSM(t, n, "")
	items := tree.Path{"items"}
	setRules(t, f, `{"rules": {"items": {".indexOn": "score"}}}`)
	building := f.cur.Load()
	if !building.indexes.Pending() || building.indexes.Len() != 0 {
		t.Fatalf("the rules' apply built indexes:\n%s", dumpIndexes(building.indexes))
	}
	queries := []tree.QuerySpec{
		{Order: tree.OrderByChild, Child: tree.Path{"score"}, StartAt: &tree.Bound{Value: tree.Int(n / 2)}, Limit: 5, HasLimit: true},
		{Order: tree.OrderByChild, Child: tree.Path{"score"}, EndBefore: &tree.Bound{Value: tree.Int(7)}},
		{Order: tree.OrderByChild, Child: tree.Path{"score"}, Limit: 3, HasLimit: true, LimitToLast: true},
	}
	answers := func(what string, wantIndex bool) []string {
		t.Helper()
		rr := f.ReadLocal(items)
		var out []string
		for _, spec := range queries {
			q, err := tree.NewQuery(spec)
			if err != nil {
				t.Fatal(err)
			}
			ix := rr.Indexes.Lookup(items, q)
			if (ix != nil) != wantIndex {
				t.Fatalf("%s: index %v, want %v", what, ix != nil, wantIndex)
			}
			res, err := q.EvalWith(context.Background(), rr.Value, ix)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(tree.AppendQueryResult(nil, res, tree.RenderOptions{})))
		}
		return out
	}
	during := answers("while building", false)
	built, err := buildIndexSet(context.Background(), building.indexes.rules, building.root, building.indexes)
	if err != nil {
		t.Fatal(err)
	}
	if !f.installIndexes(building.indexes, building.root, built) {
		t.Fatal("not installed")
	}
	if after := answers("once built", true); strings.Join(after, "\n") != strings.Join(during, "\n") {
		t.Fatalf("answers differ:\nwhile building: %s\nonce built:     %s", during, after)
	}

	// Writes during a build: the index installed has caught up with them.
	setRules(t, f, `{"rules": {"items": {".indexOn": ["score", ".value"]}}}`)
	building = f.cur.Load()
	for i, v := range []string{"-1", "100000", "null", `"s"`} {
		if _, err := f.apply(cmd(t, CmdSet, fmt.Sprintf("/items/k%07d/score", i*97), v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.apply(cmd(t, CmdUpdate, "/items", `{"new/score": 3, "k0000005": null}`)); err != nil {
		t.Fatal(err)
	}
	during = answers("after writes, while building", true) // by score: kept by the writes
	built, err = buildIndexSet(context.Background(), building.indexes.rules, building.root, building.indexes)
	if err != nil {
		t.Fatal(err)
	}
	if !f.installIndexes(building.indexes, building.root, built) {
		t.Fatal("not installed after writes")
	}
	s := f.cur.Load()
	checkIndexSet(t, "caught up", s.indexes, s.rules, s.root)
	if after := answers("caught up", true); strings.Join(after, "\n") != strings.Join(during, "\n") {
		t.Fatalf("answers differ:\nbefore: %s\nafter:  %s", during, after)
	}
}

// TestIndexBuildAfterManyWrites: a build that more writes than the log
// keeps went past is not installed; BuildIndexes then builds again from
// a newer state.
func TestIndexBuildAfterManyWrites(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, `{"rules": {"items": {".indexOn": "h"}}}`)
	building := f.cur.Load()
	var body strings.Builder
	body.WriteByte('{')
	for i := range maxLoggedPaths + 1 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `"k%d/h":%d`, i, i%1000)
	}
	body.WriteByte('}')
	if _, err := f.apply(cmd(t, CmdUpdate, "/items", body.String())); err != nil {
		t.Fatal(err)
	}
	built, err := buildIndexSet(context.Background(), building.indexes.rules, building.root, building.indexes)
	if err != nil {
		t.Fatal(err)
	}
	if f.installIndexes(building.indexes, building.root, built) {
		t.Fatal("a build that cannot catch up was installed")
	}
	if !f.cur.Load().indexes.Pending() {
		t.Fatal("the set is no longer partial")
	}
	if err := f.BuildIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := f.cur.Load()
	if s.indexes.Pending() || s.indexes.Len() != 1 {
		t.Fatalf("after BuildIndexes: pending %v, %d indexes", s.indexes.Pending(), s.indexes.Len())
	}
	checkIndexSet(t, "built again", s.indexes, s.rules, s.root)
}

// TestIndexBuildsDuringWrites runs BuildIndexes whenever IndexWork says so
// while Apply keeps writing and changing the rules and readers query (run
// with -race): every answer is the scan's, and the set ends complete.
func TestIndexBuildsDuringWrites(t *testing.T) {
	f := newTestFSM()
	r := rand.New(rand.NewSource(5))
	for range 50 {
		f.apply(randomIndexWrite(r))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-f.IndexWork():
			}
			if err := f.BuildIndexes(ctx); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	}()
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			for ctx.Err() == nil {
				for _, loc := range []tree.Path{nil, {"items"}, {"rooms", "special", "msgs"}} {
					if _, problem := compareIndexedQueries(r, "concurrent", f.ReadLocal(loc), loc, 4); problem != "" {
						t.Error(problem)
						return
					}
				}
			}
		}()
	}
	ruleSets := []string{indexRules, otherIndexRules, indexRules}
	for i := range 400 {
		if i%100 == 0 {
			setRules(t, f, ruleSets[i/100%len(ruleSets)])
		}
		f.apply(randomIndexWrite(r))
	}
	// Whatever the builder got to, a build returns once the set is complete.
	if err := f.BuildIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	s := f.cur.Load()
	checkIndexSet(t, "in the end", s.indexes, s.rules, s.root)
}

// TestIndexBuildCatchesUpInRounds: a build many writes went past catches
// up with them before it takes Apply's lock, and is then current.
func TestIndexBuildCatchesUpInRounds(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, indexRules)
	r := rand.New(rand.NewSource(3))
	for range 100 {
		f.apply(randomIndexWrite(r))
	}
	building := f.cur.Load()
	built, err := buildIndexSet(context.Background(), building.indexes.rules, building.root, building.indexes)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 * installAtMost {
		f.apply(randomIndexWrite(r))
	}
	from, root, built := f.catchUp(building.indexes, building.root, built)
	s := f.cur.Load()
	if from != s.indexes || root != s.root {
		t.Fatal("the build did not catch up with the writes")
	}
	checkIndexSet(t, "caught up outside the lock", built, s.rules, s.root)
	if !f.installIndexes(from, root, built) {
		t.Fatal("not installed")
	}
	s = f.cur.Load()
	checkIndexSet(t, "installed", s.indexes, s.rules, s.root)
}

package fsm

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"sync"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestIndexesFollowWrites applies random writes (PUT, DELETE, PATCH, POST
// and priorities, at, above and below indexed locations, admin and
// judged) and rules changes. The indexes new rules declare are built from
// the state the rules made and installed some writes later, caught up
// with them. After every entry the indexes kept by Apply must equal those
// built from scratch (be some of them while they are being built), and
// random queries must answer the same from an index as by scanning.
func TestIndexesFollowWrites(t *testing.T) {
	seeds, steps := int64(8), 150
	if testing.Short() {
		seeds = 3
	}
	used := 0
	for seed := int64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewSource(seed))
		step0 := 0
		f := newTestFSM()
		for range 10 {
			f.apply(randomIndexWrite(r)) // before any rules: judged ones are refused
		}
		// build is the state whose partial set is being built, due at
		// step buildAt.
		var (
			build   *state
			buildAt int
		)
		rulesSet := func() {
			if build = f.cur.Load(); !build.indexes.Pending() {
				build = nil
			}
			buildAt = step0 + r.Intn(12)
		}
		setRules(t, f, indexRules)
		rulesSet()
		ruleSets := []string{indexRules, otherIndexRules, noIndexRules, indexRules, indexRules}
		for step := range steps {
			what := ""
			if build != nil && step >= buildAt {
				built, err := buildIndexSet(context.Background(), build.indexes.rules, build.root, build.indexes)
				if err != nil {
					t.Fatal(err)
				}
				if !f.installIndexes(build.indexes, build.root, built) {
					t.Fatalf("seed %d step %d: the indexes built were not installed", seed, step)
				}
				build = nil
			}
			if r.Intn(30) == 0 {
				src := ruleSets[r.Intn(len(ruleSets))]
				setRules(t, f, src)
				if build != nil {
					// A build for rules replaced since must not be installed.
					built, err := buildIndexSet(context.Background(), build.indexes.rules, build.root, build.indexes)
					if err != nil || f.installIndexes(build.indexes, build.root, built) {
						t.Fatalf("seed %d step %d: the indexes of replaced rules were installed (%v)", seed, step, err)
					}
				}
				step0 = step
				rulesSet()
				what = "rules"
			} else {
				c := randomIndexWrite(r)
				_, err := f.apply(c)
				what = c.Path.String() + " " + string(c.Body)
				if err != nil {
					what += " (" + err.Error() + ")"
				}
			}
			what = "seed " + itoa(seed) + " step " + itoa(int64(step)) + ": " + what
			s := f.cur.Load()
			checkIndexSet(t, what, s.indexes, s.rules, s.root)
			locs := []tree.Path{nil, {"items"}, {"rooms", "special", "msgs"}, randomIndexPath(r), randomIndexPath(r)}
			if s.indexes != nil {
				s.indexes.locs.Scan(func(li *locIndex) bool {
					if r.Intn(3) == 0 {
						locs = append(locs, li.loc)
					}
					return true
				})
			}
			for _, loc := range locs {
				n, problem := compareIndexedQueries(r, what, f.ReadLocal(loc), loc, 8)
				if problem != "" {
					t.Fatal(problem)
				}
				used += n
			}
		}
	}
	if used < 1000*int(seeds)/12 {
		t.Fatalf("only %d queries had an index", used)
	}
}

func itoa(i int64) string { return string(tree.AppendJSON(nil, tree.Int(i), tree.RenderOptions{})) }

// TestIndexDeterminism: replicas applying the same entries, one by one or
// in batches, and one restored from a snapshot, hold the same indexes once
// built.
func TestIndexDeterminism(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var logs []Entry
	add := func(c Command) {
		logs = append(logs, Entry{Index: uint64(len(logs) + 1), Command: true, Data: mustEncode(c)})
	}
	for i := range 400 {
		if i == 50 {
			add(Command{Kind: CmdSetRules, Body: []byte(indexRules)})
		}
		add(randomIndexWrite(r))
	}
	one, batched := New(), New()
	nonEmpty := 0
	for i := 0; i < len(logs); i += 37 {
		batch := logs[i:min(i+37, len(logs))]
		for _, l := range batch {
			one.Apply(l)
		}
		batched.ApplyBatch(batch)
		for _, f := range []*FSM{one, batched} {
			if err := f.BuildIndexes(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		a, b := dumpIndexes(one.cur.Load().indexes), dumpIndexes(batched.cur.Load().indexes)
		if a != b {
			t.Fatalf("entry %d: indexes differ:\n%s\nbatched:\n%s", batch[len(batch)-1].Index, a, b)
		}
		if a != "" {
			nonEmpty++
		}
	}
	if nonEmpty < 5 {
		t.Fatalf("indexes were empty at %d of the checks", 11-nonEmpty)
	}
	a := dumpIndexes(one.cur.Load().indexes)
	restored := New()
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, one))); err != nil {
		t.Fatal(err)
	}
	s := restored.cur.Load()
	if c := dumpIndexes(s.indexes); c != a {
		t.Fatalf("restored indexes differ:\n%s\nwant:\n%s", c, a)
	}
	checkIndexSet(t, "restored", s.indexes, s.rules, s.root)
}

// TestIndexesFollowRules: setting rules keeps the indexes the new rules
// still declare (the same ones, not rebuilt) and drops the others at once;
// the indexes they add are built by BuildIndexes.
func TestIndexesFollowRules(t *testing.T) {
	f := newTestFSM()
	if _, err := f.apply(cmd(t, CmdSet, "/", `{"items": {"a": {"h": 2, "t": "x", "n": {"v": true}}, "b": {"h": 1}},
		"rooms": {"r1": {"msgs": {"m1": {"t": 5}, "m2": {"t": 4}}}, "special": {"msgs": {"m": {"h": 0}}}}}`)); err != nil {
		t.Fatal(err)
	}
	want := func(what string, n int) {
		t.Helper()
		if err := f.BuildIndexes(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := f.cur.Load()
		checkIndexSet(t, what, s.indexes, s.rules, s.root)
		if got := s.indexes.Len(); got != n {
			t.Fatalf("%s: %d indexes, want %d:\n%s", what, got, n, dumpIndexes(s.indexes))
		}
	}
	want("default rules", 0)
	setRules(t, f, indexRules)
	// root by h; items by h, n/v, .value; rooms/r1/msgs by t, .value;
	// rooms/special/msgs by h (not by t: its own rule governs it).
	want("rules set", 7)
	byH := f.cur.Load().indexes.Lookup(tree.Path{"items"}, mustQuery(t, `"h"`))
	if byH.Len() != 2 {
		t.Fatalf("items by h: %d children", byH.Len())
	}
	setRules(t, f, otherIndexRules)
	s := f.cur.Load().indexes
	if !s.Pending() || s.Lookup(tree.Path{"items"}, mustQuery(t, `"h"`)) != byH || s.Len() != 2 {
		t.Fatalf("new rules, before the build: want items by h, rooms/r1/msgs by t kept:\n%s", dumpIndexes(s))
	}
	// items by h (kept), by t (new); rooms/$r/msgs by t (both rooms).
	want("rules changed", 4)
	s = f.cur.Load().indexes
	if s.Lookup(tree.Path{"items"}, mustQuery(t, `"h"`)) != byH {
		t.Error("an index the new rules still declare was rebuilt")
	}
	if s.Lookup(tree.Path{"items"}, mustQuery(t, `"$value"`)) != nil || s.Lookup(tree.Path{"items"}, mustQuery(t, `"t"`)) == nil {
		t.Error("indexes not dropped or added")
	}
	if _, err := f.apply(Command{Kind: CmdSetRules, Body: []byte(indexRules), As: &Access{}}); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("a user's rules: %v", err)
	}
	want("refused rules", 4)
	setRules(t, f, noIndexRules)
	want("no indexes", 0)
}

// TestEvalWithOtherIndex: an index of another version of the node, or of
// another ordering, is not used: the query scans and stays right.
func TestEvalWithOtherIndex(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, indexRules)
	if _, err := f.apply(cmd(t, CmdSet, "/items", `{"a": {"h": 2}, "b": {"h": 1}}`)); err != nil {
		t.Fatal(err)
	}
	q := mustQuery(t, `"h"`)
	old := f.ReadLocal(tree.Path{"items"}).Indexes.Lookup(tree.Path{"items"}, q)
	if _, err := f.apply(cmd(t, CmdSet, "/items/c", `{"h": 0}`)); err != nil {
		t.Fatal(err)
	}
	rr := f.ReadLocal(tree.Path{"items"})
	for _, ix := range []*tree.Index{old, rr.Indexes.Lookup(tree.Path{"items"}, mustQuery(t, `"$value"`))} {
		res, err := q.EvalWith(context.Background(), rr.Value, ix)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(tree.AppendQueryResult(nil, res, tree.RenderOptions{})); got != `{"c":{"h":0},"b":{"h":1},"a":{"h":2}}` {
			t.Fatalf("got %s", got)
		}
	}
}

// TestMissingIndex checks Firebase's refusal text and when it applies.
func TestMissingIndex(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, `{"rules": {"dinosaurs": {".indexOn": ["height", "ratings/pos"]}, "scores": {".indexOn": ".value"}}}`)
	r := f.cur.Load().rules
	tests := []struct {
		path, orderBy string
		rules         *Rules
		want          string
	}{
		{"/dinosaurs", `"height"`, r, ""},
		{"/dinosaurs", `"/ratings//pos"`, r, ""},
		{"/dinosaurs", `"$key"`, r, ""},
		{"/dinosaurs", `"$priority"`, r, ""},
		{"/dinosaurs", `"length"`, r, `Index not defined, add ".indexOn": "length", for path "/dinosaurs", to the rules`},
		{"/dinosaurs", `"$value"`, r, `Index not defined, add ".indexOn": ".value", for path "/dinosaurs", to the rules`},
		{"/scores", `"$value"`, r, ""},
		{"/", `"a/b"`, r, `Index not defined, add ".indexOn": "a/b", for path "/", to the rules`},
		{"/dinosaurs", `"height"`, nil, `Index not defined, add ".indexOn": "height", for path "/dinosaurs", to the rules`},
	}
	for _, tc := range tests {
		err := tc.rules.MissingIndex(mustPath(t, tc.path), mustQuery(t, tc.orderBy))
		var pe *tree.PublicError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s: %v", tc.path, tc.orderBy, err)
		case tc.want != "" && (!errors.As(err, &pe) || !errors.Is(err, tree.ErrBadRequest) || pe.Message != tc.want):
			t.Errorf("%s %s: %v, want %s", tc.path, tc.orderBy, err, tc.want)
		}
	}
	if r.MissingIndex(nil, nil) != nil {
		t.Error("no query needs no index")
	}
}

// TestIndexedWriteCost: a one-child write into an indexed node of 50,000
// children costs O(log n) more allocations, not a rebuild of the index.
func TestIndexedWriteCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 50,000 children")
	}
	allocs := func(indexOn string) float64 {
		f := scoresFSM(t, 50_000, indexOn)
		i := int64(0)
		a := testing.AllocsPerRun(50, func() {
			i++
			if _, err := f.applyParsed(Command{Kind: CmdSet, Path: tree.Path{"items", "k0012345", "score"}, Parsed: true, Value: tree.Int(i)}); err != nil {
				t.Fatal(err)
			}
		})
		if f.Root().Get(tree.Path{"items", "k0012345", "score"}).IntValue() != i {
			t.Fatal("the write was not applied")
		}
		s := f.cur.Load()
		checkIndexSet(t, "after the writes", s.indexes, s.rules, s.root)
		return a
	}
	plain, indexed := allocs(""), allocs(`["score", ".value"]`)
	if indexed-plain > 100 {
		t.Fatalf("a one-child write allocates %.0f times with two indexes, %.0f without", indexed, plain)
	}
}

// TestIndexedReadsDuringWrites queries from the indexes while Apply keeps
// changing them (run with -race): published indexes are never written.
func TestIndexedReadsDuringWrites(t *testing.T) {
	f := newTestFSM()
	setRules(t, f, indexRules)
	r := rand.New(rand.NewSource(11))
	for range 50 {
		f.apply(randomIndexWrite(r))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, loc := range []tree.Path{nil, {"items"}, {"rooms", "special", "msgs"}} {
					if _, problem := compareIndexedQueries(r, "concurrent", f.ReadLocal(loc), loc, 4); problem != "" {
						t.Error(problem)
						return
					}
				}
			}
		}()
	}
	for range 300 {
		f.apply(randomIndexWrite(r))
	}
	close(stop)
	wg.Wait()
}

package watch

import (
	"strings"
	"testing"

	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/history"
)

const (
	reg  = "reg/g0/k0"
	ctr  = "ctr/s0/n0"
	list = "list/g0/k0"
	pk1  = "-AAAAAAAAAAAAAAAAAA1"
	pk2  = "-AAAAAAAAAAAAAAAAAA2"
)

// scenario is a small run: its history, and two watchers that saw it.
// Times are in ns of the history's clock; log indexes:
//
//	10 reg = "c0-1"   11 ctr += 1   12 reg = "c1-1"   13 ctr += 2
//	14 append c0-2    15 append c1-2                  16 the marker
//
// Watcher 0 streamed from index 5 without a break. Watcher 1 lost its
// stream after index 9 and got a fresh put at index 11 (at t=35), which
// coalesced "c0-1" and the first increment.
type scenario struct {
	ops   []history.Op
	file  File
	final string
}

func newScenario() *scenario {
	ops := []history.Op{
		{Key: reg, Kind: history.Register, Type: history.Write, Value: `"c0-1"`, Outcome: history.OK, Call: 10, Return: 20},
		{Key: reg, Kind: history.Register, Type: history.Write, Value: `"c1-1"`, Outcome: history.OK, Call: 30, Return: 40, Patch: true},
		{Key: reg, Kind: history.Register, Type: history.Write, Value: `"c2-1"`, Outcome: history.Unknown, Status: 503, Call: 50, Return: 60},
		{Key: ctr, Kind: history.Counter, Type: history.Incr, Delta: 1, OutNum: 1, Outcome: history.OK, Call: 10, Return: 25},
		{Key: ctr, Kind: history.Counter, Type: history.Incr, Delta: 2, OutNum: 3, Outcome: history.OK, Call: 30, Return: 45},
		{Key: list, Kind: history.List, Type: history.Append, Value: "c0-2", Name: pk1, Outcome: history.OK, Call: 30, Return: 46},
		{Key: list, Kind: history.List, Type: history.Append, Value: "c1-2", Name: pk2, Outcome: history.OK, Call: 47, Return: 48},
		{Key: reg, Kind: history.Register, Type: history.CAS, Expect: `"c0-1"`, Value: `"c3-1"`, Outcome: history.Rejected, Status: 412, Out: `"c1-1"`, Call: 41, Return: 42},
		{Key: reg, Kind: history.Register, Type: history.Write, Value: `"c4-1"`, Outcome: history.Fail, Call: 43, Return: 44},
		{Key: reg, Kind: history.Register, Type: history.Read, Out: `"c1-1"`, Outcome: history.OK, Final: true, Call: 70, Return: 71},
	}
	for i := range ops {
		ops[i].ID, ops[i].Client, ops[i].Node = i, i, "n1"
	}
	final := `{"ctr":{"s0":{"n0":3}},"list":{"g0":{"k0":{"` + pk1 + `":"c0-2","` + pk2 + `":"c1-2"}}},"reg":{"g0":{"k0":"c1-1"}},"watch-end":"end"}`
	marker := []Obs{{Index: 16, Value: `"end"`}}
	w0 := Record{
		Watcher: 0,
		Streams: []Stream{{Node: "n1", How: "initial", Events: 8, End: "stopped"}},
		Puts:    []Put{{After: 0, Index: 5, At: 5}},
		Last:    16,
		Keys: map[string][]Obs{
			reg:       {{Index: 10, Value: `"c0-1"`}, {Index: 12, Value: `"c1-1"`}},
			ctr:       {{Index: 11, Value: "1"}, {Index: 13, Value: "3"}},
			list:      {{Index: 14, Added: []history.Item{{Name: pk1, Value: "c0-2"}}}, {Index: 15, Added: []history.Item{{Name: pk2, Value: "c1-2"}}}},
			MarkerKey: marker,
		},
		Copy: final,
	}
	w1 := Record{
		Watcher: 1,
		Streams: []Stream{{Node: "n2", How: "initial", End: "eof"}, {Node: "n3", How: "fresh", LastEventID: 9, Events: 6, End: "stopped"}},
		Puts:    []Put{{After: 0, Index: 5, At: 5}, {After: 9, Index: 11, At: 35}},
		Last:    16,
		Keys: map[string][]Obs{
			reg:       {{Index: 11, Value: `"c0-1"`, Rebase: true}, {Index: 12, Value: `"c1-1"`}},
			ctr:       {{Index: 11, Value: "1", Rebase: true}, {Index: 13, Value: "3"}},
			list:      {{Index: 14, Added: []history.Item{{Name: pk1, Value: "c0-2"}}}, {Index: 15, Added: []history.Item{{Name: pk2, Value: "c1-2"}}}},
			MarkerKey: marker,
		},
		Copy: final,
	}
	return &scenario{ops: ops, final: final, file: File{Final: final, Watchers: []Record{w0, w1}}}
}

// result returns the verdict of the check named like name.
func result(t *testing.T, v Verdict, name string) checks.Result {
	t.Helper()
	for _, r := range v.Results {
		if strings.HasPrefix(r.Name, name) {
			return r
		}
	}
	t.Fatalf("no check %q in %+v", name, v.Results)
	return checks.Result{}
}

func TestCheckCleanRunPasses(t *testing.T) {
	s := newScenario()
	v := Check(s.ops, s.file)
	for _, r := range v.Results {
		if !r.OK {
			t.Errorf("%s", r)
		}
	}
	f := v.Figures
	if f.Watchers != 2 || f.Streams != 3 || f.Reconnects != 1 || f.Fresh != 1 || f.Events != 14 {
		t.Errorf("figures %+v", f)
	}
	// Register values: "c0-1" and "c1-1" on both watchers (watcher 1 saw
	// "c0-1" in its fresh put); the indeterminate "c2-1" nobody saw is
	// not held against anyone.
	if f.Delivered != 4 || f.Coalesced != 0 || f.Violations != 0 {
		t.Errorf("delivery figures %+v", f)
	}
	if f.OwnEvent != 7 || f.InPut != 1 {
		t.Errorf("own events %d, in puts %d; want 7 and 1", f.OwnEvent, f.InPut)
	}
}

// TestCheckCountsCoalescedValues: a value overwritten inside the range a
// fresh put covered is counted, not failed.
func TestCheckCountsCoalescedValues(t *testing.T) {
	s := newScenario()
	w1 := &s.file.Watchers[1]
	w1.Puts[1] = Put{After: 9, Index: 12, At: 45}
	w1.Keys[reg] = []Obs{{Index: 12, Value: `"c1-1"`, Rebase: true}}
	w1.Keys[ctr] = []Obs{{Index: 12, Value: "1", Rebase: true}, {Index: 13, Value: "3"}}
	v := Check(s.ops, s.file)
	for _, r := range v.Results {
		if !r.OK {
			t.Errorf("%s", r)
		}
	}
	if v.Figures.Coalesced != 1 || v.Figures.Delivered != 3 {
		t.Errorf("figures %+v, want 1 coalesced and 3 delivered", v.Figures)
	}
}

func TestCheckFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		check string // the check that must fail
		want  string // in its details
		edit  func(s *scenario)
	}{
		{"a value nobody wrote", "stream values were written", "no operation wrote", func(s *scenario) {
			s.file.Watchers[0].Keys[reg][1].Value = `"c9-9"`
		}},
		{"the value of a rejected compare-and-set", "stream values were written", "certainly did not take effect", func(s *scenario) {
			s.file.Watchers[0].Keys[reg] = append(s.file.Watchers[0].Keys[reg], Obs{Index: 16, Value: `"c3-1"`})
		}},
		{"the value of a refused write", "stream values were written", "certainly did not take effect", func(s *scenario) {
			s.file.Watchers[0].Keys[reg] = append(s.file.Watchers[0].Keys[reg], Obs{Index: 16, Value: `"c4-1"`})
		}},
		{"an increment nobody made", "stream values were written", "2^3", func(s *scenario) {
			s.file.Watchers[0].Keys[ctr][1].Value = "9"
		}},
		{"a child under another push key", "stream values were written", "was answered", func(s *scenario) {
			s.file.Watchers[1].Keys[list][1].Added[0].Name = "-AAAAAAAAAAAAAAAAAA9"
		}},
		{"a path the workload never writes", "stream values were written", "never writes", func(s *scenario) {
			s.file.Watchers[0].Keys["other"] = []Obs{{Index: 15, Value: "1"}}
		}},
		{"an out-of-order pair", "stream events in commit order", "before that one was invoked", func(s *scenario) {
			// "c1-1" (invoked at 30) committed before "c0-1", which was
			// acknowledged at 20.
			for i := range s.file.Watchers {
				s.file.Watchers[i].Keys[reg] = []Obs{{Index: 10, Value: `"c1-1"`}, {Index: 12, Value: `"c0-1"`}}
			}
		}},
		{"a value that went back", "stream events in commit order", "went back", func(s *scenario) {
			w0 := &s.file.Watchers[0]
			w0.Keys[reg] = append(w0.Keys[reg], Obs{Index: 16, Value: `"c0-1"`})
		}},
		{"one write at two indexes", "stream events in commit order", "two entries", func(s *scenario) {
			s.file.Watchers[1].Keys[reg][1].Index = 13
		}},
		{"indexes going down on a key", "stream events in commit order", "after one at index", func(s *scenario) {
			s.file.Watchers[0].Keys[ctr][1].Index = 9
		}},
		{"a counter that lost an increment", "stream events in commit order", "increments lost", func(s *scenario) {
			s.file.Watchers[0].Keys[ctr] = append(s.file.Watchers[0].Keys[ctr], Obs{Index: 16, Value: "2"})
		}},
		{"an increment that disagrees with its answer", "stream events in commit order", "its client was answered", func(s *scenario) {
			s.ops[4].OutNum = 7
		}},
		{"push keys out of commit order", "stream events in commit order", "not in commit order", func(s *scenario) {
			w := &s.file.Watchers[0]
			w.Keys[list][0].Added, w.Keys[list][1].Added = w.Keys[list][1].Added, w.Keys[list][0].Added
		}},
		{"a protocol problem", "stream events in commit order", "ids must increase", func(s *scenario) {
			s.file.Watchers[1].Problems = []string{"watcher 1: n3: id 12 after 13: ids must increase"}
		}},
		{"a copy that misses the final state", "streams complete", "differs from the final state", func(s *scenario) {
			w0 := &s.file.Watchers[0]
			w0.Copy = strings.Replace(s.final, `"c1-1"`, `"c0-1"`, 1)
		}},
		{"no final state", "streams complete", "no final state", func(s *scenario) {
			s.file.Final, s.file.Error = "", "the marker could not be written"
		}},
		{"a committed write never delivered", "streams complete", "lies where the stream missed nothing", func(s *scenario) {
			// Watcher 1 skips "c0-1", whose entry 10 watcher 0 saw, with
			// no put covering it.
			w1 := &s.file.Watchers[1]
			w1.Puts = w1.Puts[:1]
			w1.Keys[reg] = w1.Keys[reg][1:]
			w1.Keys[ctr][0].Rebase = false
		}},
		{"an acknowledged write nobody's stream delivered", "streams complete", "no put at", func(s *scenario) {
			// "c0-1" reached neither watcher, and no put arrived after it
			// was invoked at 10 on watcher 0.
			w0 := &s.file.Watchers[0]
			w0.Keys[reg] = w0.Keys[reg][1:]
		}},
		{"an indeterminate write seen once, then missed", "streams complete", "missed nothing", func(s *scenario) {
			// "c2-1", whose client got a 503, arrived on watcher 0 as
			// entry 16's event: it committed, so watcher 1 must have it.
			w0 := &s.file.Watchers[0]
			w0.Keys[reg] = append(w0.Keys[reg], Obs{Index: 16, Value: `"c2-1"`})
			w0.Keys[MarkerKey][0].Index = 17
			w0.Last = 17
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newScenario()
			c.edit(s)
			v := Check(s.ops, s.file)
			r := result(t, v, c.check)
			if r.OK {
				t.Fatalf("%s passed:\n%s", c.check, r)
			}
			if !strings.Contains(strings.Join(r.Details, "\n"), c.want) {
				t.Errorf("%s: no %q in\n%s", c.check, c.want, r)
			}
			if v.Figures.Violations == 0 {
				t.Errorf("no violations counted: %+v", v.Figures)
			}
		})
	}
}

package model

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// h builds a one-key history: each op gets the key and kind, an id and,
// unless set, client = its index (every op on its own client).
func h(key string, kind history.Kind, ops ...history.Op) []history.Op {
	for i := range ops {
		ops[i].ID = i
		ops[i].Key = key
		ops[i].Kind = kind
		if ops[i].Node == "" {
			ops[i].Node = "n1"
		}
		if ops[i].Outcome == "" {
			ops[i].Outcome = history.OK
		}
	}
	return ops
}

func at(call, ret int64) history.Op { return history.Op{Call: call, Return: ret} }

func write(v string, call, ret int64) history.Op {
	op := at(call, ret)
	op.Type, op.Value = history.Write, v
	return op
}

func read(v string, call, ret int64) history.Op {
	op := at(call, ret)
	op.Type, op.Out = history.Read, v
	return op
}

func cas(expect, v string, call, ret int64) history.Op {
	op := at(call, ret)
	op.Type, op.Expect, op.Value = history.CAS, expect, v
	return op
}

func incr(d, out int64, call, ret int64) history.Op {
	op := at(call, ret)
	op.Type, op.Delta, op.OutNum = history.Incr, d, out
	return op
}

func cread(v int64, call, ret int64) history.Op {
	op := at(call, ret)
	op.Type, op.OutNum = history.Read, v
	return op
}

func appendOp(v, name string, call, ret int64) history.Op {
	op := at(call, ret)
	op.Type, op.Value, op.Name = history.Append, v, name
	return op
}

func lread(call, ret int64, items ...history.Item) history.Op {
	op := at(call, ret)
	op.Type, op.Items = history.Read, items
	return op
}

func unknown(op history.Op) history.Op {
	op.Outcome = history.Unknown
	op.Status = 503
	return op
}

func rejected(op history.Op, current string) history.Op {
	op.Outcome = history.Rejected
	op.Status = 412
	op.Out = current
	return op
}

func local(op history.Op) history.Op {
	op.Local = true
	return op
}

func TestModels(t *testing.T) {
	cases := []struct {
		name string
		kind history.Kind
		ops  []history.Op
		want porcupine.CheckResult
	}{
		{"register: sequential write then read", history.Register, []history.Op{
			write(`"a"`, 0, 10), read(`"a"`, 20, 30),
		}, porcupine.Ok},
		{"register: read of the initial null", history.Register, []history.Op{
			read(history.Null, 0, 10), write(`"a"`, 20, 30),
		}, porcupine.Ok},
		{"register: concurrent writes, reads agree on one order", history.Register, []history.Op{
			write(`"a"`, 0, 100), write(`"b"`, 0, 100), read(`"b"`, 110, 120), read(`"b"`, 130, 140),
		}, porcupine.Ok},
		{"register: reads flip back after both writes returned", history.Register, []history.Op{
			write(`"a"`, 0, 100), write(`"b"`, 0, 100), read(`"b"`, 110, 120), read(`"a"`, 130, 140),
		}, porcupine.Illegal},
		// The stale read of a paused old leader answering
		// consistency=local: "b" was acknowledged before the read
		// started, yet the read returns "a".
		{"register: stale read after an acknowledged overwrite", history.Register, []history.Op{
			write(`"a"`, 0, 10), write(`"b"`, 20, 30), read(`"a"`, 40, 50),
		}, porcupine.Illegal},
		{"register: a value nobody wrote", history.Register, []history.Op{
			write(`"a"`, 0, 10), read(`"z"`, 20, 30),
		}, porcupine.Illegal},
		{"register: a lost acknowledged write", history.Register, []history.Op{
			write(`"a"`, 0, 10), read(history.Null, 20, 30),
		}, porcupine.Illegal},
		{"register: indeterminate write seen later", history.Register, []history.Op{
			write(`"a"`, 0, 10), unknown(write(`"b"`, 20, 30)), read(`"a"`, 40, 50), read(`"b"`, 60, 70),
		}, porcupine.Ok},
		{"register: indeterminate write never seen", history.Register, []history.Op{
			write(`"a"`, 0, 10), unknown(write(`"b"`, 20, 30)), read(`"a"`, 40, 50), read(`"a"`, 60, 70),
		}, porcupine.Ok},
		{"register: indeterminate write seen, then undone", history.Register, []history.Op{
			write(`"a"`, 0, 10), unknown(write(`"b"`, 20, 30)), read(`"b"`, 40, 50), read(`"a"`, 60, 70),
		}, porcupine.Illegal},
		{"register: CAS chain", history.Register, []history.Op{
			write(`"a"`, 0, 10), cas(`"a"`, `"b"`, 20, 30), rejected(cas(`"a"`, `"c"`, 40, 50), `"b"`), read(`"b"`, 60, 70),
		}, porcupine.Ok},
		{"register: two sequential CAS from the same value both succeed", history.Register, []history.Op{
			write(`"a"`, 0, 10), cas(`"a"`, `"b"`, 20, 30), cas(`"a"`, `"c"`, 40, 50),
		}, porcupine.Illegal},
		{"register: 412 reporting a value that was not current", history.Register, []history.Op{
			write(`"a"`, 0, 10), write(`"b"`, 20, 30), rejected(cas(`"x"`, `"c"`, 40, 50), `"a"`),
		}, porcupine.Illegal},
		{"register: 412 although the value matched", history.Register, []history.Op{
			write(`"a"`, 0, 10), rejected(cas(`"a"`, `"c"`, 20, 30), `"a"`),
		}, porcupine.Illegal},
		{"register: indeterminate CAS that could not apply", history.Register, []history.Op{
			write(`"a"`, 0, 10), unknown(cas(`"x"`, `"c"`, 20, 30)), read(`"a"`, 40, 50),
		}, porcupine.Ok},
		{"register: stale local reads are not judged", history.Register, []history.Op{
			write(`"a"`, 0, 10), write(`"b"`, 20, 30), local(read(`"a"`, 40, 50)),
		}, porcupine.Ok},

		{"counter: increments answer running totals", history.Counter, []history.Op{
			incr(2, 2, 0, 10), incr(3, 5, 20, 30), cread(5, 40, 50),
		}, porcupine.Ok},
		{"counter: concurrent increments in either order", history.Counter, []history.Op{
			incr(2, 5, 0, 100), incr(3, 3, 0, 100), cread(5, 110, 120),
		}, porcupine.Ok},
		{"counter: a lost increment", history.Counter, []history.Op{
			incr(1, 1, 0, 10), incr(1, 1, 20, 30),
		}, porcupine.Illegal},
		{"counter: a stale read", history.Counter, []history.Op{
			incr(1, 1, 0, 10), incr(1, 2, 20, 30), cread(1, 40, 50),
		}, porcupine.Illegal},
		{"counter: an indeterminate increment applied", history.Counter, []history.Op{
			incr(1, 1, 0, 10), unknown(incr(5, 0, 20, 30)), cread(6, 40, 50), incr(1, 7, 60, 70),
		}, porcupine.Ok},
		{"counter: an indeterminate increment not applied", history.Counter, []history.Op{
			incr(1, 1, 0, 10), unknown(incr(5, 0, 20, 30)), cread(1, 40, 50),
		}, porcupine.Ok},

		{"list: appends in commit order", history.List, []history.Op{
			appendOp("a", "-A", 0, 10), appendOp("b", "-B", 20, 30),
			lread(40, 50, history.Item{Name: "-A", Value: "a"}, history.Item{Name: "-B", Value: "b"}),
		}, porcupine.Ok},
		{"list: children sorted against commit order", history.List, []history.Op{
			appendOp("a", "-B", 0, 10), appendOp("b", "-A", 20, 30),
			lread(40, 50, history.Item{Name: "-A", Value: "b"}, history.Item{Name: "-B", Value: "a"}),
		}, porcupine.Illegal},
		{"list: an acknowledged append missing", history.List, []history.Op{
			appendOp("a", "-A", 0, 10), appendOp("b", "-B", 20, 30),
			lread(40, 50, history.Item{Name: "-B", Value: "b"}),
		}, porcupine.Illegal},
		{"list: an append seen twice", history.List, []history.Op{
			appendOp("a", "-A", 0, 10),
			lread(40, 50, history.Item{Name: "-A", Value: "a"}, history.Item{Name: "-B", Value: "a"}),
		}, porcupine.Illegal},
		{"list: an indeterminate append shows up", history.List, []history.Op{
			appendOp("a", "-A", 0, 10), unknown(appendOp("b", "", 20, 30)),
			lread(40, 50, history.Item{Name: "-A", Value: "a"}),
			lread(60, 70, history.Item{Name: "-A", Value: "a"}, history.Item{Name: "-B", Value: "b"}),
		}, porcupine.Ok},
		{"list: a read loses an item an earlier read saw", history.List, []history.Op{
			unknown(appendOp("a", "", 0, 10)),
			lread(40, 50, history.Item{Name: "-A", Value: "a"}),
			lread(60, 70),
		}, porcupine.Illegal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := CheckKey("k", h("k", c.kind, c.ops...), Options{Timeout: 10 * time.Second})
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Result != c.want {
				t.Errorf("got %s, want %s", r.Result, c.want)
			}
		})
	}
}

// TestStaleReadFromPausedLeaderIsCaught is the proof that the checker is
// not vacuous, on the history a real stale read produces: the leader n1 is
// paused (SIGSTOP) after acknowledging "v1"; n2 and n3 elect n2 and
// acknowledge "v2", which linearizable reads on n2 and n3 return; n1 is
// resumed and, before it hears of the new term, answers a read from its
// own applied state. Served as a linearizable read, that answer "v1"
// must fail the check — and the visualization must be written.
func TestStaleReadFromPausedLeaderIsCaught(t *testing.T) {
	ops := []history.Op{
		{Client: 0, Node: "n1", Type: history.Write, Value: `"v1"`, Call: 0, Return: 5},
		{Client: 1, Node: "n1", Type: history.Read, Out: `"v1"`, Call: 6, Return: 8},
		// n1 paused here; clients on it time out.
		unknownOn(history.Op{Client: 2, Node: "n1", Type: history.Write, Value: `"lost-1"`, Call: 10, Return: 3010}),
		{Client: 3, Node: "n2", Type: history.Write, Value: `"v2"`, Call: 1500, Return: 1510},
		{Client: 4, Node: "n3", Type: history.Read, Out: `"v2"`, Call: 1520, Return: 1530},
		{Client: 5, Node: "n2", Type: history.Read, Out: `"v2"`, Call: 1540, Return: 1550},
		// n1 resumed: its answer is the state it had when paused.
		{Client: 6, Node: "n1", Type: history.Read, Out: `"v1"`, Call: 3100, Return: 3105},
	}
	ops = h("reg/g0/k0", history.Register, ops...)
	dir := t.TempDir()
	r := CheckKey("reg/g0/k0", ops, Options{Timeout: 10 * time.Second, VizDir: dir})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Result != porcupine.Illegal {
		t.Fatalf("a stale read of an acknowledged overwrite was judged %s", r.Result)
	}
	if st, err := os.Stat(r.Viz); err != nil || st.Size() == 0 || filepath.Dir(r.Viz) != dir {
		t.Errorf("visualization %q: %v", r.Viz, err)
	}

	// The same answer marked as what it is — a local read — is allowed.
	ops[len(ops)-1].Local = true
	if r := CheckKey("reg/g0/k0", ops, Options{Timeout: 10 * time.Second}); r.Result != porcupine.Ok {
		t.Errorf("with the stale read marked local: %s", r.Result)
	}
}

func unknownOn(op history.Op) history.Op {
	op.Outcome = history.Unknown
	return op
}

// TestCheckPartitionsByKey: one bad key fails alone; the others pass.
func TestCheckPartitionsByKey(t *testing.T) {
	good := h("reg/a", history.Register, write(`"a"`, 0, 10), read(`"a"`, 20, 30))
	bad := h("ctr/b", history.Counter, incr(1, 1, 0, 10), cread(0, 20, 30))
	list := h("list/c", history.List, appendOp("x", "-A", 0, 10), lread(20, 30, history.Item{Name: "-A", Value: "x"}))
	all := append(append(good, bad...), list...)
	res := Check(all, Options{Timeout: 10 * time.Second})
	if len(res) != 3 {
		t.Fatalf("%d results, want 3", len(res))
	}
	want := map[string]bool{"reg/a": true, "ctr/b": false, "list/c": true}
	for _, r := range res {
		if r.OK() != want[r.Key] {
			t.Errorf("%s: %s (err %v), want ok=%v", r.Key, r.Result, r.Err, want[r.Key])
		}
	}
}

// TestTightenKeepsImpossibleObservations: a value read before its write
// was even invoked must stay a violation, not be "explained" by moving the
// write's return before its call.
func TestTightenKeepsImpossibleObservations(t *testing.T) {
	ops := h("k", history.Register, read(`"b"`, 0, 10), unknown(write(`"b"`, 20, 30)))
	if r := CheckKey("k", ops, Options{Timeout: 10 * time.Second}); r.Result != porcupine.Illegal {
		t.Errorf("got %s, want Illegal", r.Result)
	}
	pops, _ := Operations(ops)
	if pops[1].Return != Infinity {
		t.Errorf("return of the unknown write tightened to %d", pops[1].Return)
	}
}

// TestTightenUsesFirstObservation checks the bound a seen indeterminate
// write gets.
func TestTightenUsesFirstObservation(t *testing.T) {
	ops := h("k", history.Register, unknown(write(`"b"`, 0, 10)), read(`"b"`, 50, 60), read(`"b"`, 20, 40))
	pops, st := Operations(ops)
	if pops[0].Return != 40 || st.Tightened != 1 {
		t.Errorf("tightened return %d, want 40 (%+v)", pops[0].Return, st)
	}
}

// TestOperationsLeavesOutWhatCannotMatter: unanswered reads, certain
// failures and never-seen indeterminate writes are not searched; deletes
// and increments, which are not unique, keep an infinite return; a seen
// append gets the push key it was seen under.
func TestOperationsLeavesOutWhatCannotMatter(t *testing.T) {
	failed := write(`"f"`, 0, 1)
	failed.Outcome = history.Fail
	del := at(2, 3)
	del.Type, del.Value = history.Delete, history.Null
	reg := h("r", history.Register, unknown(read("", 0, 1)), failed, unknown(write(`"never"`, 0, 1)), unknown(del))
	pops, st := Operations(reg)
	if len(pops) != 1 || pops[0].Input.(*history.Op).Type != history.Delete || pops[0].Return != Infinity {
		t.Errorf("register: %d ops kept (%+v)", len(pops), st)
	}
	if st.Unseen != 1 || st.Infinite != 1 || st.Unknown != 3 {
		t.Errorf("register stats %+v", st)
	}
	ctr := h("c", history.Counter, unknown(incr(3, 0, 0, 1)))
	if pops, _ := Operations(ctr); len(pops) != 1 || pops[0].Return != Infinity {
		t.Errorf("counter: an indeterminate increment must stay open-ended: %+v", pops)
	}
	list := h("l", history.List, unknown(appendOp("x", "", 0, 1)), lread(5, 6, history.Item{Name: "-X", Value: "x"}))
	pops, _ = Operations(list)
	if got := pops[0].Input.(*history.Op).Name; got != "-X" || pops[0].Return != 6 {
		t.Errorf("seen append: name %q return %d, want -X and 6", got, pops[0].Return)
	}
	if list[0].Name != "" {
		t.Error("Operations changed its input")
	}
}

func TestMixedKindsOnOneKeyIsAnError(t *testing.T) {
	ops := h("k", history.Register, write(`"a"`, 0, 10))
	ops = append(ops, history.Op{Key: "k", Kind: history.Counter, Type: history.Incr, Outcome: history.OK})
	if r := CheckKey("k", ops, Options{}); r.Err == nil {
		t.Error("no error for a key used as two kinds")
	}
}

// counterHistory builds a valid counter history as the workload makes
// them: each increment adds its own power of two; a third of the
// operations are reads; every third increment's outcome is unknown (it
// took effect, at its invocation, if applied says so); then final reads
// from three nodes.
func counterHistory(applied func(i int) bool) (ops []history.Op, unknowns, notApplied int) {
	rng := rand.New(rand.NewPCG(1, 2))
	var state int64
	bit := 0
	for i := 0; bit < 62; i++ {
		call := int64(10 * i)
		ret := call + 1 + rng.Int64N(40) // up to four operations overlap
		var op history.Op
		switch {
		case i%3 == 0:
			op = cread(state, call, ret)
		case i%3 == 1 && i%2 == 0:
			op = unknown(incr(1<<bit, 0, call, ret))
			bit++
			unknowns++
			if applied(i) {
				state += op.Delta
			} else {
				notApplied++
			}
		default:
			state += 1 << bit
			op = incr(1<<bit, state, call, ret)
			bit++
		}
		op.Client = i % 7
		ops = append(ops, op)
	}
	for node := range 3 {
		f := cread(state, 10000, 10010)
		f.Final, f.Client = true, 7+node
		ops = append(ops, f)
	}
	return h("ctr/s0/n0", history.Counter, ops...), unknowns, notApplied
}

// TestCounterWithManyIndeterminateIncrements: a counter key that lived
// through faults is decided quickly, whether its indeterminate
// increments happened or not: each one's bit shows in the values read.
func TestCounterWithManyIndeterminateIncrements(t *testing.T) {
	for _, c := range []struct {
		name    string
		applied func(int) bool
	}{
		{"none applied", func(int) bool { return false }},
		{"all applied", func(int) bool { return true }},
		{"some applied", func(i int) bool { return i%4 == 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ops, unknowns, notApplied := counterHistory(c.applied)
			start := time.Now()
			r := CheckKey("ctr/s0/n0", ops, Options{Timeout: time.Minute})
			if r.Result != porcupine.Ok || r.Err != nil {
				t.Fatalf("got %s (%v, %s), want Ok", r.Result, r.Err, r.Aborted)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the check took %s", took)
			}
			if r.Stats.Unknown != unknowns || r.Stats.Unseen != notApplied || r.Stats.Infinite != 0 || r.Stats.Tightened != unknowns-notApplied {
				t.Errorf("stats %+v: want %d indeterminate, %d never seen, the rest bounded by a read", r.Stats, unknowns, notApplied)
			}
		})
	}
}

// TestCounterLostIncrementIsCaught: the bits make a lost acknowledged
// increment, or one applied twice, stand out.
func TestCounterLostIncrementIsCaught(t *testing.T) {
	ops, _, _ := counterHistory(func(int) bool { return false })
	lost := slices.Clone(ops)
	for i := range lost {
		if lost[i].Final {
			lost[i].OutNum -= 2 // the acknowledged increment of bit 1 is gone
		}
	}
	if r := CheckKey("k", lost, Options{Timeout: time.Minute}); r.Result != porcupine.Illegal {
		t.Errorf("a lost acknowledged increment: %s", r.Result)
	}
	twice := slices.Clone(ops)
	for i := range twice {
		if twice[i].Final {
			twice[i].OutNum += 2 // applied twice
		}
	}
	if r := CheckKey("k", twice, Options{Timeout: time.Minute}); r.Result != porcupine.Illegal {
		t.Errorf("an increment applied twice: %s", r.Result)
	}
}

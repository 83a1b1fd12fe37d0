package checks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// ops numbers a history and fills defaults.
func ops(list ...history.Op) []history.Op {
	for i := range list {
		list[i].ID = i
		if list[i].Node == "" {
			list[i].Node = "n1"
		}
		if list[i].Outcome == "" {
			list[i].Outcome = history.OK
		}
		if list[i].Status == 0 && list[i].Outcome == history.OK {
			list[i].Status = 200
		}
	}
	return list
}

func appendOp(key, v, name string, call, ret int64) history.Op {
	return history.Op{Key: key, Kind: history.List, Type: history.Append, Value: v, Name: name, Call: call, Return: ret}
}

func finalList(node, key string, items ...history.Item) history.Op {
	return history.Op{Key: key, Kind: history.List, Type: history.Read, Node: node, Final: true, Items: items, Call: 1000, Return: 1001}
}

const (
	k1 = "-AAAAAAAAAAAAAAAAAA1"
	k2 = "-AAAAAAAAAAAAAAAAAA2"
	k3 = "-AAAAAAAAAAAAAAAAAA3"
)

func wantOK(t *testing.T, r Result) {
	t.Helper()
	if !r.OK {
		t.Errorf("%s failed:\n%s", r.Name, r)
	}
}

func wantFail(t *testing.T, r Result, substr string) {
	t.Helper()
	if r.OK {
		t.Errorf("%s passed, want a failure mentioning %q", r.Name, substr)
		return
	}
	if !strings.Contains(r.String(), substr) {
		t.Errorf("%s failed without mentioning %q:\n%s", r.Name, substr, r)
	}
}

func TestAckedWritesPresentLists(t *testing.T) {
	base := []history.Op{
		appendOp("l", "a", k1, 0, 10),
		appendOp("l", "b", k2, 20, 30),
	}
	unknown := appendOp("l", "c", "", 40, 50)
	unknown.Outcome = history.Unknown
	good := ops(append(base, unknown,
		finalList("n1", "l", history.Item{Name: k1, Value: "a"}, history.Item{Name: k2, Value: "b"}),
		finalList("n2", "l", history.Item{Name: k1, Value: "a"}, history.Item{Name: k2, Value: "b"}, history.Item{Name: k3, Value: "c"}))...)
	wantOK(t, AckedWritesPresent(good, 2))

	lost := ops(append(base, finalList("n1", "l", history.Item{Name: k1, Value: "a"}))...)
	wantFail(t, AckedWritesPresent(lost, 1), `acknowledged append "b"`)

	renamed := ops(append(base, finalList("n1", "l", history.Item{Name: k1, Value: "a"}, history.Item{Name: k3, Value: "b"}))...)
	wantFail(t, AckedWritesPresent(renamed, 1), "stored under")

	phantom := ops(append(base, finalList("n1", "l", history.Item{Name: k1, Value: "a"}, history.Item{Name: k2, Value: "b"}, history.Item{Name: k3, Value: "zzz"}))...)
	wantFail(t, AckedWritesPresent(phantom, 1), "never appended")

	twice := ops(append(base, finalList("n1", "l", history.Item{Name: k1, Value: "a"}, history.Item{Name: k2, Value: "b"}, history.Item{Name: k3, Value: "b"}))...)
	wantFail(t, AckedWritesPresent(twice, 1), "twice")

	missingNode := ops(append(base, finalList("n1", "l", history.Item{Name: k1, Value: "a"}, history.Item{Name: k2, Value: "b"}))...)
	wantFail(t, AckedWritesPresent(missingNode, 3), "only 1 of 3 nodes")
}

func TestAckedWritesPresentCounters(t *testing.T) {
	incr := func(d int64, o history.Outcome) history.Op {
		return history.Op{Key: "c", Kind: history.Counter, Type: history.Incr, Delta: d, Outcome: o}
	}
	final := func(v int64) history.Op {
		return history.Op{Key: "c", Kind: history.Counter, Type: history.Read, Final: true, OutNum: v}
	}
	for _, c := range []struct {
		final int64
		ok    bool
	}{{3, true}, {8, true}, {5, true}, {2, false}, {9, false}} {
		h := ops(incr(1, history.OK), incr(2, history.OK), incr(5, history.Unknown), incr(7, history.Fail), final(c.final))
		if r := AckedWritesPresent(h, 1); r.OK != c.ok {
			t.Errorf("final %d: ok=%v, want %v\n%s", c.final, r.OK, c.ok, r)
		}
	}
}

// TestAckedWritesPresentCounterBits: with one power of two per increment,
// the final value must hold exactly the acknowledged increments and some
// of the indeterminate ones.
func TestAckedWritesPresentCounterBits(t *testing.T) {
	incr := func(d int64, o history.Outcome) history.Op {
		return history.Op{Key: "c", Kind: history.Counter, Type: history.Incr, Delta: d, Outcome: o}
	}
	final := func(v int64) history.Op {
		return history.Op{Key: "c", Kind: history.Counter, Type: history.Read, Final: true, OutNum: v}
	}
	base := []history.Op{incr(1, history.OK), incr(2, history.Unknown), incr(4, history.OK), incr(8, history.Fail)}
	wantOK(t, AckedWritesPresent(ops(append(slices.Clone(base), final(5))...), 1))
	wantOK(t, AckedWritesPresent(ops(append(slices.Clone(base), final(7))...), 1))
	// 1+2+4 = 7 ≥ 6 ≥ 5: within the bounds, but bit 1 stands in for the
	// acknowledged bit 0.
	wantFail(t, AckedWritesPresent(ops(append(slices.Clone(base), final(6))...), 1), "lacks acknowledged")
}

func TestAckedWritesPresentRegisters(t *testing.T) {
	w := func(v string, call, ret int64, o history.Outcome) history.Op {
		return history.Op{Key: "r", Kind: history.Register, Type: history.Write, Value: v, Call: call, Return: ret, Outcome: o}
	}
	final := func(v string) history.Op {
		return history.Op{Key: "r", Kind: history.Register, Type: history.Read, Final: true, Out: v, Call: 1000, Return: 1001}
	}
	wantOK(t, AckedWritesPresent(ops(w(`"a"`, 0, 10, history.OK), w(`"b"`, 20, 30, history.OK), final(`"b"`)), 1))
	// Concurrent writes: either may be last.
	wantOK(t, AckedWritesPresent(ops(w(`"a"`, 0, 30, history.OK), w(`"b"`, 20, 25, history.OK), final(`"a"`)), 1))
	// An indeterminate write may land last.
	wantOK(t, AckedWritesPresent(ops(w(`"a"`, 0, 10, history.Unknown), w(`"b"`, 20, 30, history.OK), final(`"a"`)), 1))
	wantFail(t, AckedWritesPresent(ops(w(`"a"`, 0, 10, history.OK), w(`"b"`, 20, 30, history.OK), final(`"a"`)), 1), "the last write")
	wantFail(t, AckedWritesPresent(ops(w(`"a"`, 0, 10, history.OK), final(`"x"`)), 1), "never written")
}

func TestPushKeys(t *testing.T) {
	wantOK(t, PushKeys(ops(appendOp("l", "a", k1, 0, 10), appendOp("m", "b", k2, 20, 30), appendOp("l", "c", k3, 25, 40))))
	// Concurrent appends may commit in either order.
	wantOK(t, PushKeys(ops(appendOp("l", "a", k2, 0, 10), appendOp("m", "b", k1, 5, 30))))
	// Acknowledged before the other was sent, on another list and
	// another node: still must be smaller (one cluster-wide sequence).
	later := appendOp("m", "b", k1, 20, 30)
	later.Node = "n3"
	wantFail(t, PushKeys(ops(appendOp("l", "a", k2, 0, 10), later)), "not above")
	wantFail(t, PushKeys(ops(appendOp("l", "a", k1, 0, 10), appendOp("l", "b", k1, 20, 30))), "returned twice")
	wantFail(t, PushKeys(ops(appendOp("l", "a", "-short", 0, 10))), "malformed")
	wantFail(t, PushKeys(ops(appendOp("l", "a", "-AAAAAAAAAAAAAAAAA.1", 0, 10))), "malformed")
	unsorted := history.Op{Key: "l", Kind: history.List, Type: history.Read, Items: []history.Item{{Name: k2, Value: "x"}, {Name: k1, Value: "y"}}}
	wantFail(t, PushKeys(ops(unsorted)), "out of key order")
}

func TestETags(t *testing.T) {
	read := func(node, v, etag string) history.Op {
		return history.Op{Key: "r", Kind: history.Register, Type: history.Read, Node: node, Out: v, ETag: etag}
	}
	wantOK(t, ETags(ops(read("n1", `"a"`, "E1"), read("n2", `"a"`, "E1"), read("n3", history.Null, "null_etag"))))
	wantFail(t, ETags(ops(read("n1", `"a"`, "E1"), read("n2", `"a"`, "E2"))), "E2")
	wantFail(t, ETags(ops(read("n1", history.Null, "E0"))), "null_etag")
}

func TestUnexpectedAnswers(t *testing.T) {
	rej := history.Op{Type: history.CAS, Outcome: history.Rejected, Status: 412}
	unavailable := history.Op{Type: history.Write, Outcome: history.Unknown, Status: 503}
	noAnswer := history.Op{Type: history.Write, Outcome: history.Unknown}
	wantOK(t, UnexpectedAnswers(ops(history.Op{Type: history.Read}, rej, unavailable, noAnswer)))
	internal := history.Op{Type: history.Write, Outcome: history.Unknown, Status: 500, Error: "Internal error"}
	wantFail(t, UnexpectedAnswers(ops(internal)), "500")
	plain412 := history.Op{Type: history.Write, Outcome: history.Fail, Status: 412}
	wantFail(t, UnexpectedAnswers(ops(plain412)), "412")
	badBody := history.Op{Type: history.Read, Kind: history.Counter, Error: "unexpected body: not an integer", Out: "1.5"}
	wantFail(t, UnexpectedAnswers(ops(badBody)), "not an integer")
}

func TestLogs(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "n1.log"), []byte("time=x level=INFO msg=ok\ntime=y level=ERROR msg=\"peer unreachable\"\n"), 0o644)
	r := Logs(dir)
	wantOK(t, r)
	if !strings.Contains(r.Summary, "n1.log 1") {
		t.Errorf("summary %q does not count the ERROR line", r.Summary)
	}
	os.WriteFile(filepath.Join(dir, "n2.log"), []byte("==================\nWARNING: DATA RACE\nWrite at 0x00c000\n"), 0o644)
	wantFail(t, Logs(dir), "n2.log:2")
	os.WriteFile(filepath.Join(dir, "n2.log"), []byte("panic: runtime error: index out of range\n"), 0o644)
	wantFail(t, Logs(dir), "panic")
	wantFail(t, Logs(t.TempDir()), "no node logs")
}

package history

import (
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestRecorderNumbersConcurrentOps(t *testing.T) {
	r := NewRecorder()
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for range 100 {
				r.Add(Op{Client: c, Call: r.Now(), Return: r.Now()})
			}
		})
	}
	wg.Wait()
	ops := r.Ops()
	if len(ops) != 800 {
		t.Fatalf("%d ops, want 800", len(ops))
	}
	for i, op := range ops {
		if op.ID != i {
			t.Fatalf("op %d has id %d", i, op.ID)
		}
		if op.Return < op.Call {
			t.Fatalf("op %d returns before its call", i)
		}
	}
}

func TestFileRoundTrip(t *testing.T) {
	ops := []Op{
		{ID: 0, Client: 1, Node: "n2", Key: "list/g0/k0", Kind: List, Type: Read, Outcome: OK, Status: 200,
			Items: []Item{{Name: "-B", Value: "x"}, {Name: "-A", Value: "y"}}, Call: 5, Return: 9},
		{ID: 1, Key: "reg/g0/k1", Kind: Register, Type: CAS, Expect: Null, Value: `"c1-2"`, Outcome: Rejected, Status: 412, Out: `"c0-1"`, ETag: "E"},
		{ID: 2, Key: "ctr/g0/k0", Kind: Counter, Type: Incr, Delta: 3, Outcome: Unknown, Error: "timeout", Final: true},
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := WriteFile(path, ops); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ops) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, ops)
	}
	if _, err := Decode(strings.NewReader("{\"id\":0}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
}

func TestWriteKinds(t *testing.T) {
	for _, c := range []struct {
		op                  Op
		write, acked, maybe bool
	}{
		{Op{Type: Read, Outcome: OK}, false, false, false},
		{Op{Type: Write, Outcome: OK}, true, true, true},
		{Op{Type: Append, Outcome: Unknown}, true, false, true},
		{Op{Type: CAS, Outcome: Rejected}, true, false, false},
		{Op{Type: Incr, Outcome: Fail}, true, false, false},
	} {
		if c.op.IsWrite() != c.write || c.op.Acked() != c.acked || c.op.MayHaveHappened() != c.maybe {
			t.Errorf("%s %s: write %v acked %v maybe %v", c.op.Type, c.op.Outcome, c.op.IsWrite(), c.op.Acked(), c.op.MayHaveHappened())
		}
	}
}

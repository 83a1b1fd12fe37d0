package main

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// w and r build register operations on one key.
func w(id, client int, value string, call, ret int64, out outcome) op {
	return op{ID: id, Client: client, Kind: register, Key: "reg/k0", Value: value, Outcome: out, Call: call, Return: ret}
}

func r(id, client int, out string, call, ret int64) op {
	return op{ID: id, Client: client, Kind: register, Key: "reg/k0", Read: true, Out: out, Outcome: ok, Call: call, Return: ret}
}

func TestCheckLinearizable(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"sequential", []op{w(1, 0, `"a"`, 0, 10, ok), r(2, 1, `"a"`, 20, 30)}, porcupine.Ok},
		{"a read of the initial null", []op{r(1, 0, null, 0, 10), w(2, 0, `"a"`, 20, 30, ok)}, porcupine.Ok},
		{"concurrent read sees either", []op{w(1, 0, `"a"`, 0, 100, ok), r(2, 1, null, 10, 20), r(3, 2, `"a"`, 30, 40)}, porcupine.Ok},
		{"stale read after an acknowledged write", []op{w(1, 0, `"a"`, 0, 10, ok), r(2, 1, null, 20, 30)}, porcupine.Illegal},
		{"lost write: read goes back", []op{w(1, 0, `"a"`, 0, 10, ok), w(2, 0, `"b"`, 20, 30, ok), r(3, 1, `"b"`, 40, 50), r(4, 1, `"a"`, 60, 70)}, porcupine.Illegal},
		{"an unknown write may land late", []op{w(1, 0, `"a"`, 0, 10, unknown), r(2, 1, null, 20, 30), r(3, 1, `"a"`, 40, 50)}, porcupine.Ok},
		{"an unknown write may never land", []op{w(1, 0, `"a"`, 0, 10, unknown), r(2, 1, null, 20, 30)}, porcupine.Ok},
		{"a failed write must not land", []op{w(1, 0, `"a"`, 0, 10, fail), r(2, 1, `"a"`, 20, 30)}, porcupine.Illegal},
		{"a value seen before its write", []op{r(1, 1, `"a"`, 0, 10), w(2, 0, `"a"`, 20, 30, unknown)}, porcupine.Illegal},
		{"keys are independent", []op{w(1, 0, `"a"`, 0, 10, ok), {ID: 2, Client: 1, Kind: register, Key: "reg/k1", Read: true, Out: null, Outcome: ok, Call: 20, Return: 30}}, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkLinearizable(tc.ops, 10*time.Second, "").Result; got != tc.want {
				t.Fatalf("result %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCheckDurability(t *testing.T) {
	ops := []op{
		{ID: 1, Kind: ack, Key: "acks/c0/s1", Value: `"c0-1"`, Outcome: ok},
		{ID: 2, Kind: ack, Key: "acks/c0/s2", Value: `"c0-2"`, Outcome: unknown},
		{ID: 3, Kind: ack, Key: "acks/c0/s3", Value: `"c0-3"`, Outcome: fail},
		{ID: 4, Kind: patch, Key: "patch/c0/s4", Value: `"c0-4"`, Outcome: ok},
		{ID: 5, Kind: push, Key: "push/c0", Value: `"c0-5"`, Name: "-A", Outcome: ok},
		{ID: 6, Kind: push, Key: "push/c0", Value: `"c0-6"`, Outcome: unknown},
		{ID: 7, Kind: register, Key: "reg/k0", Value: `"c0-7"`, Outcome: ok},
	}
	good := finalState{
		Acks:  tree{"c0": {"s1": `"c0-1"`}},
		Patch: tree{"c0": {"s4": `"c0-4"`}},
		Push:  tree{"c0": {"-A": `"c0-5"`, "-B": `"c0-6"`}},
	}
	if d := checkDurability(ops, good); len(d.Problems) != 0 || d.Acked != 3 {
		t.Fatalf("a good state: %+v", d)
	}
	for _, tc := range []struct {
		name string
		edit func(*finalState)
		want string
	}{
		{"acknowledged PUT lost", func(s *finalState) { delete(s.Acks["c0"], "s1") }, "lost: acknowledged ack of acks/c0/s1"},
		{"acknowledged PATCH lost", func(s *finalState) { s.Patch = tree{} }, "lost: acknowledged patch of patch/c0/s4"},
		{"acknowledged POST lost", func(s *finalState) { delete(s.Push["c0"], "-A") }, "lost: acknowledged push"},
		{"changed value", func(s *finalState) { s.Acks["c0"]["s1"] = `"x"` }, "changed: acks/c0/s1"},
		{"failed write applied", func(s *finalState) { s.Acks["c0"]["s3"] = `"c0-3"` }, "certainly failed took effect"},
		{"phantom key", func(s *finalState) { s.Acks["c9"] = map[string]string{"s1": `"c9-1"`} }, "phantom: acks/c9/s1"},
		{"phantom push", func(s *finalState) { s.Push["c0"]["-C"] = `"zz"` }, "phantom: push/c0/-C"},
		{"push applied twice", func(s *finalState) { s.Push["c0"]["-C"] = `"c0-6"` }, "applied twice"},
		{"push under another name", func(s *finalState) { s.Push["c0"] = map[string]string{"-Z": `"c0-5"`} }, "acknowledged as -A found as -Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := finalState{Acks: tree{}, Patch: tree{}, Push: tree{}}
			for _, p := range []struct{ from, to tree }{{good.Acks, st.Acks}, {good.Patch, st.Patch}, {good.Push, st.Push}} {
				for c, kids := range p.from {
					p.to[c] = map[string]string{}
					for k, v := range kids {
						p.to[c][k] = v
					}
				}
			}
			tc.edit(&st)
			d := checkDurability(ops, st)
			if !strings.Contains(strings.Join(d.Problems, "\n"), tc.want) {
				t.Fatalf("problems %q, want one with %q", d.Problems, tc.want)
			}
		})
	}
}

func TestDecodeTree(t *testing.T) {
	tr, err := decodeTree([]byte(`{"c0":{"s1":"c0-1","s2":"c0-2"},"c1":{"s3":"c1-3"}}`))
	if err != nil || tr["c0"]["s2"] != `"c0-2"` || tr["c1"]["s3"] != `"c1-3"` {
		t.Fatalf("decodeTree = %v, %v", tr, err)
	}
	if tr, err := decodeTree([]byte("null")); err != nil || len(tr) != 0 {
		t.Fatalf("decodeTree(null) = %v, %v", tr, err)
	}
	if _, err := decodeTree([]byte(`[1]`)); err == nil {
		t.Fatal("decodeTree accepted an array")
	}
}

package report

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/nemesis"
	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/watch"
	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/model"
)

func sec(s float64) int64 { return int64(s * float64(time.Second)) }

func write(node string, call, ret float64, o history.Outcome) history.Op {
	return history.Op{Node: node, Kind: history.Register, Type: history.Write, Outcome: o, Call: sec(call), Return: sec(ret)}
}

func TestGaps(t *testing.T) {
	ops := []history.Op{
		write("n1", 0, 0.1, history.OK),
		write("n1", 0.2, 0.3, history.OK),
		write("n2", 0.4, 3.0, history.Unknown), // no progress from 0.3 …
		write("n1", 3.1, 3.5, history.OK),      // … to 3.5
		write("n1", 3.6, 3.7, history.OK),
		write("n3", 3.8, 9.0, history.Unknown), // in flight at the end: no gap
	}
	events := []nemesis.Event{
		{Step: 0, Fault: nemesis.Kill, Nodes: []string{"n2"}, Start: time.Second, End: 2 * time.Second, Recovered: 500 * time.Millisecond},
		{Step: 1, Fault: nemesis.Pause, Nodes: []string{"n3"}, Start: 5 * time.Second, End: 6 * time.Second},
	}
	gaps := Gaps(ops, events, time.Second, WriteAck)
	if len(gaps) != 1 {
		t.Fatalf("gaps %+v, want one", gaps)
	}
	g := gaps[0]
	if g.From != 300*time.Millisecond || g.To != 3500*time.Millisecond || len(g.Faults) != 1 || !strings.Contains(g.Faults[0], "kill n2") {
		t.Errorf("gap %+v", g)
	}
	if Gaps(nil, nil, time.Second, WriteAck) != nil {
		t.Error("gaps in an empty history")
	}
}

func TestSummary(t *testing.T) {
	ops := []history.Op{write("n1", 0, 0.1, history.OK), write("n2", 0.2, 0.3, history.Unknown)}
	pass := Summary{
		Seed: 9, Backend: "process", Duration: time.Minute, Replay: "arbor-chaos -seed 9",
		Faults: []nemesis.Fault{nemesis.Kill},
		Events: []nemesis.Event{{Fault: nemesis.Kill, Nodes: []string{"n1"}, Leader: "n1"}},
		Ops:    ops,
		Linear: []model.KeyResult{{Key: "reg/g0/k0", Kind: history.Register, Result: porcupine.Ok}},
		Checks: []checks.Result{{Name: "something", OK: true, Summary: "fine"}},
	}
	var b strings.Builder
	pass.Write(&b)
	out := b.String()
	for _, want := range []string{"seed:      9", "2 total", "1 indeterminate", "kill", "RESULT: PASS", "OK   something: fine"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "streams:") {
		t.Errorf("stream figures without watchers:\n%s", out)
	}
	withStreams := pass
	withStreams.Streams = &watch.Figures{Watchers: 3, Streams: 12, Reconnects: 9, Resumed: 6, Fresh: 2, Quiet: 1, Events: 4000, Ends: map[string]int{"rotated": 7, "eof": 2, "stopped": 3}, Delivered: 900, Coalesced: 4}
	b.Reset()
	withStreams.Write(&b)
	for _, want := range []string{"streams: 3 watchers", "12 streams opened", "9 reconnects: 6 resumed from Last-Event-ID, 2 fresh puts", "eof 2, rotated 7, stopped 3", "900 delivered, 4 coalesced", "violations: 0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stream figures lack %q:\n%s", want, b.String())
		}
	}

	for name, mutate := range map[string]func(*Summary){
		"porcupine": func(s *Summary) {
			s.Linear = []model.KeyResult{{Key: "reg/g0/k0", Result: porcupine.Illegal, Viz: "/tmp/x.html"}}
		},
		"undecided": func(s *Summary) {
			s.Linear = []model.KeyResult{{Key: "reg/g0/k0", Result: porcupine.Unknown, Aborted: "heap"}}
		},
		"check":   func(s *Summary) { s.Checks = []checks.Result{{Name: "x", OK: false}} },
		"problem": func(s *Summary) { s.Events = []nemesis.Event{{Problems: []string{"slow stop"}}} },
		"setup":   func(s *Summary) { s.Setup = errors.New("no docker") },
	} {
		s := pass
		mutate(&s)
		if s.Pass() {
			t.Errorf("%s: passes", name)
		}
		var b strings.Builder
		s.Write(&b)
		if !strings.Contains(b.String(), "RESULT: FAIL (seed 9; replay: arbor-chaos -seed 9)") {
			t.Errorf("%s: no failure line with the seed and replay:\n%s", name, b.String())
		}
	}
}

func TestFailovers(t *testing.T) {
	events := []nemesis.Event{
		{Step: 0, Fault: nemesis.Kill, Nodes: []string{"n1"}, Leader: "n1", Start: time.Second, Injected: 1100 * time.Millisecond, End: 10 * time.Second},
		{Step: 1, Fault: nemesis.Kill, Nodes: []string{"n2"}, Leader: "n1", Start: 11 * time.Second, Injected: 11 * time.Second, End: 12 * time.Second}, // a follower: no failover
		{Step: 2, Fault: nemesis.PartitionLeader, Nodes: []string{"n3"}, Leader: "n3", Start: 20 * time.Second, Injected: 20 * time.Second, End: 22 * time.Second},
		{Step: 3, Fault: nemesis.KillAll, Nodes: []string{"n1", "n2", "n3"}, Leader: "n3", Start: 30 * time.Second, End: 31 * time.Second},
	}
	ops := []history.Op{
		write("n1", 1.0, 1.05, history.OK), // invoked before the kill took effect
		write("n2", 1.2, 4.0, history.OK),  // the first write after it: 2.9 s
		write("n2", 3.0, 3.5, history.OK),
		write("n2", 20.5, 23.0, history.OK), // acknowledged only after the heal
	}
	fs := Failovers(ops, events)
	if len(fs) != 2 {
		t.Fatalf("failovers %+v, want two (the kill of the leader, the partition)", fs)
	}
	if fs[0].Took != 2400*time.Millisecond {
		t.Errorf("kill of the leader: %s, want 2.4s", fs[0].Took)
	}
	if fs[1].Took != -1 {
		t.Errorf("partition: %s, want -1 (no write before the heal)", fs[1].Took)
	}
	var b strings.Builder
	writeFailovers(&b, ops, events)
	if !strings.Contains(b.String(), "not before the heal  <-- over 5s") {
		t.Errorf("report:\n%s", b.String())
	}
}

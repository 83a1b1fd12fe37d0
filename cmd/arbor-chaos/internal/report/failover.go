package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/nemesis"
	"github.com/arbordb/arbor/cmd/internal/history"
)

// FailoverLimit is SPEC §9's promise: after a leader failure, writes are
// acknowledged again within 5 s (default timings).
const FailoverLimit = 5 * time.Second

// Failover is how long writes stopped after a fault took the leader out.
type Failover struct {
	Event nemesis.Event
	// Took is from the fault's taking effect to the first
	// acknowledgement of a write invoked after that; -1 if none came
	// before the fault was healed.
	Took time.Duration
}

// Failovers measures every fault that took out the leader (killed,
// stopped, paused or cut off from the others), except kill-all, which
// leaves no majority to fail over to.
func Failovers(ops []history.Op, events []nemesis.Event) []Failover {
	var acks []history.Op
	for _, op := range ops {
		if op.Acked() && !op.Final {
			acks = append(acks, op)
		}
	}
	slices.SortFunc(acks, func(a, b history.Op) int { return cmp.Compare(a.Return, b.Return) })
	var out []Failover
	for _, ev := range events {
		if ev.Leader == "" || ev.Fault == nemesis.KillAll || !slices.Contains(ev.Nodes, ev.Leader) || ev.Fault == nemesis.PartitionBridge {
			continue
		}
		f := Failover{Event: ev, Took: -1}
		for _, op := range acks {
			if time.Duration(op.Call) >= ev.Injected {
				if time.Duration(op.Return) <= ev.End {
					f.Took = time.Duration(op.Return) - ev.Injected
				}
				break
			}
		}
		out = append(out, f)
	}
	return out
}

// writeFailovers lists the failovers; informational, not a verdict: a
// loaded test machine stretches elections.
func writeFailovers(w io.Writer, ops []history.Op, events []nemesis.Event) {
	fs := Failovers(ops, events)
	var longest time.Duration
	over := 0
	for _, f := range fs {
		if f.Took < 0 || f.Took > FailoverLimit {
			over++
		}
		longest = max(longest, f.Took)
	}
	fmt.Fprintf(w, "\nleader failures: %d; writes acknowledged again after at most %s; %d over SPEC §9's %s (informational)\n",
		len(fs), longest.Round(time.Millisecond), over, FailoverLimit)
	for _, f := range fs {
		took := f.Took.Round(time.Millisecond).String()
		if f.Took < 0 {
			took = "not before the heal"
		}
		mark := ""
		if f.Took < 0 || f.Took > FailoverLimit {
			mark = "  <-- over " + FailoverLimit.String()
		}
		fmt.Fprintf(w, "  %7.1fs step %-3d %-18s leader %-3s writes again after %s%s\n", f.Event.Start.Seconds(), f.Event.Step, f.Event.Fault, f.Event.Leader, took, mark)
	}
}

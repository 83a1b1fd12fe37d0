// Package report turns a chaos run into a text summary: operations by type
// and outcome, the faults injected, the gaps in availability, and every
// check's verdict.
package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/nemesis"
	"github.com/arbordb/arbor/cmd/internal/history"
)

// Counts are operations by outcome.
type Counts struct {
	Total, OK, Rejected, Fail, Unknown int
}

func (c *Counts) add(o history.Outcome) {
	c.Total++
	switch o {
	case history.OK:
		c.OK++
	case history.Rejected:
		c.Rejected++
	case history.Fail:
		c.Fail++
	case history.Unknown:
		c.Unknown++
	}
}

// String renders the counts as one aligned line.
func (c Counts) String() string {
	return fmt.Sprintf("%7d total %7d ok %6d rejected(412) %6d failed %6d indeterminate", c.Total, c.OK, c.Rejected, c.Fail, c.Unknown)
}

// Tally counts the workload's operations (not the final reads), in all
// and by kind and type ("register write", …).
func Tally(ops []history.Op) (all Counts, by map[string]*Counts) {
	by = map[string]*Counts{}
	for _, op := range ops {
		if op.Final {
			continue
		}
		all.add(op.Outcome)
		k := fmt.Sprintf("%-8s %-6s", op.Kind, op.Type)
		if op.Local {
			k = fmt.Sprintf("%-8s %-6s", op.Kind, "read(local)")
		}
		if by[k] == nil {
			by[k] = &Counts{}
		}
		by[k].add(op.Outcome)
	}
	return all, by
}

// Gap is a stretch of time in which no operation succeeded.
type Gap struct {
	From, To time.Duration
	Faults   []string // the faults in progress during the gap
}

// WriteAck counts acknowledged writes only.
func WriteAck(op history.Op) bool {
	return op.Acked()
}

// Gaps finds the stretches longer than min between successive operations
// that made progress (by the progress function), from the first
// invocation to the last (operations still in flight when the workload
// stopped do not count as a gap), and names the faults that overlap each.
func Gaps(ops []history.Op, events []nemesis.Event, min time.Duration, progress func(history.Op) bool) []Gap {
	var ends []int64
	var first, last int64 = -1, 0
	for _, op := range ops {
		if op.Final {
			continue
		}
		if first < 0 || op.Call < first {
			first = op.Call
		}
		if op.Call > last {
			last = op.Call
		}
		if progress(op) {
			ends = append(ends, op.Return)
		}
	}
	if first < 0 {
		return nil
	}
	slices.Sort(ends)
	ends = slices.DeleteFunc(ends, func(e int64) bool { return e > last })
	ends = append(ends, last)
	var gaps []Gap
	prev := first
	for _, e := range ends {
		if time.Duration(e-prev) > min {
			g := Gap{From: time.Duration(prev), To: time.Duration(e)}
			for _, ev := range events {
				if ev.Start <= g.To && ev.End+ev.Recovered >= g.From {
					g.Faults = append(g.Faults, fmt.Sprintf("step %d %s %s", ev.Step, ev.Fault, strings.Join(ev.Nodes, ",")))
				}
			}
			gaps = append(gaps, g)
		}
		prev = max(prev, e)
	}
	slices.SortFunc(gaps, func(a, b Gap) int { return cmp.Compare(a.From, b.From) })
	return gaps
}

package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/nemesis"
	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/watch"
	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/model"
)

// GapThreshold is the shortest stretch without progress the report lists.
const GapThreshold = time.Second

// Summary is everything the text report says about a run.
type Summary struct {
	Replay   string // the command line that replays the run
	Seed     uint64
	Backend  string
	Duration time.Duration
	Dir      string
	Faults   []nemesis.Fault
	Events   []nemesis.Event
	Ops      []history.Op
	Linear   []model.KeyResult
	Checks   []checks.Result // besides linearizability (the stream checks too)
	// Streams are the stream watchers' figures (nil: no watchers).
	Streams *watch.Figures
	// Setup is a problem that stopped the run before or during the
	// workload (the checks then judge what was recorded).
	Setup error
}

// Pass reports whether the run found nothing.
func (s Summary) Pass() bool {
	if s.Setup != nil || !checks.AllOK(s.Checks) {
		return false
	}
	for _, k := range s.Linear {
		if !k.OK() {
			return false
		}
	}
	for _, e := range s.Events {
		if len(e.Problems) > 0 {
			return false
		}
	}
	return true
}

// Write renders the summary.
func (s Summary) Write(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("arbor-chaos report\n")
	p("seed:      %d\n", s.Seed)
	p("backend:   %s\n", s.Backend)
	p("duration:  %s\n", s.Duration)
	p("faults:    %s\n", joinFaults(s.Faults))
	p("directory: %s\n", s.Dir)
	p("replay:    %s\n", s.Replay)
	if s.Setup != nil {
		p("\nSETUP FAILED: %v\n", s.Setup)
	}

	all, by := Tally(s.Ops)
	p("\noperations %s\n", all)
	names := make([]string, 0, len(by))
	for k := range by {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		p("  %s %s\n", k, by[k])
	}

	p("\nfaults injected: %d\n", len(s.Events))
	for _, e := range s.Events {
		line := fmt.Sprintf("  %7.1fs–%7.1fs step %-3d %-18s %-8s", e.Start.Seconds(), e.End.Seconds(), e.Step, e.Fault, strings.Join(e.Nodes, ","))
		if len(e.Cut) > 0 {
			line += " cut " + strings.Join(e.Cut, ",")
		}
		if e.Leader != "" {
			line += " (leader " + e.Leader + ")"
		}
		if e.StopTook > 0 {
			line += fmt.Sprintf(" stop took %s", e.StopTook.Round(time.Millisecond))
		}
		if e.NotReadyAfter > 0 {
			line += fmt.Sprintf(" /readyz 503 after %s", e.NotReadyAfter.Round(time.Millisecond))
		}
		if e.RecoverFailed {
			line += " NOT RECOVERED"
		} else {
			line += fmt.Sprintf(" recovered %s after heal", e.Recovered.Round(time.Millisecond))
		}
		p("%s\n", line)
		for _, pr := range e.Problems {
			p("      PROBLEM: %s\n", pr)
		}
	}

	writeFailovers(w, s.Ops, s.Events)

	p("\navailability: stretches over %s without an acknowledged write\n", GapThreshold)
	writeGaps(w, "cluster (any node)", s.Ops, s.Events)
	for _, n := range nodesOf(s.Ops) {
		var mine []history.Op
		for _, op := range s.Ops {
			if op.Node == n {
				mine = append(mine, op)
			}
		}
		writeGaps(w, "served by "+n, mine, s.Events)
	}
	writeStreams(w, s.Streams)

	p("\nchecks\n")
	p("%s", linearSummary(s.Linear))
	for _, c := range s.Checks {
		p("%s", c)
	}
	if s.Pass() {
		p("\nRESULT: PASS\n")
	} else {
		p("\nRESULT: FAIL (seed %d; replay: %s)\n", s.Seed, s.Replay)
	}
}

// writeGaps lists the gaps in acknowledged writes of ops.
func writeGaps(w io.Writer, title string, ops []history.Op, events []nemesis.Event) {
	gaps := Gaps(ops, events, GapThreshold, WriteAck)
	longest := time.Duration(0)
	for _, x := range gaps {
		longest = max(longest, x.To-x.From)
	}
	fmt.Fprintf(w, "  %s: %d gaps, longest %s\n", title, len(gaps), longest.Round(time.Millisecond))
	for _, x := range gaps {
		fmt.Fprintf(w, "    %7.1fs–%7.1fs %6s  during %s\n", x.From.Seconds(), x.To.Seconds(), (x.To - x.From).Round(100*time.Millisecond), orNone(x.Faults))
	}
}

// nodesOf lists the nodes operations went to.
func nodesOf(ops []history.Op) []string {
	var ns []string
	for _, op := range ops {
		if !slices.Contains(ns, op.Node) {
			ns = append(ns, op.Node)
		}
	}
	slices.Sort(ns)
	return ns
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no fault"
	}
	return strings.Join(s, "; ")
}

func joinFaults(fs []nemesis.Fault) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ",")
}

// linearSummary renders the porcupine verdicts: one line per kind, and
// one per key that failed.
func linearSummary(rs []model.KeyResult) string {
	var b strings.Builder
	type agg struct {
		keys, bad int
		st        model.Stats
	}
	kinds := map[history.Kind]*agg{}
	var slowest time.Duration
	for _, r := range rs {
		a := kinds[r.Kind]
		if a == nil {
			a = &agg{}
			kinds[r.Kind] = a
		}
		a.keys++
		a.st.Given += r.Stats.Given
		a.st.Checked += r.Stats.Checked
		a.st.Unknown += r.Stats.Unknown
		a.st.Infinite += r.Stats.Infinite
		a.st.Tightened += r.Stats.Tightened
		a.st.Unseen += r.Stats.Unseen
		if !r.OK() {
			a.bad++
		}
		slowest = max(slowest, r.Took)
	}
	ok := !slices.ContainsFunc(rs, func(r model.KeyResult) bool { return !r.OK() })
	verdict := "OK  "
	if !ok {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "%s linearizability (porcupine, per key; slowest key %s):\n", verdict, slowest.Round(time.Millisecond))
	for _, k := range []history.Kind{history.Register, history.Counter, history.List} {
		if a := kinds[k]; a != nil {
			fmt.Fprintf(&b, "       %-8s %3d keys, %6d ops, %5d checked; indeterminate %d: %d open-ended, %d bounded by a read, %d never seen; %d keys not linearizable\n",
				k, a.keys, a.st.Given, a.st.Checked, a.st.Unknown, a.st.Infinite, a.st.Tightened, a.st.Unseen, a.bad)
		}
	}
	for _, r := range rs {
		if r.OK() {
			continue
		}
		what := string(r.Result)
		switch {
		case r.Err != nil:
			what = "error: " + r.Err.Error()
		case r.Result == porcupine.Illegal:
			what = "NOT LINEARIZABLE"
		case r.Result == porcupine.Unknown:
			what = "UNDECIDED: " + r.Aborted
		}
		fmt.Fprintf(&b, "       %s: %s", r.Key, what)
		if r.Viz != "" {
			fmt.Fprintf(&b, " — visualization %s", r.Viz)
		}
		b.WriteString("\n")
	}
	return b.String()
}

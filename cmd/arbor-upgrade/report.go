package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// print writes r for a person: a table of the steps with their write
// figures, then the verdicts.
func (r *result) print(w io.Writer, o options) {
	fmt.Fprintf(w, "\n== %s variant: rolling upgrade %s → %s (%d clients, %d ops/s)\n",
		r.Variant, r.Releases.Old, r.Releases.New, o.Clients, o.Rate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tnode\tleader\tstop\tready\thealthy\twrites\tok\t503/unknown\tfailed\tlongest gap\tp50\tp99\tmax\t")
	row := func(name, node, leader string, stop, ready, healthy string, s writeStats) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", name, node, leader, stop, ready, healthy,
			s.Invoked, s.OK, s.Unknown, s.Failed, ms(s.LongestGap), ms(s.P50), ms(s.P99), ms(s.Max))
	}
	row("before", "-", "-", "-", "-", "-", r.Baseline)
	for i, s := range r.Steps {
		row(fmt.Sprint(i+1), s.Node, s.Leader, secs(s.Stop), secs(s.Ready), secs(s.Healthy), s.Writes)
	}
	row("whole run", "-", "-", "-", "-", "-", r.Overall)
	tw.Flush()
	fmt.Fprintf(w, "(stop: SIGTERM → exit 0; ready: new release started → /readyz 200; healthy: SIGTERM → all ready, 3 alive voters, caught up;\n"+
		" longest gap: the longest time in the step with no write acknowledged; p50/p99/max: latency of acknowledged writes)\n")
	if r.Overall.LongestGap > 0 {
		fmt.Fprintf(w, "the whole run's longest gap began at %.1fs on the load's clock\n", r.Overall.GapAt.Seconds())
	}
	fmt.Fprintf(w, "operations: %d (%d reads)\n", r.Ops, r.Reads)
	for _, c := range r.Checks {
		fmt.Fprint(w, c.String())
	}
	if len(r.Linear) > 0 {
		bad, checked := 0, 0
		for _, k := range r.Linear {
			checked += k.Stats.Checked
			if !k.OK() {
				bad++
			}
		}
		verdict := "OK  "
		if bad > 0 {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s linearizability (porcupine, per key): %d keys, %d operations checked, %d keys not linearizable or undecided\n",
			verdict, len(r.Linear), checked, bad)
	}
	r.printFormats(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(r.Failures) == 0 {
		passed, skipped := r.formatCounts()
		fmt.Fprintf(w, "PASS %s: every node on %s, history linearizable, no acknowledged write lost, longest write gap per step %s (limit %s), %d format checks passed (%d skipped)\n",
			r.Variant, r.Releases.New, ms(r.longestStepGap()), o.MaxGap, passed, skipped)
		return
	}
	fmt.Fprintf(w, "FAIL %s (files kept in %s):\n", r.Variant, r.Dir)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}

// printFormats writes the format checks (formats.go), in the order they
// ran, grouped by phase.
func (r *result) printFormats(w io.Writer) {
	if len(r.Formats) == 0 {
		return
	}
	cross := formatsToCross(r.OldEntry, r.OldSnapshot)
	if cross == "" {
		cross = "none newer than the reference"
	}
	fmt.Fprintf(w, "format checks (formats to cross: %s; times on the load's clock):\n", cross)
	phase := ""
	for _, c := range r.Formats {
		if c.Phase != phase {
			phase = c.Phase
			fmt.Fprintf(w, "  %s\n", phase)
		}
		verdict := "OK  "
		switch {
		case !c.OK:
			verdict = "FAIL"
		case c.Skipped:
			verdict = "SKIP"
		}
		fmt.Fprintf(w, "    %s %6.1fs %s: %s\n", verdict, c.At.Seconds(), c.What, c.Detail)
	}
}

// formatCounts counts the format checks that passed and those skipped.
func (r *result) formatCounts() (passed, skipped int) {
	for _, c := range r.Formats {
		switch {
		case c.Skipped:
			skipped++
		case c.OK:
			passed++
		}
	}
	return passed, skipped
}

// longestStepGap is the worst step's write gap.
func (r *result) longestStepGap() time.Duration {
	var g time.Duration
	for _, s := range r.Steps {
		g = max(g, s.Writes.LongestGap)
	}
	return g
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

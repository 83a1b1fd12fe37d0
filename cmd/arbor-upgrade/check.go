package main

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/model"
	"github.com/arbordb/arbor/cmd/internal/workload"
)

// check judges the run with the chaos runner's checkers: the replicas
// converge (same root ETag from each node's own state), then every key is
// read from every node (recorded like the rest), and the history must be
// linearizable per key (porcupine), hold every acknowledged write,
// increasing push keys, consistent ETags and expected answers only. Then
// the releases, and the write gaps of every step.
func (r *result) check(ctx context.Context, o options, b backend, admin adminClient, l *load, ccfg client.Config, baseline window) {
	if l.err != nil {
		r.fail("the workload: %v", l.err)
	}
	r.Checks = append(r.Checks, checks.Converge(ctx, admin.Client, nodes, r.Dir, o.StepTimeout))
	workload.FinalReads(ctx, ccfg, l.rec, nodes, o.Clients)
	ops := l.rec.Ops()
	if err := history.WriteFile(filepath.Join(r.Dir, "history.jsonl"), ops); err != nil {
		r.Notes = append(r.Notes, err.Error())
	}

	var first, last int64 = -1, 0 // acknowledged writes' returns
	for i := range ops {
		op := &ops[i]
		if op.Acked() && !op.Final {
			if first < 0 || op.Return < first {
				first = op.Return
			}
			last = max(last, op.Return)
		}
		if !op.IsWrite() {
			r.Reads++
		}
	}
	r.Ops = len(ops)
	r.Baseline = measureWrites(ops, baseline)
	// From the first acknowledgement: connecting the clients is no gap.
	r.Overall = measureWrites(ops, window{max(first, 0), last + 1})
	for i := range r.Steps {
		s := &r.Steps[i]
		s.Writes = measureWrites(ops, s.Window)
		if s.Writes.LongestGap >= o.MaxGap {
			r.fail("step %d (%s): no write acknowledged for %s (from %s), limit %s",
				i+1, s.Node, s.Writes.LongestGap.Round(time.Millisecond), s.Writes.GapAt.Round(time.Millisecond), o.MaxGap)
		}
		if s.Node == s.Leader && i != len(r.Steps)-1 {
			r.fail("step %d replaced the leader %s before the last step", i+1, s.Node)
		}
	}

	r.Checks = append(r.Checks,
		checks.AckedWritesPresent(ops, len(nodes)),
		checks.PushKeys(ops),
		checks.ETags(ops),
		checks.UnexpectedAnswers(ops),
	)
	for _, c := range r.Checks {
		if !c.OK {
			r.fail("%s", strings.TrimSpace(c.String()))
		}
	}
	r.Linear = model.Check(ops, model.Options{Timeout: o.CheckTimeout, VizDir: filepath.Join(r.Dir, "viz")})
	for _, k := range r.Linear {
		switch {
		case k.Err != nil:
			r.fail("key %s: %v", k.Key, k.Err)
		case k.Result != porcupine.Ok:
			r.fail("key %s (%s): %s %s (see %s)", k.Key, k.Kind, k.Result, k.Aborted, k.Viz)
		}
	}

	r.checkReleases(ctx, b, admin)
}

// checkReleases checks that every node runs the new release: the binary
// each node runs says so, and so does /status for every member where the
// release advertises it (releases before it did not).
func (r *result) checkReleases(ctx context.Context, b backend, admin adminClient) {
	for _, id := range nodes {
		if got, err := b.release(ctx, id); err != nil || got != r.Releases.New {
			r.fail("%s runs %q, want the new release %s (%v)", id, got, r.Releases.New, err)
		}
	}
	advertised := false
	for _, id := range nodes {
		st, err := admin.status(ctx, id)
		if err != nil {
			r.fail("%s: %v", id, err)
			continue
		}
		for _, m := range st.Members {
			switch {
			case m.Versions == nil:
				r.fail("%s's /status shows no versions for member %s", id, m.ID)
			case m.Versions.Release != "":
				advertised = true
				if m.Versions.Release != r.Releases.New {
					r.fail("%s's /status shows member %s on release %s, want %s", id, m.ID, m.Versions.Release, r.Releases.New)
				}
			}
		}
	}
	if !advertised {
		r.Notes = append(r.Notes, "/status names no member's release: this build does not advertise it (cluster.Config.Release unset); checked with each node's `arbor version` only")
	}
}

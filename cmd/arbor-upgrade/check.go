package main

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/anishathalye/porcupine"
)

// check judges the run: statuses, durability and convergence on every
// node, linearizability, releases, and the write gaps of every step.
func (r *result) check(ctx context.Context, o options, b backend, admin *client, ops []op, baseline window) {
	var first, last int64 = -1, 0 // acknowledged writes' returns
	odd := 0
	for i := range ops {
		op := &ops[i]
		if op.acked() && !op.Final {
			if first < 0 || op.Return < first {
				first = op.Return
			}
			last = max(last, op.Return)
		}
		if op.Read {
			r.Reads++
		}
		if op.Status != 0 && op.Status != http.StatusOK && op.Status != http.StatusServiceUnavailable {
			odd++
			if odd <= 5 {
				r.fail("op %d (%s %s via %s) answered %d: %s", op.ID, op.Kind, op.Key, op.Node, op.Status, op.Error)
			}
		}
		if op.Final && op.Outcome != ok {
			r.fail("final read of %s on %s failed: %d %s", op.Key, op.Node, op.Status, op.Error)
		}
	}
	r.Ops = len(ops)
	if odd > 5 {
		r.fail("… %d answers other than 200 and 503 in all", odd)
	}
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

	r.checkState(ctx, admin, ops)

	r.Lin = checkLinearizable(ops, o.CheckTimeout, r.Dir)
	switch r.Lin.Result {
	case porcupine.Ok:
	case porcupine.Illegal:
		r.fail("the register history is not linearizable (see %s)", r.Lin.Viz)
	default:
		r.fail("the linearizability check did not finish within %s", o.CheckTimeout)
	}

	r.checkReleases(ctx, b, admin)
}

// checkState reads the write-once subtrees from every node: each must
// hold every acknowledged write (durability), and all must be identical.
func (r *result) checkState(ctx context.Context, admin *client, ops []op) {
	var first []byte
	for _, id := range nodes {
		var bodies [3][]byte
		for i, sub := range []string{"acks", "patch", "push"} {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout)
			code, body, err := admin.do(rctx, id, http.MethodGet, "/upgrade/"+sub+".json", "")
			cancel()
			if err != nil || code != http.StatusOK {
				r.fail("reading /upgrade/%s on %s: %d %v %.200s", sub, id, code, err, body)
				return
			}
			bodies[i] = body
		}
		var st finalState
		var err error
		for i, t := range []*tree{&st.Acks, &st.Patch, &st.Push} {
			if *t, err = decodeTree(bodies[i]); err != nil {
				r.fail("%s: %v", id, err)
				return
			}
		}
		d := checkDurability(ops, st)
		r.Durable = append(r.Durable, d)
		for _, p := range d.Problems {
			r.fail("%s: %s", id, p)
		}
		all := bytes.Join(bodies[:], []byte{'\n'})
		if first == nil {
			first = all
		} else if !bytes.Equal(all, first) {
			r.fail("%s holds different data than %s", id, nodes[0])
		}
	}
}

// checkReleases checks that every node runs the new release: the binary
// each node runs says so, and so does /status for every member where the
// release advertises it (releases before it did not).
func (r *result) checkReleases(ctx context.Context, b backend, admin *client) {
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

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/arbordb/arbor/fsm"
)

// checkGated runs on the mixed-version cluster, under load, after a step
// that left members on the old release (old): a large write travels as
// one entry the old members apply (or is refused cleanly). When the
// reference cannot apply the rules entry, the new release must also hold
// back what the old members cannot apply: the rules entry is refused as
// documented and nothing is logged, and snapshots stay in the
// reference's format; a judged write needs rules, which cannot exist yet,
// so it is not tried.
func (r *result) checkGated(ctx context.Context, o options, b backend, admin adminClient, upgraded, old []string, leader string) {
	phase := fmt.Sprintf("mixed (new: %s; old: %s)", strings.Join(upgraded, " "), strings.Join(old, " "))
	r.checkLargeMixed(ctx, o, phase, admin, upgraded, old, leader)
	if r.OldEntry < presenceFormat {
		r.checkPresenceGated(ctx, phase, admin, upgraded)
	}
	if r.OldEntry >= rulesFormat {
		r.skipped(phase, "the rules entry held back while an old member runs",
			fmt.Sprintf("the reference applies entry format %d, which the rules entry needs: nothing to hold back", r.OldEntry))
		return
	}
	r.checkGateSeen(ctx, phase, admin, upgraded)
	r.checkRulesRefused(ctx, phase, admin, upgraded, old)
	r.checkSnapshotsStayOld(phase, b, upgraded, r.OldSnapshot)
	r.skipped(phase, "a judged write (ID token or auth_variable_override)", "it needs rules, which no member may log yet")
}

// presenceFormat is the entry format the onDisconnect commands need.
var presenceFormat = fsm.CmdDisconnectRegister.EntryFormat()

// rulesFormat is the entry format the rules entry (and a judged write)
// needs: what every member must apply before either is logged.
var rulesFormat = fsm.CmdSetRules.EntryFormat()

// checkGateSeen checks that each upgraded node's /status shows a member
// that cannot apply the rules entry, the condition of the gate.
func (r *result) checkGateSeen(ctx context.Context, phase string, admin adminClient, upgraded []string) {
	var seen []string
	var errs []error
	for _, id := range upgraded {
		st, err := admin.status(ctx, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		oldest, formats := rulesFormat, []string{}
		for _, m := range st.Members {
			f := 0 // advertises nothing: the base format, as the gate counts it
			if m.Versions != nil {
				f = m.Versions.EntryFormat
			}
			oldest = min(oldest, f)
			formats = append(formats, fmt.Sprintf("%s:%d", m.ID, f))
		}
		if oldest >= rulesFormat {
			errs = append(errs, fmt.Errorf("%s sees every member at entry format %d or later (%s) while old ones run", id, rulesFormat, strings.Join(formats, " ")))
		}
		seen = append(seen, id+" sees "+strings.Join(formats, " "))
	}
	r.crossed(phase, fmt.Sprintf("an upgraded node's /status shows a member below entry format %d", rulesFormat),
		strings.Join(seen, "; "), errors.Join(errs...))
}

// checkRulesRefused PUTs the rules through every node: an upgraded node
// must answer the documented 503 (the reference has no rules and refuses
// with a 4xx of its own), and afterwards no upgraded node has them.
func (r *result) checkRulesRefused(ctx context.Context, phase string, admin adminClient, upgraded, old []string) {
	var answers []string
	var errs []error
	for _, id := range append(slices.Clone(upgraded), old...) {
		resp, err := admin.Do(ctx, id, http.MethodPut, "/.settings/rules.json", rulesSource)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		msg := errorMessage(resp.Body)
		answers = append(answers, fmt.Sprintf("%s %d %q", id, resp.Status, msg))
		switch {
		case slices.Contains(old, id):
			if resp.Status < 400 || resp.Status >= 500 {
				errs = append(errs, errUnexpected(id+" (old) PUT rules", resp.Status, resp.Body, "a 4xx refusal"))
			}
		case resp.Status != http.StatusServiceUnavailable || msg != msgNotReady:
			errs = append(errs, errUnexpected(id+" (new) PUT rules", resp.Status, resp.Body, fmt.Sprintf("503 %q", msgNotReady)))
		case resp.Header.Get("Retry-After") != "1":
			errs = append(errs, fmt.Errorf("%s (new) PUT rules: 503 without Retry-After: 1 (%q)", id, resp.Header.Get("Retry-After")))
		}
	}
	r.crossed(phase, "PUT /.settings/rules.json refused", strings.Join(answers, ", "), errors.Join(errs...))

	// Nothing logged: an upgraded node still serves the default rules
	// (a linearizable read, after every refusal above).
	errs = nil
	for _, id := range upgraded {
		got, err := admin.getRules(ctx, id)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		case strings.Contains(got, rulesMarker):
			errs = append(errs, fmt.Errorf("%s serves the refused rules: the entry was logged", id))
		}
	}
	r.crossed(phase, "no rules logged", "default rules read on "+strings.Join(upgraded, " "), errors.Join(errs...))
}

// checkSnapshotsStayOld checks that an upgraded node still writes (or
// restored) snapshots the reference reads (format at most old): an old
// member can still be sent any snapshot.
func (r *result) checkSnapshotsStayOld(phase string, b backend, upgraded []string, old int) {
	var seen []string
	var errs []error
	for _, id := range upgraded {
		sn, err := newestSnapshot(b.dataDir(id))
		switch {
		case errors.Is(err, errNoSnapshot):
			seen = append(seen, id+": none yet")
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		case sn.Format > old:
			errs = append(errs, fmt.Errorf("%s's newest snapshot %s is newer than format %d", id, sn, old))
		default:
			seen = append(seen, id+": "+sn.String())
		}
	}
	r.crossed(phase, fmt.Sprintf("upgraded nodes' snapshots stay at format %d or older", old), strings.Join(seen, "; "), errors.Join(errs...))
}

// checkLargeMixed writes a value over 1 MiB through an upgraded node, a
// follower if one is.
// The design (cluster/propose.go): a write is one entry, within
// MaxWriteBytes, so every node, the old ones too, must read it back
// whole; a refusal must be a clean 413 with nothing written. Nothing else
// passes.
func (r *result) checkLargeMixed(ctx context.Context, o options, phase string, admin adminClient, upgraded, old []string, leader string) {
	const what = "a write over 1 MiB applied whole"
	via := upgraded[0] // the upgraded leader decides too, if none follows
	for _, id := range upgraded {
		if id != leader {
			via = id
			break
		}
	}
	path := fmt.Sprintf("%s/large/mixed-%s", formatsRoot, strings.Join(upgraded, "-"))
	value := largeValue(phase, mixedLargeBytes)
	start := time.Now()
	code, body, attempts, err := admin.putRetrying(ctx, via, path+".json", jsonString(value), o.StepTimeout)
	took := time.Since(start)
	if err != nil {
		r.crossed(phase, what, "", err)
		return
	}
	var want *string
	switch code {
	case http.StatusOK:
		want = &value
	case http.StatusRequestEntityTooLarge:
		// Refused cleanly: then nothing may have been written.
	default:
		r.crossed(phase, what, "", errUnexpected("PUT through "+via, code, body, "200, or 413 with nothing written"))
		return
	}
	if err := admin.sameEverywhere(ctx, path, want); err != nil {
		r.crossed(phase, what, "", err)
		return
	}
	r.crossed(phase, what, fmt.Sprintf("%d bytes through %s (leader %s) → %d in %s, %d attempt(s); read back identical on %s (old: %s)",
		len(value), via, leader, code, ms(took), attempts, strings.Join(nodes, " "), strings.Join(old, " ")), nil)
}

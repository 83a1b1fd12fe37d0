package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// phaseQuiet names the checks on the upgraded cluster once the load has
// stopped: only the test's own writes reach the log.
const phaseQuiet = "upgraded, quiet"

// checkChunked writes a value of a few MiB through via, a follower, on
// the quiet upgraded cluster: the leader must log it as one entry, as it
// does a small write; and every node must read it back whole.
func (r *result) checkChunked(ctx context.Context, o options, admin adminClient, leader, via string) {
	const what = "a write of a few MiB as one entry"
	small, err := r.entriesFor(ctx, o, admin, leader, via, formatsRoot+"/large/control", jsonString("one entry"))
	if err != nil {
		r.crossed(phaseQuiet, what, "", err)
		return
	}
	path := formatsRoot + "/large/upgraded"
	value := largeValue(phaseQuiet, upgradedLargeBytes)
	start := time.Now()
	large, err := r.entriesFor(ctx, o, admin, leader, via, path, jsonString(value))
	took := time.Since(start)
	if err != nil {
		r.crossed(phaseQuiet, what, "", err)
		return
	}
	if large != small {
		r.crossed(phaseQuiet, what, "", fmt.Errorf("the leader %s logged %d entries for the %d-byte write, and %d for a small write",
			leader, large, len(value), small))
		return
	}
	if err := admin.sameEverywhere(ctx, path, &value); err != nil {
		r.crossed(phaseQuiet, what, "", err)
		return
	}
	r.crossed(phaseQuiet, what, fmt.Sprintf("%d bytes through %s in %s: the leader %s logged %d entries, as for a small write; read back identical on every node",
		len(value), via, ms(took), leader, large), nil)
}

// entriesFor PUTs body at path through via and returns how many entries
// the leader's log grew by meanwhile.
func (r *result) entriesFor(ctx context.Context, o options, admin adminClient, leader, via, path, body string) (uint64, error) {
	before, err := admin.status(ctx, leader)
	if err != nil {
		return 0, fmt.Errorf("leader %s: %w", leader, err)
	}
	code, answer, _, err := admin.putRetrying(ctx, via, path+".json", body, o.StepTimeout)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, errUnexpected("PUT "+path+" through "+via, code, answer, "200")
	}
	after, err := admin.status(ctx, leader)
	switch {
	case err != nil:
		return 0, fmt.Errorf("leader %s: %w", leader, err)
	case after.Role != "leader" || after.Term != before.Term:
		return 0, fmt.Errorf("%s lost the lead during the write (term %d → %d, now %s)", leader, before.Term, after.Term, after.Role)
	}
	return after.LastLogIndex - before.LastLogIndex, nil
}

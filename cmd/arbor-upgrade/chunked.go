package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/arbordb/arbor/fsm"
)

// phaseQuiet names the checks on the upgraded cluster once the load has
// stopped: only the test's own writes reach the log.
const phaseQuiet = "upgraded, quiet"

// checkChunked writes a value over 1 MiB through via, a follower, on the
// quiet upgraded cluster: the leader must log it as chunk entries (entry
// format 3), one per fsm.ChunkBytes of the command, where a small write
// is one entry; and every node must read it back whole.
func (r *result) checkChunked(ctx context.Context, o options, admin adminClient, leader, via string) {
	const what = "a write over 1 MiB chunked"
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
	// The command holds the value and a little more: at least this many.
	chunks := uint64((len(value) + fsm.ChunkBytes - 1) / fsm.ChunkBytes)
	if large < chunks {
		r.crossed(phaseQuiet, what, "", fmt.Errorf("the leader %s logged %d entries for the %d-byte write (a small write: %d), want at least %d chunks",
			leader, large, len(value), small, chunks))
		return
	}
	if err := admin.sameEverywhere(ctx, path, &value); err != nil {
		r.crossed(phaseQuiet, what, "", err)
		return
	}
	r.crossed(phaseQuiet, what, fmt.Sprintf("%d bytes through %s in %s: the leader %s logged %d entries (≥ %d chunks; a small write: %d); read back identical on every node",
		len(value), via, ms(took), leader, large, chunks, small), nil)
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

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/arbordb/arbor/fsm"
)

// restoredIndex is the snapshot index node's Raft restored at start-up
// (or took since): /status raft.last_snapshot_index of the new release.
func restoredIndex(ctx context.Context, admin adminClient, node string) (uint64, error) {
	st, err := admin.status(ctx, node)
	if err != nil {
		return 0, err
	}
	v, ok := st.Raft["last_snapshot_index"]
	if !ok {
		return 0, errors.New("/status shows no raft.last_snapshot_index")
	}
	return strconv.ParseUint(v, 10, 64)
}

// checkRestoredOld checks a step's restart: the old release left a
// snapshot of its format (its shutdown snapshot, or an earlier one), and the
// new release, now ready, restored it rather than stopping or falling
// back to an older one.
func (r *result) checkRestoredOld(ctx context.Context, admin adminClient, s step) {
	phase := "step " + s.Node
	const what = "the old release's snapshot restored by the new one"
	switch {
	case errors.Is(s.SnapshotErr, errNoSnapshot):
		r.skipped(phase, what, "the old release left no snapshot")
		return
	case s.SnapshotErr != nil:
		r.crossed(phase, what, "", s.SnapshotErr)
		return
	case s.Snapshot.Format > r.OldSnapshot:
		r.crossed(phase, what, "", fmt.Errorf("the old release left %s, want format %d or older", s.Snapshot, r.OldSnapshot))
		return
	}
	idx, err := restoredIndex(ctx, admin, s.Node)
	if err == nil && idx < s.Snapshot.Index {
		err = fmt.Errorf("%s restored snapshot index %d, older than the newest, %s", s.Node, idx, s.Snapshot)
	}
	r.crossed(phase, what, fmt.Sprintf("%s; raft last_snapshot_index %d when ready", s.Snapshot, idx), err)
}

// checkRestartWithRules restarts via, a follower, once the rules are
// set: first the new release's --snapshot-threshold/--snapshot-interval
// must take a snapshot covering them (filler writes feed the threshold),
// in the new release's format (fsm.SnapshotVersion: it holds the
// onDisconnect operation a realtime connection to the leader registered
// first); then via is stopped and started again, must restore its newest
// snapshot, and still serve the rules, the large value and judge writes
// by the rules it restored; and the operation runs when its connection
// ends.
func (r *result) checkRestartWithRules(ctx context.Context, o options, b backend, admin adminClient, leader, via string) {
	phase := "restart " + via
	presence, err := openPresence(ctx, admin, leader)
	r.crossed(phase, "an onDisconnect operation registered through the realtime protocol on "+leader, presencePath, err)
	if err != nil {
		return
	}
	defer presence.Close()
	lst, err := admin.status(ctx, leader)
	if err != nil {
		r.crossed(phase, "a snapshot with the rules", "", fmt.Errorf("leader %s: %w", leader, err))
		return
	}
	covered := lst.CommitIndex // the rules and the large write are at or before it
	writes, err := r.snapshotCovering(ctx, o, admin, leader, via, covered)
	if err != nil {
		r.crossed(phase, "a snapshot with the rules, taken by the threshold", "", err)
		return
	}
	taken, err := newestSnapshot(b.dataDir(via))
	if err == nil && (taken.Format != fsm.SnapshotVersion || taken.Index < covered) {
		err = fmt.Errorf("%s's newest snapshot is %s, want format %d at index %d or later", via, taken, fsm.SnapshotVersion, covered)
	}
	r.crossed(phase, "a snapshot with the rules, taken by the threshold",
		fmt.Sprintf("%s after %d filler writes (threshold %d, interval %s)", taken, writes, snapshotThreshold, snapshotInterval), err)
	if err != nil {
		return
	}

	if err := b.stop(ctx, via); err != nil {
		r.crossed(phase, "restart", "", err)
		return
	}
	newest, serr := newestSnapshot(b.dataDir(via))
	if err := b.startNew(ctx, via); err != nil {
		r.crossed(phase, "restart", "", err)
		return
	}
	if err := waitReady(ctx, admin, via, o.StepTimeout); err != nil {
		r.crossed(phase, "restart", "", err)
		return
	}
	if _, err := waitHealthy(ctx, admin, o.StepTimeout); err != nil {
		r.crossed(phase, "restart", "", err)
		return
	}
	idx, err := restoredIndex(ctx, admin, via)
	switch {
	case serr != nil:
		err = serr
	case err != nil:
	case newest.Format != fsm.SnapshotVersion:
		err = fmt.Errorf("%s stopped with newest snapshot %s, want format %d", via, newest, fsm.SnapshotVersion)
	case idx < newest.Index:
		err = fmt.Errorf("%s restored snapshot index %d, older than its newest, %s", via, idx, newest)
	}
	r.crossed(phase, "a snapshot with the rules restored", fmt.Sprintf("%s; raft last_snapshot_index %d when ready", newest, idx), err)
	r.checkRulesEverywhere(ctx, phase, admin)
	r.checkJudged(ctx, phase, admin, via, "restarted")
	r.checkPresenceRan(ctx, o, admin, presence, leader, via, phase)
}

// snapshotCovering writes small values through leader until via reports
// a snapshot at index or later, and returns how many it wrote. Bounded by
// the step timeout and by four thresholds' worth of writes.
func (r *result) snapshotCovering(ctx context.Context, o options, admin adminClient, leader, via string, index uint64) (int, error) {
	const batch = 32
	writes := 0
	err := poll(ctx, o.StepTimeout, via+" snapshot at index "+strconv.FormatUint(index, 10), func(ctx context.Context) error {
		st, err := admin.status(ctx, via)
		if err != nil {
			return err
		}
		if st.LastSnapshot != nil && st.LastSnapshot.Index >= index {
			return nil
		}
		if writes >= 4*snapshotThreshold {
			return fmt.Errorf("no snapshot at index %d after %d writes (last: %+v)", index, writes, st.LastSnapshot)
		}
		for range batch {
			writes++
			code, body, err := admin.do(ctx, leader, http.MethodPut, formatsRoot+"/filler.json", strconv.Itoa(writes))
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return errUnexpected("filler write", code, body, "200")
			}
		}
		return errors.New("no snapshot yet")
	})
	return writes, err
}

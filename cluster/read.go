package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arbordb/arbor/fsm"
)

// Read returns the value at r.Path. A local read serves this node's applied
// state at once. A linearizable read uses a read barrier in the ReadIndex
// style (no log write per read): the leader takes its commit index,
// confirms with a quorum that it still leads, and the state is read once
// everything up to that index is applied. It reflects every write
// acknowledged before Read was called.
func (n *Node) Read(ctx context.Context, r fsm.Read) (fsm.ReadResult, error) {
	if n.closing.Load() {
		return fsm.ReadResult{}, shuttingDown("read")
	}
	if !r.Linearizable {
		return n.fsm.ReadAs(r)
	}
	ctx, cancel := n.bound(ctx)
	defer cancel()
	idx, err := n.readIndex(ctx)
	if err != nil {
		return fsm.ReadResult{}, err
	}
	if err := n.waitApplied(ctx, idx); err != nil {
		return fsm.ReadResult{}, err
	}
	return n.fsm.ReadAs(r)
}

// readIndex returns a commit index that covers every write acknowledged
// before the call, confirmed by a quorum of the current term.
func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	const op = "linearizable read"
	for {
		ch := n.changes.wait()
		t, err := n.route(ctx, op)
		if err != nil {
			return 0, err
		}
		var idx uint64
		if t.local {
			idx, err = n.leaderReadIndex(ctx)
		} else {
			idx, err = n.remoteReadIndex(ctx)
		}
		if !errors.Is(err, errRetry) {
			return idx, err
		}
		if err := awaitChange(ctx, ch); err != nil {
			return 0, deadlineError(op, "leadership changing", fsm.ErrNoLeader, err)
		}
	}
}

// leaderReadIndex is the leader's half of the barrier. The term is read
// first and checked again after the quorum round: a node leads at most
// once per term, so an unchanged term means it led throughout and its
// commit index was current.
func (n *Node) leaderReadIndex(ctx context.Context) (uint64, error) {
	const op = "linearizable read"
	term := n.raft.CurrentTerm()
	// A new leader's commit index may lag what its predecessors committed
	// until an entry of its own term commits; the term barrier waits for
	// that once per term.
	g := n.termBarrier(term)
	select {
	case <-g.done:
	case <-ctx.Done():
		return 0, deadlineError(op, "new leader has not committed an entry of its term", fsm.ErrTimeout, ctx.Err())
	}
	if g.err != nil {
		return 0, raftError(op, g.err, true)
	}
	idx, err := n.lastCommandAt(n.raft.CommitIndex())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	if err := n.verifyLeader(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return 0, deadlineError(op, "leadership not confirmed by a quorum in time", fsm.ErrTimeout, ctxErr)
		}
		return 0, raftError(op, err, true)
	}
	if n.raft.CurrentTerm() != term {
		return 0, errRetry
	}
	return idx, nil
}

// Polling of Raft's applied index by a linearizable read (Raft offers no
// signal for it): the first look comes soon, later ones back off to a
// bound that keeps a read's added latency small.
const (
	appliedPollFirst = 100 * time.Microsecond
	appliedPollMax   = 2 * time.Millisecond
)

// waitApplied waits until the FSM reflects every entry up to index.
func (n *Node) waitApplied(ctx context.Context, index uint64) error {
	const op = "linearizable read"
	// First until Raft has handed every entry up to index to the FSM (or
	// restored a snapshot covering it): only then are the entries up to
	// index known to be the committed ones (see commandTarget). On the
	// leader it is normally already true.
	if n.raft.AppliedIndex() < index {
		if err := n.awaitRaftApplied(ctx, index); err != nil {
			return err
		}
	}
	target, err := n.commandTarget(index)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if target == 0 {
		return nil
	}
	if err := n.fsm.WaitApplied(ctx, target); err != nil {
		return deadlineError(op, fmt.Sprintf("index %d not applied in time", target), fsm.ErrTimeout, err)
	}
	return nil
}

// awaitRaftApplied polls until Raft's applied index reaches index. A
// follower nudges the leader (nudgeCommit) when it may otherwise wait for
// the leader's next AppendEntries to learn that index is committed.
func (n *Node) awaitRaftApplied(ctx context.Context, index uint64) error {
	const op = "linearizable read"
	var (
		nudge     <-chan struct{} // the nudge round this read waits on, if any
		lastNudge time.Time       // when this read last joined a nudge round
		start     = time.Now()
		delay     = appliedPollFirst
	)
	t := time.NewTimer(delay)
	defer t.Stop()
	for n.raft.AppliedIndex() < index {
		if nudge == nil && n.needsNudge(index, start, lastNudge) {
			nudge, lastNudge = n.nudgeCommit(), time.Now()
		}
		select {
		case <-t.C:
			delay = min(2*delay, appliedPollMax)
		case <-nudge:
			// The leader's barrier carried the commit index: look again
			// soon.
			nudge, delay = nil, appliedPollFirst
		case <-ctx.Done():
			return deadlineError(op, fmt.Sprintf("index %d not applied in time", index), fsm.ErrTimeout, ctx.Err())
		}
		if n.closing.Load() {
			return shuttingDown(op)
		}
		t.Reset(delay) // also discards a tick not yet received (Go 1.23 timers)
	}
	return nil
}

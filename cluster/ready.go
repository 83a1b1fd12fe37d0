package cluster

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// Ready returns nil only when this node knows a leader and has applied
// everything that was committed when it (re)started becoming ready: a
// restarted node is not ready until it has caught up. Otherwise the error
// wraps fsm.ErrNotReady and names the failing check. Losing the leader
// resets the catch-up requirement.
func (n *Node) Ready(ctx context.Context) error {
	err := n.ready(ctx)
	if err == nil && n.catchingUp.Load() {
		// Ready means applied up to a read index the leader confirmed
		// after this node started: every write acknowledged before —
		// also by this node, before it lost its state — is here now.
		n.finishCatchUp("applied the leader's read index")
	}
	return err
}

// ready is Ready's check.
func (n *Node) ready(ctx context.Context) error {
	if n.closing.Load() || n.raft.State() == raft.Shutdown {
		return notReady("shutting down")
	}
	_, leader := n.raft.LeaderWithID()
	if leader == "" {
		n.readyIndex.Store(0)
		return notReady("no leader known")
	}
	if leader == n.id {
		// Until a leader commits an entry of its own term, its commit
		// index may be behind what its predecessors committed.
		ctx, cancel := n.bound(ctx)
		defer cancel()
		g := n.termBarrier(n.raft.CurrentTerm())
		select {
		case <-g.done:
		case <-ctx.Done():
			return notReady("leader has not yet committed an entry of its term")
		}
		if g.err != nil {
			return notReady(fmt.Sprintf("leader barrier failed: %v", g.err))
		}
	}
	want := n.readyIndex.Load()
	if want == 0 {
		commit := n.raft.CommitIndex()
		if leader != n.id {
			// A follower's own commit index lags while it catches up
			// (Raft caps it at its last log entry), so ask the leader
			// what it must reach; that also proves the leader can be
			// reached over the cluster port.
			ctx, cancel := n.bound(ctx)
			defer cancel()
			idx, err := n.remoteReadIndex(ctx)
			if err != nil {
				return notReady(fmt.Sprintf("leader %s did not confirm its commit index: %v", leader, err))
			}
			commit = idx
		}
		if commit == 0 {
			return notReady("commit index not yet known")
		}
		n.readyIndex.CompareAndSwap(0, commit)
		want = n.readyIndex.Load()
	}
	if applied := n.raft.AppliedIndex(); applied < want {
		return notReady(fmt.Sprintf("applied index %d behind commit index %d", applied, want))
	}
	target, err := n.commandTarget(want)
	if err != nil {
		return notReady(err.Error())
	}
	if applied := n.fsm.AppliedIndex(); target > applied {
		return notReady(fmt.Sprintf("state machine at index %d, needs %d", applied, target))
	}
	return nil
}

// notReady builds Ready's error: the check that failed, wrapping ErrNotReady.
func notReady(check string) error {
	return fmt.Errorf("%w: %s", fsm.ErrNotReady, check)
}

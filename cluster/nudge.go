package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
)

// Commit nudges. A follower learns that an entry is committed only from
// the leader's next AppendEntries. While writes flow that comes at once;
// after the last write of a burst hashicorp/raft sends it only after
// CommitTimeout (50 ms by default), and heartbeats do not carry the commit
// index. A linearizable read on a follower right after a write (the
// read-your-writes pattern) would wait that long. So a follower that has
// nothing else coming asks the leader to append a barrier entry: its
// AppendEntries carries the commit index, and Raft applies the entries the
// read waits for. The read itself is unchanged — it is still served from
// this node's state once it has applied the read index — so the nudge
// costs a small log entry, never linearizability.
const (
	// nudgeAfter is how long a read waits for the commit index to arrive
	// on its own while newer entries are flowing (they carry it) before
	// nudging anyway.
	nudgeAfter = time.Millisecond
	// nudgeAgain is how long after joining a nudge a read still waiting
	// nudges again (a leader change, a lost AppendEntries).
	nudgeAgain = 5 * time.Millisecond
)

// needsNudge reports whether a read waiting for index on this node should
// nudge the leader now. Only followers nudge. Without any entry after
// index in its log nothing else will bring the commit index soon; with
// newer entries arriving it gives them nudgeAfter first.
func (n *Node) needsNudge(index uint64, start, last time.Time) bool {
	if n.raft.State() != raft.Follower {
		return false
	}
	if !last.IsZero() {
		return time.Since(last) >= nudgeAgain
	}
	return n.raft.LastIndex() <= index || time.Since(start) >= nudgeAfter
}

// nudgeCommit joins the next nudge request of this follower to the leader
// (one at a time, shared by every waiting read) and returns a channel
// closed when it is answered.
func (n *Node) nudgeCommit() <-chan struct{} {
	n.initNudges()
	return n.gate.nudgeOut.enter().done
}

// initNudges sets up the nudge batchers on first use.
func (n *Node) initNudges() {
	n.gate.nudgeOnce.Do(func() {
		n.gate.nudgeOut.run = n.nudgeRound
		n.gate.nudgeIn.run = func() (uint64, error) {
			return 0, n.raft.Barrier(n.cfg.WriteTimeout).Error()
		}
	})
}

// nudgeRound sends one nudge to the leader. Failures only cost latency
// (the commit index still arrives with the leader's next AppendEntries),
// so they are logged and not retried; an older leader without the RPC
// answers with an error and nothing changes.
func (n *Node) nudgeRound() (uint64, error) {
	ctx, cancel := n.bound(context.Background())
	defer cancel()
	t, err := n.route(ctx, "commit nudge")
	if err != nil || t.local {
		return 0, err
	}
	reply, err := n.net.RoundTrip(ctx, t.addr, opCommitNudge, nil)
	if err == nil {
		_, err = decodeReply(reply)
	}
	if err != nil {
		n.log.Debug("commit nudge to the leader failed", "leader", string(t.id), "error", err)
	}
	return 0, err
}

// leaderNudge is the leader's side: append a barrier, shared with every
// nudge that arrived before it started, and answer once it is committed —
// by then the AppendEntries that carry it, and the commit index, have gone
// out to the followers and a quorum has answered.
func (n *Node) leaderNudge(ctx context.Context) error {
	if err := n.leading(); err != nil {
		return err
	}
	n.initNudges()
	if _, err := n.gate.nudgeIn.join(ctx); err != nil {
		return raftError("commit nudge", err, true)
	}
	return nil
}

package cluster

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// maxCommandWalk bounds lastCommandAt's walk over the log. Non-command
// entries come one or a few at a time; past the bound the index itself is
// used, which is always correct, only possibly slower to reach.
const maxCommandWalk = 1024

// lastCommandAt returns the index of the last command entry at or below
// committed, which must be a committed index of this node's log: that is
// all a read must reflect. Reads ignore Raft's own entries (the no-op of a
// new term, barriers, configuration changes) because the FSM never sees
// them — and because a follower learns of the barrier a commit nudge
// appended only with the next AppendEntries, a read index pointing at one
// would make every read after a write nudge again. A log without commands
// gives 1, its first entry (every member applies it first; 0 would mean
// "no commit index known" to readiness). An entry compacted into a
// snapshot stops the walk at its index: every node holds it or will.
func (n *Node) lastCommandAt(committed uint64) (uint64, error) {
	if committed == 0 {
		return 0, nil
	}
	i, end, err := n.walkToCommand(committed, 0, maxCommandWalk)
	switch {
	case err != nil:
		return 0, err
	case end == walkFloor:
		return 1, nil
	case end == walkLimit:
		return committed, nil
	}
	return i, nil // a command, or the first entry compacted away
}

// commandTarget returns the index the FSM must reach to reflect every entry
// up to index, or 0 when it already does. Raft hands only command entries
// to the FSM — never its no-op, barrier or (here) configuration entries —
// so the FSM's applied index stops at the last command and index itself
// may never be reached. Walking back over the log from index to the first
// command not yet applied finds the real target; the walk is short because
// non-command entries are rare, and bounded by the FSM's applied index.
// Call it only after Raft's applied index has reached index, so an entry
// missing from the log was compacted into a snapshot the FSM already holds.
func (n *Node) commandTarget(index uint64) (uint64, error) {
	i, end, err := n.walkToCommand(index, n.fsm.AppliedIndex(), 0)
	if err != nil || end != walkCommand {
		return 0, err
	}
	return i, nil
}

// walkEnd says where walkToCommand stopped.
type walkEnd int

const (
	walkCommand   walkEnd = iota // at a command entry
	walkCompacted                // at an entry compacted into a snapshot
	walkFloor                    // at the floor, without finding either
	walkLimit                    // after limit entries, without finding either
)

// walkToCommand is the one walk down the log that reads need: from index
// from down to (not including) floor, at most limit entries (0: no limit),
// it stops at the first command entry or the first entry compacted away,
// and returns its index and why it stopped.
func (n *Node) walkToCommand(from, floor, limit uint64) (uint64, walkEnd, error) {
	var l raft.Log
	for i := from; i > floor; i-- {
		if limit > 0 && from-i >= limit {
			return i, walkLimit, nil
		}
		err := n.logs.GetLog(i, &l)
		if errors.Is(err, raft.ErrLogNotFound) {
			return i, walkCompacted, nil
		}
		if err != nil {
			if n.closing.Load() {
				return 0, 0, fsm.ErrShuttingDown
			}
			return 0, 0, fmt.Errorf("read log entry %d: %w", i, err)
		}
		if l.Type == raft.LogCommand {
			return i, walkCommand, nil
		}
	}
	return floor, walkFloor, nil
}

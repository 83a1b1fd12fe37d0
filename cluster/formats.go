package cluster

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// baseEntryFormat is the entry format every release applies: a kind that
// needs no more can always be written, whoever the members are.
const baseEntryFormat = 1

// buildFormats is what this build can apply and which entry format each
// command kind it writes needs. Production uses thisBuild; tests describe
// newer and older builds (deps.formats) to exercise mixed clusters.
type buildFormats struct {
	// entry and snapshot are the newest formats this build applies (it
	// applies every older one too).
	entry, snapshot int
	// kinds maps each command kind this build writes to the entry format
	// that introduced it. A release adding a kind adds it here with its
	// new format; numbers never change afterwards.
	kinds map[fsm.CommandKind]int
}

// thisBuild describes the running binary: the fsm's formats and the
// entry format each of its kinds is stamped with.
func thisBuild() buildFormats {
	return buildFormats{
		entry:    fsm.CommandVersion,
		snapshot: fsm.SnapshotVersion,
		kinds:    fsm.CommandKinds(),
	}
}

// CanPropose reports whether an entry of kind may be written now: nil if
// every server in the Raft configuration can apply it, otherwise an error
// wrapping fsm.ErrNotReady (a 503: nothing was written, the client may
// retry) that names a member that cannot. This is how a rolling upgrade
// stays safe (SPEC §9): a new kind waits until the last member has been
// upgraded and advertises the new format through gossip. A member gossip
// does not know (down, or never seen) counts as applying only the base
// format, so only kinds every release applies pass while it is away. A
// kind this build does not know at all wraps fsm.ErrUnsupportedVersion.
// Propose checks it on the node that takes the write, and the leader again
// before it appends the entry.
func (n *Node) CanPropose(kind fsm.CommandKind) error {
	need, ok := n.formats.kinds[kind]
	if !ok {
		return fmt.Errorf("propose: command kind %d is unknown to this build: %w", kind, fsm.ErrUnsupportedVersion)
	}
	if need <= baseEntryFormat {
		return nil // every release applies it: no need to ask anyone
	}
	id, has, err := n.oldestMember()
	if err != nil {
		return err
	}
	if has < need {
		return fmt.Errorf("propose: entry kind %d needs entry format %d and member %s applies only up to %d (upgrade every member first): %w",
			kind, need, id, has, fsm.ErrNotReady)
	}
	return nil
}

// oldestMember returns the server of the configuration with the oldest
// entry format and that format.
func (n *Node) oldestMember() (raft.ServerID, int, error) {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return "", 0, raftError("propose", err, true)
	}
	formats := n.advertisedEntryFormats()
	oldest, min := n.id, n.formats.entry
	for _, s := range cf.Configuration().Servers {
		if has := max(formats[s.ID], baseEntryFormat); has < min {
			oldest, min = s.ID, has
		}
	}
	return oldest, min, nil
}

// advertisedEntryFormats maps each node gossip knows to the newest entry
// format it advertises; this node is always known. A node's last metadata
// stays known while it is down (memberlist remembers it), which is what a
// restarting member needs: it is judged by the build it ran.
func (n *Node) advertisedEntryFormats() map[raft.ServerID]int {
	out := map[raft.ServerID]int{n.id: n.formats.entry}
	if n.disco == nil {
		return out
	}
	for _, p := range n.disco.Peers() {
		if p.ID != n.id {
			out[p.ID] = p.Meta.EntryFormat
		}
	}
	return out
}

// takesPieces says whether gossip knows the member id as one that joins
// entries sent in pieces (pieces.go).
func (n *Node) takesPieces(id raft.ServerID) bool {
	for _, p := range n.disco.Peers() {
		if p.ID == id {
			return p.Meta.EntryFormat >= piecesSinceEntryFormat
		}
	}
	return false
}

package cluster

import (
	"fmt"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// A write is one log entry, replicated in one AppendEntries RPC, stored
// with one fsync on every node and applied in one step on Raft's apply
// loop, where every write behind it waits. The limits below keep that
// step short enough for the promise of docs/RELIABILITY.md: three nodes
// sharing two cores, a canary writing through every node every 50 ms
// while the largest write these limits accept goes through a follower,
// no election and no canary write stalled more than a second. A write
// over either is refused with 413 on the node that took it, before
// anything is logged.

// MaxWriteBytes caps a write's log entry (its encoded form, about the
// size of its JSON; an array's indices make it larger than the text).
const MaxWriteBytes = 32 << 20

// MaxWriteNodes caps the nodes a write creates or changes (writeNodes):
// what its one-step apply costs grows with them, far more than with its
// bytes (a 10 MiB string is one leaf).
const MaxWriteNodes = 1_500_000

// checkWriteBytes refuses an entry of size bytes over MaxWriteBytes.
func checkWriteBytes(size int) error {
	if size <= MaxWriteBytes {
		return nil
	}
	return fmt.Errorf("propose: entry of %d bytes: %w", size,
		tree.WriteTooBig(fmt.Sprintf("this write is %s, and one write carries at most %s", mib(size), mib(MaxWriteBytes))))
}

// checkWriteNodes refuses a command that creates or changes more than
// MaxWriteNodes nodes.
func checkWriteNodes(c *fsm.Command) error {
	n := writeNodes(c)
	if n <= MaxWriteNodes {
		return nil
	}
	return fmt.Errorf("propose: %d nodes: %w", n,
		tree.WriteTooBig(fmt.Sprintf("this write creates or changes %d nodes (keys and values), and one write at most %d", n, MaxWriteNodes)))
}

// writeNodes is the number of nodes c creates or changes: every node of
// its value and every key on its path, and for a PATCH every field's.
// A command whose body is JSON text (an older member's format) counts
// its path alone: its size is bounded by MaxWriteBytes.
func writeNodes(c *fsm.Command) int {
	n := len(c.Path)
	if !c.Parsed {
		return n
	}
	if c.Kind == fsm.CmdUpdate {
		for _, f := range c.Fields {
			n += len(f.Path) + nodesIn(f.Value)
		}
		return n
	}
	return n + nodesIn(c.Value)
}

// nodesIn counts v's nodes: 0 for null, 1 for a leaf, and an object
// with all its descendants.
func nodesIn(v *tree.Node) int {
	if v.Kind() != tree.KindObject {
		if v == nil {
			return 0
		}
		return 1
	}
	n := 1
	v.Each(func(_ string, c *tree.Node) bool {
		n += nodesIn(c)
		return true
	})
	return n
}

// mib renders a size in MiB for a client message.
func mib(n int) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

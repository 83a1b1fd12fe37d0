package cluster

import (
	"fmt"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// A write is one log entry, replicated in one AppendEntries RPC, stored
// with one fsync on every node and applied in one step on Raft's apply
// loop, where every write behind it waits. The limits below keep that
// wait within the promise of docs/RELIABILITY.md: three nodes sharing two
// cores, a canary writing through every node every 50 ms while the
// largest write they accept goes through a follower, no election and no
// canary write stalled more than a second. A write over one is refused
// with 413 on the node that took it, before anything is logged, so it
// costs the others nothing.

// MaxWriteBytes caps the JSON body of one write (httpapi refuses a larger
// one before reading it): the bytes are stored and replicated before
// the entry is applied, and every write behind it waits for them.
const MaxWriteBytes = 16 << 20

// maxEntryBytes caps a write's log entry. Its encoded form is about the
// size of its JSON, larger only by what MaxWriteNodes bounds (an array's
// indices, a number's eight bytes): no HTTP write within the limits
// reaches it. It bounds what a forwarded entry may carry.
const maxEntryBytes = 2 * MaxWriteBytes

// MaxWriteNodes caps the nodes a write creates or changes (writeNodes):
// its one-step apply costs about a microsecond per node on every node at
// once, where its bytes cost little (a 10 MiB string is one leaf).
const MaxWriteNodes = 200_000

// checkWriteBytes refuses an entry of size bytes over maxEntryBytes.
func checkWriteBytes(size int) error {
	if size <= maxEntryBytes {
		return nil
	}
	return fmt.Errorf("propose: entry of %d bytes: %w", size,
		tree.WriteTooBig(fmt.Sprintf("this write is %s once encoded, and one write carries at most %s", tree.ByteSize(int64(size)), tree.ByteSize(maxEntryBytes))))
}

// checkWrite refuses, before it is logged, a parsed command that creates
// or changes more than MaxWriteNodes nodes, or whose value alone is over
// its write size limit (which Apply would refuse on every node after
// replicating it; Apply still counts what the write removes).
func checkWrite(c *fsm.Command) error {
	if n := writeNodes(c); n > MaxWriteNodes {
		return fmt.Errorf("propose: %d nodes: %w", n, tree.WriteTooBig(fmt.Sprintf(
			"this write creates or changes %d nodes (values and the objects that hold them), and one write at most %d", n, MaxWriteNodes)))
	}
	if w, ok := writtenBytes(c); ok && c.WriteLimit > 0 && w > c.WriteLimit {
		return fmt.Errorf("propose: %d bytes written: %w", w, tree.CheckWriteLimit(c.WriteLimit, w, 0))
	}
	return nil
}

// writeNodes is the number of nodes c creates or changes: every node of
// its value, and the nodes on its path, whose digests change; for a
// PATCH, each field's value (a deleted one counts one) and the objects
// its path makes on the way.
func writeNodes(c *fsm.Command) int {
	n := len(c.Path)
	if c.Kind == fsm.CmdUpdate {
		for _, f := range c.Fields {
			n += len(f.Path) - 1 + max(1, nodesIn(f.Value))
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

// writtenBytes is what Apply counts as written against c's write size
// limit, when it is known ahead: for a parsed command without server
// values (which Apply resolves first).
func writtenBytes(c *fsm.Command) (int64, bool) {
	if !c.Parsed {
		return 0, false
	}
	if c.Kind != fsm.CmdUpdate {
		return c.Value.Size(), !c.Value.HasServerValues()
	}
	var w int64
	for _, f := range c.Fields {
		if f.Value.HasServerValues() {
			return 0, false
		}
		w += f.Value.Size()
	}
	return w, true
}

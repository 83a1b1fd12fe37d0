package pki

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

// GossipKeyStep is one step of a gossip key rotation (RotateGossipKey).
type GossipKeyStep int

// The three steps that change the gossip key without a moment in which
// two nodes cannot read each other (docs/OPERATIONS.md). Each must be
// rolled out to every node before the next.
const (
	// GossipKeyAdd puts a new key last in dir/gossip.key (creating the
	// file): nodes accept it but still seal with the first.
	GossipKeyAdd GossipKeyStep = iota
	// GossipKeyPromote moves the new (last) key first: nodes seal with it
	// and still accept the old one.
	GossipKeyPromote
	// GossipKeyDropOld keeps the key in use (the first) alone.
	GossipKeyDropOld
)

// RotateGossipKey is `arbor certs gossip-key`: it takes step on
// dir/gossip.key and reports the keys, and what to roll out next, to out.
// Nodes re-read the file within a second of it changing.
func RotateGossipKey(dir string, step GossipKeyStep, out io.Writer) error {
	promote, dropOld := step == GossipKeyPromote, step == GossipKeyDropOld
	path := filepath.Join(dir, gossipKeyFile)
	var keys [][]byte
	var err error
	var next string
	switch {
	case promote || dropOld:
		if keys, err = readGossipKeyFile(path); err != nil {
			return err
		}
		if len(keys) < 2 {
			return fmt.Errorf("%s holds %d key(s): no rotation is under way (add a key first: arbor certs gossip-key --dir %s)", path, len(keys), dir)
		}
		if promote {
			keys = append([][]byte{keys[len(keys)-1]}, keys[:len(keys)-1]...)
			next = fmt.Sprintf("step 2 of 3: roll %s out to every node; once all have it, drop the old key:\n  arbor certs gossip-key --dir %s --drop-old", path, dir)
		} else {
			keys = keys[:1]
			next = fmt.Sprintf("step 3 of 3: roll %s out to every node; the old key is refused from then on.", path)
		}
		if err := atomicfile.Write(path, formatGossipKeyFile(keys), 0o600); err != nil {
			return err
		}
	default:
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if keys, err = addGossipKey(path); err != nil {
			return err
		}
		next = fmt.Sprintf("step 1 of 3: roll %s out to every node; once all have it, make the new key the one in use:\n  arbor certs gossip-key --dir %s --promote", path, dir)
		if len(keys) == 1 {
			next = "" // a first key: nothing to rotate
		}
	}
	fmt.Fprintf(out, "wrote    %s:\n", path)
	for i, id := range GossipKeyIDs(keys) {
		role := "accepted"
		if i == 0 {
			role = "in use (seals gossip), accepted"
		}
		fmt.Fprintf(out, "  %d. %s  %s\n", i+1, id, role)
	}
	if next != "" {
		fmt.Fprintf(out, "\nGossip key rotation, %s\nNodes re-read the file within a second of it changing; each logs the keys it uses.\n", next)
	}
	return nil
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// runCertsGossipKey is `arbor certs gossip-key --dir D [--promote |
// --drop-old]`, the three steps that change the gossip key without a
// moment in which two nodes cannot read each other (docs/OPERATIONS.md):
//
//  1. gossip-key: a new key, last in D/gossip.key: nodes accept it but
//     still seal with the first. Roll it out.
//  2. --promote: the new key first: nodes seal with it and still accept
//     the old one. Roll it out.
//  3. --drop-old: the new key alone. Roll it out.
//
// Nodes re-read the file within a second of it changing.
func runCertsGossipKey(args []string, stdout, stderr io.Writer) int {
	var f certsFlags
	fset := newCertsFlagSet("gossip-key", "Usage: arbor certs gossip-key --dir D [--promote | --drop-old]\n\n"+
		"D/gossip.key holds the gossip keys, one per line: nodes seal gossip with the first and accept all.\n"+
		"Without flags: adds a new key at the end (creating the file if need be). --promote moves the last\n"+
		"key to the front. --drop-old keeps the first key alone.\n", &f, false, stderr)
	promote := fset.Bool("promote", false, "make the newest key (the last) the one gossip is sealed with")
	dropOld := fset.Bool("drop-old", false, "keep only the key in use (the first)")
	if code, ok := parseCertsFlags(fset, &f, args, stderr); !ok {
		return code
	}
	if *promote && *dropOld {
		fmt.Fprintln(stderr, "arbor certs gossip-key: --promote and --drop-old are separate steps; give one")
		return exitUsage
	}
	if err := certsGossipKey(f.dir, *promote, *dropOld, stdout); err != nil {
		fmt.Fprintf(stderr, "arbor certs gossip-key: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// certsGossipKey does the work of runCertsGossipKey.
func certsGossipKey(dir string, promote, dropOld bool, out io.Writer) error {
	path := filepath.Join(dir, gossipKeyFile)
	var keys [][]byte
	var err error
	var step string
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
			step = fmt.Sprintf("step 2 of 3: roll %s out to every node; once all have it, drop the old key:\n  arbor certs gossip-key --dir %s --drop-old", path, dir)
		} else {
			keys = keys[:1]
			step = fmt.Sprintf("step 3 of 3: roll %s out to every node; the old key is refused from then on.", path)
		}
		if err := writeFileAtomic(path, formatGossipKeyFile(keys), 0o600); err != nil {
			return err
		}
	default:
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if keys, err = addGossipKey(path); err != nil {
			return err
		}
		step = fmt.Sprintf("step 1 of 3: roll %s out to every node; once all have it, make the new key the one in use:\n  arbor certs gossip-key --dir %s --promote", path, dir)
		if len(keys) == 1 {
			step = "" // a first key: nothing to rotate
		}
	}
	fmt.Fprintf(out, "wrote    %s:\n", path)
	for i, id := range gossipKeyIDs(keys) {
		role := "accepted"
		if i == 0 {
			role = "in use (seals gossip), accepted"
		}
		fmt.Fprintf(out, "  %d. %s  %s\n", i+1, id, role)
	}
	if step != "" {
		fmt.Fprintf(out, "\nGossip key rotation, %s\nNodes re-read the file within a second of it changing; each logs the keys it uses.\n", step)
	}
	return nil
}

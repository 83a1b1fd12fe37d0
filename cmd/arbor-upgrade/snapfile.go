package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// snapshotMagic starts every Arbor snapshot, followed by its format
// version in one byte (fsm/snapshot.go; the same in every release).
const snapshotMagic = "ARBORSNP"

// errNoSnapshot says a data directory holds no complete snapshot yet.
var errNoSnapshot = errors.New("no snapshot")

// snapFile is one snapshot in a node's data directory, as Raft's file
// snapshot store keeps it: snapshots/<term>-<index>-<ms>/ with meta.json
// and state.bin (the state machine's snapshot, byte for byte).
type snapFile struct {
	Name        string
	Index, Term uint64
	// Format is the snapshot format version state.bin was written in.
	Format int
}

func (s snapFile) String() string {
	return fmt.Sprintf("%s (index %d, format %d)", s.Name, s.Index, s.Format)
}

// newestSnapshot returns the snapshot in dataDir that Raft restores at
// start-up: the complete one with the highest term, then index.
// Directories still being written (".tmp") are skipped.
func newestSnapshot(dataDir string) (snapFile, error) {
	base := filepath.Join(dataDir, "snapshots")
	entries, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return snapFile{}, errNoSnapshot
	}
	if err != nil {
		return snapFile{}, err
	}
	var best snapFile
	found := false
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		var meta struct{ Index, Term uint64 }
		b, err := os.ReadFile(filepath.Join(base, e.Name(), "meta.json"))
		if err != nil || json.Unmarshal(b, &meta) != nil {
			continue // being written or reaped right now
		}
		if found && (meta.Term < best.Term || (meta.Term == best.Term && meta.Index <= best.Index)) {
			continue
		}
		best, found = snapFile{Name: e.Name(), Index: meta.Index, Term: meta.Term}, true
	}
	if !found {
		return snapFile{}, errNoSnapshot
	}
	best.Format, err = snapshotFormat(filepath.Join(base, best.Name, "state.bin"))
	return best, err
}

// snapshotFormat reads the format version from a state.bin's header.
func snapshotFormat(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	hdr := make([]byte, len(snapshotMagic)+1)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return 0, fmt.Errorf("%s: header: %w", path, err)
	}
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic {
		return 0, fmt.Errorf("%s: not an Arbor snapshot", path)
	}
	return int(hdr[len(snapshotMagic)]), nil
}

package cluster

import (
	"os"
	"path/filepath"
)

// snapshotSyncEvery is how much of a snapshot is written between two
// flushes of its file to disk while it is written. The file store flushes
// only at the end: on ext4 (data=ordered) the Raft log's next fsync then
// waited for the whole snapshot's data to reach the disk, and with a tree
// of two million keys and 130 MB of large values (~200 MB a snapshot)
// every write on the node stalled 0.3–0.6 s at the end of each snapshot,
// which on two followers at once stalled the cluster (make test-abuse,
// h2load PUT flood, docs/RELIABILITY.md). Flushed every few MiB, each of
// the log's fsyncs waits for a few MiB at most.
var snapshotSyncEvery int64 = 8 << 20 // a variable for tests

// openSnapshotFile opens, to flush it, the file raft's file snapshot
// store writes the snapshot id into (dir/<id>.tmp/state.bin); nil when
// there is none (another store, or its layout changed: then the store's
// own flush at the end is all there is).
func openSnapshotFile(dir, id string) *os.File {
	if dir == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, id+".tmp", "state.bin"))
	if err != nil {
		return nil
	}
	return f
}

// syncProgress flushes the snapshot file once snapshotSyncEvery more
// bytes were written since the last flush. A failed flush is not the
// snapshot's failure: the store's own flush at Close reports that.
func (s *meteredSink) syncProgress() {
	if s.file == nil || s.size-s.synced < snapshotSyncEvery {
		return
	}
	if s.file.Sync() == nil {
		s.syncs++
	}
	s.synced = s.size
}

// closeFile closes the file opened to flush it.
func (s *meteredSink) closeFile() {
	if s.file != nil {
		_ = s.file.Close() // read-only: nothing to lose
		s.file = nil
	}
}

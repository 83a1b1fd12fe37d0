package cluster

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// countingFSM is the FSM as Raft sees it: it counts the snapshots installed
// from the leader (restores after start-up; the one at start-up is this
// node's own), which says that a lagging node was caught up by snapshot.
type countingFSM struct {
	raftFSM
	started  atomic.Bool
	installs atomic.Uint64
}

// Restore implements raft.FSM.
func (c *countingFSM) Restore(rc io.ReadCloser) error {
	if err := c.raftFSM.Restore(rc); err != nil {
		return err
	}
	if c.started.Load() {
		c.installs.Add(1)
	}
	return nil
}

// meteredSnapshots wraps the file snapshot store to measure each snapshot
// as it is written (taken locally or installed from the leader): raft does
// not expose the size or duration of the last one.
type meteredSnapshots struct {
	raft.SnapshotStore
	dir string // where the file store keeps its snapshots (snapshotsync.go)

	mu       sync.Mutex
	last     snapshotInfo
	count    atomic.Uint64
	failures atomic.Uint64
}

// snapshotInfo describes the last completed snapshot.
type snapshotInfo struct {
	Index    uint64
	Term     uint64
	Size     int64
	Duration time.Duration
	At       time.Time
}

// Create implements raft.SnapshotStore.
func (m *meteredSnapshots) Create(version raft.SnapshotVersion, index, term uint64,
	configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := m.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		m.failures.Add(1)
		return nil, err
	}
	return &meteredSink{SnapshotSink: sink, store: m, index: index, term: term, start: time.Now(),
		file: openSnapshotFile(m.dir, sink.ID())}, nil
}

// lastSnapshot returns the last completed snapshot (zero if none yet).
func (m *meteredSnapshots) lastSnapshot() snapshotInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

type meteredSink struct {
	raft.SnapshotSink
	store       *meteredSnapshots
	index, term uint64
	start       time.Time
	size        int64
	// file is the snapshot's file, flushed as it is written
	// (snapshotsync.go); synced is size at the last flush.
	file   *os.File
	synced int64
	syncs  int
}

// Write implements io.Writer, counting bytes.
func (s *meteredSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.size += int64(n)
	s.syncProgress()
	return n, err
}

// Close implements raft.SnapshotSink, recording the finished snapshot.
func (s *meteredSink) Close() error {
	defer s.closeFile()
	if err := s.SnapshotSink.Close(); err != nil {
		s.store.failures.Add(1)
		return err
	}
	now := time.Now()
	s.store.mu.Lock()
	s.store.last = snapshotInfo{Index: s.index, Term: s.term, Size: s.size, Duration: now.Sub(s.start), At: now}
	s.store.mu.Unlock()
	s.store.count.Add(1)
	return nil
}

// Cancel implements raft.SnapshotSink.
func (s *meteredSink) Cancel() error {
	s.closeFile()
	s.store.failures.Add(1)
	return s.SnapshotSink.Cancel()
}

package cluster

import (
	"io"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// raftFSM adapts the state machine, which knows nothing of Raft, to
// raft.BatchingFSM. Responses of command entries are *fsm.ApplyResponse.
type raftFSM struct{ f *fsm.FSM }

var _ raft.BatchingFSM = raftFSM{}

// entryOf is l as the state machine sees it.
func entryOf(l *raft.Log) fsm.Entry {
	return fsm.Entry{Index: l.Index, Term: l.Term, Command: l.Type == raft.LogCommand, Data: l.Data}
}

// Apply implements raft.FSM.
func (a raftFSM) Apply(l *raft.Log) interface{} {
	if r := a.f.Apply(entryOf(l)); r != nil {
		return r
	}
	return nil
}

// ApplyBatch implements raft.BatchingFSM.
func (a raftFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	entries := make([]fsm.Entry, len(logs))
	for i, l := range logs {
		entries[i] = entryOf(l)
	}
	out := make([]interface{}, len(logs))
	for i, r := range a.f.ApplyBatch(entries) {
		if r != nil {
			out[i] = r
		}
	}
	return out
}

// Snapshot implements raft.FSM.
func (a raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := a.f.Snapshot()
	if err != nil {
		return nil, err
	}
	return raftSnapshot{s}, nil
}

// Restore implements raft.FSM.
func (a raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return a.f.Restore(rc)
}

// raftSnapshot is a captured state as Raft persists it.
type raftSnapshot struct{ s *fsm.Snapshot }

// Persist implements raft.FSMSnapshot.
func (r raftSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := r.s.Persist(sink); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot; the captured state is garbage
// collected.
func (raftSnapshot) Release() {}

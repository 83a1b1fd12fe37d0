package cluster

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestSnapshotFlushedAsWritten: a snapshot written through the metered
// store into raft's file store is flushed every snapshotSyncEvery bytes
// (the file is found where the file store writes it), and what was
// written reads back whole.
func TestSnapshotFlushedAsWritten(t *testing.T) {
	was := snapshotSyncEvery
	snapshotSyncEvery = 1 << 16
	defer func() { snapshotSyncEvery = was }()
	dir := t.TempDir()
	fss, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, newHCLogger(testLogger(t), "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	m := &meteredSnapshots{SnapshotStore: fss, dir: filepath.Join(dir, "snapshots")}
	_, trans := raft.NewInmemTransport("")
	sink, err := m.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	ms := sink.(*meteredSink)
	if ms.file == nil {
		t.Fatalf("the snapshot's file was not found under %s (raft's file store layout changed?)", m.dir)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 4*(1<<16)/16+100) // a little over 4 × snapshotSyncEvery
	for p := data; len(p) > 0; p = p[min(len(p), 1000):] {
		if _, err := sink.Write(p[:min(len(p), 1000)]); err != nil {
			t.Fatal(err)
		}
	}
	if ms.syncs != 4 {
		t.Errorf("flushed %d times while writing %d bytes, want 4", ms.syncs, len(data))
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if ms.file != nil {
		t.Error("the file opened to flush it is still open")
	}
	_, rc, err := fss.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(data))
	}

	// Another store (no such file): written all the same, never flushed.
	if f := openSnapshotFile(filepath.Join(dir, "elsewhere"), sink.ID()); f != nil {
		f.Close()
		t.Fatal("found a snapshot file where there is none")
	}
	if f := openSnapshotFile("", sink.ID()); f != nil {
		f.Close()
		t.Fatal("found a snapshot file without a directory")
	}
}

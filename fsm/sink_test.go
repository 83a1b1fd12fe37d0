package fsm

import (
	"bytes"
	"io"
)

// memSink is an in-memory raft.SnapshotSink.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (m *memSink) ID() string    { return "mem" }
func (m *memSink) Cancel() error { m.cancelled = true; return nil }
func (m *memSink) Close() error  { return nil }

func (m *memSink) reader() io.ReadCloser { return nopCloser{bytes.NewReader(m.Bytes())} }

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

// discardSink is a raft.SnapshotSink that drops what it is given, like a
// file sink whose writes cost nothing; benchmarks use it to measure Persist.
type discardSink struct{ n int64 }

func (d *discardSink) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }
func (d *discardSink) ID() string                  { return "discard" }
func (d *discardSink) Cancel() error               { return nil }
func (d *discardSink) Close() error                { return nil }

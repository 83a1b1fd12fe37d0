package fsm

import (
	"bytes"
	"io"
)

// memSink keeps a written snapshot in memory.
type memSink struct{ bytes.Buffer }

func (m *memSink) reader() io.Reader { return bytes.NewReader(m.Bytes()) }

// discardSink drops what it is given, like a file whose writes cost
// nothing; benchmarks use it to measure writing a snapshot.
type discardSink struct{ n int64 }

func (d *discardSink) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }

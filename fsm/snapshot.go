package fsm

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"

	"github.com/arbordb/arbor/fsm/tree"
)

// SnapshotVersion is the newest snapshot format this release writes.
// readSnapshot accepts every version up to it. Snapshot format 1 is the
// format of release v0.1.0, the first; format 2 adds the onDisconnect
// operations. A state without any is written in format 1, which every
// release reads: operations exist only once every member applies entry
// format 2 (and so reads snapshot format 2), so a snapshot a leader sends
// an older member during a rolling upgrade is always one it reads.
const SnapshotVersion = 2

// snapshotMagic starts every snapshot so a foreign file is refused early.
const snapshotMagic = "ARBORSNP"

// Snapshot layout (version 1):
//
//	magic(8) version(1) index(8) lastPushTime(8) lastRand(12)
//	rulesIndex(8) rulesLen(4) rules source (index 0 and no source: the
//	default rules, never set)
//	version 2 only: the onDisconnect operations (disconnectset.go)
//	body: the tree as export-format JSON ("null" when empty)
//	crc32c(4) over everything before it
//
// The tree is rendered one top-level child at a time so Persist never holds
// a second copy of the whole tree in memory.

// Snapshot is the state captured by FSM.Snapshot, ready to be written.
type Snapshot struct{ s *state }

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Persist writes the captured state to w in the snapshot format.
func (sn *Snapshot) Persist(w io.Writer) error {
	if err := writeSnapshot(w, sn.s); err != nil {
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return nil
}

type crcWriter struct {
	w   io.Writer
	crc uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	c.crc = crc32.Update(c.crc, crcTable, p)
	return c.w.Write(p)
}

func writeSnapshot(w io.Writer, s *state) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &crcWriter{w: bw}
	body := &treeChunks{root: s.root}
	var hdr []byte
	hdr = append(hdr, snapshotMagic...)
	version := byte(1)
	if s.disconnects != nil {
		version = 2
	}
	hdr = append(hdr, version)
	hdr = binary.BigEndian.AppendUint64(hdr, s.index)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(s.lastPushTime))
	hdr = append(hdr, s.lastRand[:]...)
	var rulesIndex uint64
	var rulesSource []byte
	if s.rules != nil {
		rulesIndex, rulesSource = s.rules.Index, s.rules.Source
	}
	hdr = binary.BigEndian.AppendUint64(hdr, rulesIndex)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(rulesSource)))
	hdr = append(hdr, rulesSource...)
	if version >= 2 {
		hdr = s.disconnects.appendTo(hdr)
	}
	if _, err := cw.Write(hdr); err != nil {
		return err
	}
	if err := body.write(cw); err != nil {
		return err
	}
	if _, err := bw.Write(binary.BigEndian.AppendUint32(nil, cw.crc)); err != nil {
		return err
	}
	return bw.Flush()
}

// treeChunks renders the root's children in pieces of about 48 KiB.
type treeChunks struct {
	root *tree.Node
}

func (t *treeChunks) write(w io.Writer) error {
	return t.each(func(b []byte) error { _, err := w.Write(b); return err })
}

// each renders the export JSON of the tree in pieces.
func (t *treeChunks) each(emit func([]byte) error) error {
	opts := tree.RenderOptions{Export: true}
	if t.root.Kind() != tree.KindObject {
		return emit(tree.AppendJSON(nil, t.root, opts))
	}
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, '{')
	if p := t.root.Priority(); p != nil {
		buf = append(buf, `".priority":`...)
		buf = tree.AppendJSON(buf, p, opts)
		buf = append(buf, ',')
	}
	first := true
	var err error
	t.root.Each(func(k string, c *tree.Node) bool {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = tree.AppendQuoted(buf, k)
		buf = append(buf, ':')
		buf = tree.AppendJSON(buf, c, opts)
		if len(buf) >= 48<<10 {
			if err = emit(buf); err != nil {
				return false
			}
			buf = buf[:0]
			// Persist is CPU-bound; on a small machine it would hold a P
			// for a whole 10 ms scheduler slice. Yielding after each chunk
			// lets the apply goroutine run at once (measured: the longest
			// Apply stall drops from ~15 ms to a few ms on 2 cores).
			runtime.Gosched()
		}
		return true
	})
	if err != nil {
		return err
	}
	buf = append(buf, '}')
	return emit(buf)
}

// readSnapshot decodes a snapshot written by this or an older release.
func readSnapshot(r io.Reader) (*state, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	const hdrLen = len(snapshotMagic) + 1 + 8 + 8 + 12
	if len(data) < hdrLen+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("read snapshot: not an Arbor snapshot: %w", tree.ErrInvalidData)
	}
	version := data[len(snapshotMagic)]
	if version == 0 || version > SnapshotVersion {
		return nil, fmt.Errorf("read snapshot: version %d: %w", version, ErrUnsupportedVersion)
	}
	sum := binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(data[:len(data)-4], crcTable) != sum {
		return nil, fmt.Errorf("read snapshot: checksum mismatch: %w", tree.ErrInvalidData)
	}
	d := data[len(snapshotMagic)+1:]
	s := &state{}
	s.index = binary.BigEndian.Uint64(d)
	s.lastPushTime = int64(binary.BigEndian.Uint64(d[8:]))
	copy(s.lastRand[:], d[16:28])
	body := d[28 : len(d)-4]
	if len(body) < 12 {
		return nil, fmt.Errorf("read snapshot: rules: truncated: %w", tree.ErrInvalidData)
	}
	rulesIndex := binary.BigEndian.Uint64(body)
	n := binary.BigEndian.Uint32(body[8:])
	if uint64(n) > uint64(len(body)-12) {
		return nil, fmt.Errorf("read snapshot: rules: truncated: %w", tree.ErrInvalidData)
	}
	if rulesIndex != 0 || n != 0 {
		src := append([]byte(nil), body[12:12+n]...)
		if s.rules, err = restoreRules(src, rulesIndex); err != nil {
			return nil, err
		}
	}
	body = body[12+n:]
	if version >= 2 {
		if s.disconnects, body, err = readDisconnectSet(body); err != nil {
			return nil, err
		}
	}
	root, err := tree.ParseBody(body, tree.MaxDepth)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: tree: %w", err)
	}
	s.root = root
	if s.rules != nil {
		// Indexes are derived data, rebuilt rather than stored.
		if s.indexes, err = buildIndexSet(context.Background(), s.rules.Set, root, nil); err != nil {
			return nil, err
		}
	}
	return s, nil
}

package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// A command too large for one log entry travels as a run of CmdChunk
// entries (entry format 3), each at most ChunkBytes of the encoded
// command; the state machine buffers them and applies the command, as one
// atomic write, when the last one is applied. One Raft entry is
// replicated in one RPC, stored with one fsync and applied in one step, so
// a 16 MiB entry held every other write up for half a second; chunks
// let other writes commit in between (docs/RELIABILITY.md).
//
// Chunk entry: version(3) kind(7) flags(0) op(16) seq(uvarint)
// total(uvarint) len(uvarint) bytes.
const (
	// CmdChunk is one piece of a large command (see above).
	CmdChunk CommandKind = 7
	// CmdChunkStrict (entry format 6) is CmdChunk for a command that is
	// refused (ErrWriteConflict: nothing applied) rather than applied in
	// one step at its last chunk when writes between its chunks leave the
	// value prepared as they came unusable and the command is a PATCH of
	// more than strictOneStepFields fields: that apply would hold every
	// other write up on every node for up to seconds (chunkprep.go). The
	// decision depends only on the log (snapshots are never taken while
	// a command is half assembled), so every replica takes it alike.
	CmdChunkStrict CommandKind = 11
	// ChunkBytes is the size over which a command is chunked, and the
	// largest piece a chunk entry carries.
	ChunkBytes = 1 << 20
	// ChunkPiece is the size of the pieces a leader cuts a command into
	// (every release applies pieces of any size up to ChunkBytes): each
	// chunk's apply prepares its share of the command (chunkprep.go),
	// and a write that comes meanwhile waits for one chunk. A million-key
	// PATCH held other writes 0.1–0.3 s in 1 MiB pieces, under 0.09 s in
	// 256 KiB ones; a PATCH of 500k two-key paths over as many children
	// costs ~90 ms of a core per 256 KiB piece on every node, which on
	// three nodes sharing two cores held others up to 0.56 s (p99); in
	// 128 KiB pieces 0.41 s (docs/RELIABILITY.md).
	ChunkPiece = 128 << 10
	// chunkAbandonAfter drops a buffered command whose next chunk has not
	// come within this many log entries (its proposer gave up).
	chunkAbandonAfter = 10000
)

// ChunkID names one chunked command.
type ChunkID [16]byte

// ErrChunkPending refuses a snapshot while a chunked command is half
// applied: its buffered pieces are in the log, not in the snapshot, so a
// snapshot is taken only between chunked commands (Raft retries later).
var ErrChunkPending = errors.New("a chunked command is half applied; snapshot later")

// strictOneStepFields is the most fields a PATCH in CmdChunkStrict
// entries may have to be applied in one step at its last chunk (about
// 0.1 s of stall on three nodes sharing two cores); past it, it is
// refused.
var strictOneStepFields = 1 << 15 // a variable for tests

// EncodeChunk is the seq-th of total chunk entries of command op.
func EncodeChunk(op ChunkID, seq, total int, piece []byte) []byte {
	return encodeChunk(CmdChunk, op, seq, total, piece)
}

// EncodeStrictChunk is EncodeChunk in CmdChunkStrict entries.
func EncodeStrictChunk(op ChunkID, seq, total int, piece []byte) []byte {
	return encodeChunk(CmdChunkStrict, op, seq, total, piece)
}

func encodeChunk(kind CommandKind, op ChunkID, seq, total int, piece []byte) []byte {
	b := make([]byte, 0, 32+len(piece))
	b = append(b, byte(kind.EntryFormat()), byte(kind), 0)
	b = append(b, op[:]...)
	b = binary.AppendUvarint(b, uint64(seq))
	b = binary.AppendUvarint(b, uint64(total))
	return appendBytes(b, piece)
}

// pendingChunks is the command being assembled; part of state, shared
// by the states that follow (appends copy).
type pendingChunks struct {
	op     ChunkID
	strict bool // CmdChunkStrict entries
	term   uint64
	last   uint64 // index of the last chunk applied
	total  int
	parts  [][]byte
	// prep is the command's work done as its chunks came (chunkprep.go).
	prep *chunkPrep
}

// applyChunk buffers a chunk entry at index (term) and, for the last one,
// applies the whole command. Pieces that do not follow on are refused
// (the command is dropped); a chunk of another command drops the one
// being assembled (its proposer gave up).
func applyChunk(s *state, data []byte, index, term uint64) (*state, Result, []Event, error) {
	next := *s
	d := decoder{b: data[3:]}
	var op ChunkID
	copy(op[:], d.take(len(op)))
	seq, total := d.uvarint(), d.uvarint()
	piece := d.bytes()
	if d.err != nil || total < 2 || seq >= total {
		next.chunks = nil
		return &next, Result{}, nil, fmt.Errorf("chunk entry %d: malformed: %w", index, tree.ErrInvalidData)
	}
	strict := CommandKind(data[1]) == CmdChunkStrict
	p := next.chunks
	if p == nil || p.op != op {
		p = nil
	}
	if (p == nil && seq != 0) || (p != nil && (int(seq) != len(p.parts) || int(total) != p.total || strict != p.strict)) {
		next.chunks = nil
		return &next, Result{}, nil, fmt.Errorf("chunk %d of %d out of order: %w", seq, total, tree.ErrInvalidData)
	}
	if p == nil {
		p = &pendingChunks{op: op, total: int(total), strict: strict}
	}
	q := *p
	q.term, q.last = term, index
	q.parts = append(q.parts[:len(q.parts):len(q.parts)], piece)
	last := len(q.parts) == q.total
	if last {
		defer gcPause()() // a large command: see pauseGC
	}
	switch {
	case seq == 0:
		q.prep = &chunkPrep{}
		fallthrough
	case q.prep != nil && q.prep.parts == len(q.parts)-1:
		q.prep.take(s.root, piece, q.total)
	default:
		q.prep = nil // cannot happen: chunks are applied once, in order
	}
	if !last {
		next.chunks = &q
		return &next, Result{}, nil, nil
	}
	next.chunks = nil
	if q.prep != nil {
		if after, res, events, err, ok := q.prep.apply(&next); ok {
			return after, res, events, err
		}
		if q.strict && q.prep.stale && len(q.prep.fields) > strictOneStepFields {
			refusedApplies.Add(1)
			return &next, Result{}, nil, fmt.Errorf("chunked PATCH of %d fields: its node was written meanwhile in a way its prepared value cannot follow: %w",
				len(q.prep.fields), ErrWriteConflict)
		}
	}
	oneStepApplies.Add(1)
	size := 0
	for _, part := range q.parts {
		size += len(part)
	}
	whole := make([]byte, 0, size)
	for _, part := range q.parts {
		whole = append(whole, part...)
	}
	next.chunks = nil
	if k, err := EntryKind(whole); err != nil || k == CmdChunk || k == CmdChunkStrict {
		return &next, Result{}, nil, fmt.Errorf("chunked command: not a command: %w", tree.ErrInvalidData)
	}
	return applyEntry(&next, whole)
}

// expireChunks drops a command being assembled once a newer term's entry
// is applied (its leader is gone, and the next one never continues it) or
// its next chunk is overdue.
func (s *state) expireChunks(index, term uint64) {
	if p := s.chunks; p != nil && (term > p.term || index > p.last+chunkAbandonAfter) {
		s.chunks = nil
	}
}

// ChunkTime is the time a write is given for each ChunkPiece of a command
// over ChunkBytes, beyond the write timeout: a large write replicates one
// chunk at a time (each stored, replicated and applied before the next),
// which takes longer than the write timeout allows a quorum to answer. A
// million-key PATCH into a node of as many took 3.6–5 s on three nodes
// sharing two cores (48 chunks): past the 5 s default, its client got a
// 503 although the write went on.
const ChunkTime = 250 * time.Millisecond

// WriteBudget is how long a write of size bytes may take: timeout, plus
// ChunkTime per piece when it is chunked. The node that takes the
// request, the one that proposes it and the leader all bound it so.
func WriteBudget(timeout time.Duration, size int) time.Duration {
	if size <= ChunkBytes {
		return timeout
	}
	return timeout + time.Duration((size+ChunkPiece-1)/ChunkPiece)*ChunkTime
}

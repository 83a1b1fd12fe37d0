package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// Propose replicates c as one log entry and returns the client's answer,
// rendered with o by the leader from what its FSM answered. On a follower
// the entry is forwarded to the leader over the cluster port and the
// leader's answer is returned byte for byte. A parsed command (c.Parsed)
// enters the log with its body in binary form once every member applies
// that format, else as JSON text. The FSM's own errors (bad data, too
// large) are returned untouched; a failed if-match is a
// *fsm.PreconditionError with the 412 rendered. A kind some member cannot
// apply yet is refused with fsm.ErrNotReady (CanPropose). Raft trouble is
// mapped to fsm.ErrNoLeader (no leader within the write timeout, or
// leadership lost mid-commit), fsm.ErrTimeout (not committed in time) or
// fsm.ErrShuttingDown; when the write may have been applied (leadership
// lost mid-commit, not committed in time, the leader's connection lost
// after the write was sent), fsm.ErrOutcomeUnknown is wrapped as well.
func (n *Node) Propose(ctx context.Context, c fsm.Command, o fsm.AnswerOptions) (fsm.Answer, error) {
	if n.closing.Load() {
		return fsm.Answer{}, shuttingDown("propose")
	}
	// Checked here too, not only by the leader: an older leader could not
	// even decode a newer kind, and would answer with an internal error
	// instead of "not ready".
	if err := n.CanPropose(c.Kind); err != nil {
		return fsm.Answer{}, err
	}
	// The members' formats are looked up once: each lookup asks Raft for
	// its configuration, which is not free on a hot path, and a judged
	// write needs them twice.
	format, err := n.clusterFormat()
	if c.As != nil && (err != nil || !n.allows(fsm.CmdAs, format)) {
		// A judged write is a CmdAs entry, which older releases cannot
		// apply: refused, with the reason, until every member can.
		if err := n.CanPropose(fsm.CmdAs); err != nil {
			return fsm.Answer{}, err
		}
	}
	if err != nil {
		format = baseEntryFormat // the leader decides again; what every release applies is safe
	}
	if c.Prejudged && !n.allows(fsm.CmdAsPrejudged, format) {
		c.Prejudged = false // a plain CmdAs: every replica judges it
	}
	var data []byte
	if c.Parsed && n.allows(c.Kind.ParsedKind(), format) {
		data = c.EncodeParsed()
		if len(data) > fsm.ChunkBytes && n.allows(fsm.CmdChunk, format) {
			// Chunked: a value whose timestamps are resolved already can
			// be built as its chunks come (fsm/chunkprep.go).
			if resolved, ok := c.WithTimestampsResolved(); ok {
				data = resolved.EncodeParsed()
			}
		}
	} else {
		data = c.Encode()
	}
	if limit := n.writeLimit(format); len(data) > limit {
		return fsm.Answer{}, errEntryTooBig(len(data), limit) // refused here, not after a trip to the leader
	}
	ctx, cancel := context.WithTimeout(ctx, fsm.WriteBudget(n.cfg.WriteTimeout, len(data)))
	defer cancel()
	for {
		t, err := n.route(ctx, "propose")
		if err != nil {
			return fsm.Answer{}, err
		}
		ch := n.changes.wait()
		var a fsm.Answer
		start := time.Now()
		if t.local {
			var res fsm.Result
			res, err = n.applyLocal(ctx, data, format)
			a, err = fsm.AnswerFor(c.Kind, res, err, o)
			observeStage(proposeLocalSeconds, start)
		} else {
			a, err = n.forwardPropose(ctx, t, c.Kind, o, data)
			observeStage(forwardSeconds, start)
		}
		if !errors.Is(err, errRetry) {
			return a, err
		}
		// Certainly not applied (leadership just moved, or the leader
		// could not be reached): wait for the change to be visible, then
		// route again.
		if err := awaitChange(ctx, ch); err != nil {
			return fsm.Answer{}, deadlineError("propose", "leadership changing", fsm.ErrNoLeader, err)
		}
	}
}

// MaxEntryBytes caps a write that must travel as one log entry: while a
// member of a release before chunked commands (entry format 3) is in the
// cluster. hashicorp/raft replicates an entry in one AppendEntries RPC,
// stores it with one fsync and applies it in one step, so an entry of tens
// of megabytes stalls every other write and can cost the leader its
// lease: measured on two cores (three nodes, mutual TLS), 40 MB stalled
// others 3 s, and 100 MB forced an election and timed out after it was
// applied. A larger write is refused with 413 before anything is logged.
const MaxEntryBytes = 17 << 20

// MaxCommandBytes caps a chunked write (every member applies format 3).
// Chunks keep each entry small, but the whole command is still buffered,
// assembled and applied on every node, so its size costs memory and CPU
// everywhere at once: measured on two cores (three nodes), 16 MiB and
// 40 MiB writes commit with other clients' p99 at 50–125 ms and no
// election, while 64 MB and 100 MB writes cost an election. Larger writes
// are refused with 413 (docs/RELIABILITY.md).
const MaxCommandBytes = 42 << 20

// chunkWindow is how many chunks of one command may be waiting for their
// commit at once. One: a write that comes while a large one replicates
// is appended right after the chunk in flight, so it waits for one chunk
// to be stored, replicated and applied, not several. With four, a
// million-key PATCH held other writes up to 0.3–0.6 s at a time, one
// stall after another, on three nodes sharing two cores; with one, its
// canary p99 was 94 ms, and the PATCH itself was acknowledged sooner
// (1.2 s instead of 2.3 s: less contention; docs/RELIABILITY.md).
const chunkWindow = 1

// errEntryTooBig is the 413 of a write over size bytes.
func errEntryTooBig(size, limit int) error {
	return fmt.Errorf("propose: command of %d bytes exceeds the %d-byte limit of one replicated write: %w",
		size, limit, tree.Public(tree.ErrTooLarge, tree.MsgWriteTooBig))
}

// writeLimit is the largest command a cluster whose members all apply
// entry format format may take.
func (n *Node) writeLimit(format int) int {
	if n.allows(fsm.CmdChunk, format) {
		return MaxCommandBytes
	}
	return MaxEntryBytes
}

// applyLocal appends data to the log on this node, the leader, and waits
// for it to be committed and applied; format is clusterFormat's answer.
func (n *Node) applyLocal(ctx context.Context, data []byte, format int) (fsm.Result, error) {
	if limit := n.writeLimit(format); len(data) > limit {
		return fsm.Result{}, errEntryTooBig(len(data), limit)
	}
	if len(data) > fsm.ChunkBytes && n.allows(fsm.CmdChunk, format) {
		return n.applyChunked(ctx, data, n.allows(fsm.CmdChunkStrict, format))
	}
	return n.applyEntry(ctx, data)
}

// applyChunked replicates a large command as chunk entries (fsm/chunk.go),
// at most chunkWindow of them awaiting their commit at a time, and returns
// what the state machine answered when the last one was applied. Until the
// last chunk is appended the command is certainly not applied: a failure
// before it is a retry (errRetry) or a timeout with nothing written. Once
// every member applies them, the entries are fsm.CmdChunkStrict: a PATCH
// whose node other writes changed meanwhile beyond what its prepared value
// can follow is refused rather than applied in one long step.
func (n *Node) applyChunked(ctx context.Context, data []byte, strict bool) (fsm.Result, error) {
	select { // the state machine assembles one chunked command at a time
	case n.chunking <- struct{}{}:
	case <-ctx.Done():
		return fsm.Result{}, deadlineError("propose", "another large write still replicating", fsm.ErrTimeout, ctx.Err())
	}
	defer func() { <-n.chunking }()
	var op fsm.ChunkID
	if _, err := rand.Read(op[:]); err != nil {
		return fsm.Result{}, fmt.Errorf("propose: chunk id: %w", err)
	}
	total := (len(data) + fsm.ChunkPiece - 1) / fsm.ChunkPiece
	encode := fsm.EncodeChunk
	if strict {
		encode = fsm.EncodeStrictChunk
	}
	piece := func(i int) []byte {
		return encode(op, i, total, data[i*fsm.ChunkPiece:min((i+1)*fsm.ChunkPiece, len(data))])
	}
	var inflight []raft.ApplyFuture
	wait := func(f raft.ApplyFuture) error {
		if err := waitFuture(ctx, f); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
				return deadlineError("propose", "large write not replicated in time; nothing was applied", fsm.ErrTimeout, ctxErr)
			}
			return raftError("propose", err, true) // not applied: safe to route again
		}
		if r, ok := f.Response().(*fsm.ApplyResponse); ok && r.Err != nil {
			return fmt.Errorf("propose: chunk refused: %w", r.Err)
		}
		return nil
	}
	for i := range total - 1 {
		if len(inflight) == chunkWindow {
			if err := wait(inflight[0]); err != nil {
				return fsm.Result{}, err
			}
			inflight = inflight[1:]
		}
		enqueue := n.cfg.WriteTimeout
		if dl, ok := ctx.Deadline(); ok {
			enqueue = time.Until(dl)
		}
		inflight = append(inflight, n.raft.Apply(piece(i), enqueue))
	}
	for _, f := range inflight {
		if err := wait(f); err != nil {
			return fsm.Result{}, err
		}
	}
	return n.applyEntry(ctx, piece(total-1))
}

// applyEntry appends one entry to the log on this node, the leader, and
// waits for it to be committed and applied.
func (n *Node) applyEntry(ctx context.Context, data []byte) (fsm.Result, error) {
	enqueue := n.cfg.WriteTimeout
	if dl, ok := ctx.Deadline(); ok {
		enqueue = time.Until(dl)
	}
	if enqueue <= 0 {
		return fsm.Result{}, deadlineError("propose", "no time left to enqueue", fsm.ErrTimeout, ctx.Err())
	}
	f := n.raft.Apply(data, enqueue)
	if err := waitFuture(ctx, f); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return fsm.Result{}, outcomeUnknown("propose", "entry not committed in time", fsm.ErrTimeout, ctxErr)
		}
		mapped := raftError("propose", err, false)
		if !errors.Is(mapped, errRetry) && !errors.Is(mapped, fsm.ErrShuttingDown) {
			n.log.Warn("raft apply failed", "error", err)
		}
		return fsm.Result{}, mapped
	}
	resp, ok := f.Response().(*fsm.ApplyResponse)
	if !ok || resp == nil {
		return fsm.Result{}, fmt.Errorf("propose: unexpected FSM response %T", f.Response())
	}
	res, err := resp.Result, resp.Err
	// Raft's log cache keeps the last entries and, through them, their
	// futures with this response: a PATCH echo of thousands of fields
	// would stay live long after its request (docs/PERFORMANCE.md).
	*resp = fsm.ApplyResponse{}
	return res, err
}

// waitFuture waits for f bounded by ctx. raft futures cannot be selected
// on, so a goroutine waits; it always ends because Raft answers every
// future (at the latest with ErrRaftShutdown).
func waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // finished at the same moment: prefer the answer
			return err
		default:
			return ctx.Err()
		}
	}
}

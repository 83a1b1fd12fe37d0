package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
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
// leadership lost mid-commit: outcome unknown), fsm.ErrTimeout (not
// committed in time: outcome unknown) or fsm.ErrShuttingDown.
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
	ctx, cancel := n.bound(ctx)
	defer cancel()
	var data []byte
	if c.Parsed && n.CanPropose(c.Kind.ParsedKind()) == nil {
		data = c.EncodeParsed()
	} else {
		data = c.Encode()
	}
	if len(data) > MaxEntryBytes {
		return fsm.Answer{}, errEntryTooBig(len(data)) // refused here, not after a trip to the leader
	}
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
			res, err = n.applyLocal(ctx, data)
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

// MaxEntryBytes caps one log entry. hashicorp/raft replicates an entry
// in one AppendEntries RPC and applies it in one step, so an entry of
// tens of megabytes stalls every other write and can cost the leader its
// lease: measured on two cores (three nodes, mutual TLS), a 16 MiB write
// commits in 0.3–0.8 s with other clients' p99 at 60 ms and no election;
// 40 MB stalls them 3 s, and 100 MB forces an election and times out
// after it was applied. A write whose entry would be larger is refused
// with 413 before anything is logged (docs/RELIABILITY.md).
const MaxEntryBytes = 17 << 20

// errEntryTooBig is the 413 of a write whose entry exceeds MaxEntryBytes.
func errEntryTooBig(size int) error {
	return fmt.Errorf("propose: entry of %d bytes exceeds the %d-byte limit of one replicated write: %w",
		size, MaxEntryBytes, fsm.Public(fsm.ErrTooLarge, fsm.MsgWriteTooBig))
}

// applyLocal appends data to the log on this node, the leader, and waits
// for it to be committed and applied.
func (n *Node) applyLocal(ctx context.Context, data []byte) (fsm.Result, error) {
	if len(data) > MaxEntryBytes {
		return fsm.Result{}, errEntryTooBig(len(data))
	}
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
			return fsm.Result{}, deadlineError("propose", "entry not committed in time, outcome unknown", fsm.ErrTimeout, ctxErr)
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

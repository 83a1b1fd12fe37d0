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
// leader's answer is returned byte for byte. A write's body (c.Parsed)
// enters the log in binary form. The FSM's own errors (bad data, too
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
	if !c.Parsed && len(c.Body) > 0 && (c.Kind == fsm.CmdSet || c.Kind == fsm.CmdUpdate || c.Kind == fsm.CmdPush) {
		return fsm.Answer{}, fmt.Errorf("propose: %w", errUnparsed)
	}
	if err := checkWrite(&c); err != nil {
		n.tooLarge.Add(1)
		return fsm.Answer{}, err
	}
	data := c.Encode()
	// Checked here too, not only by the leader: an older leader could not
	// even decode a newer kind, and would answer with an internal error
	// instead of "not ready".
	if err := n.canProposeEntry(&c, data); err != nil {
		return fsm.Answer{}, err
	}
	if err := checkWriteBytes(len(data)); err != nil {
		n.tooLarge.Add(1)
		return fsm.Answer{}, err // refused here, not after a trip to the leader
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.WriteTimeout)
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
			res, err = n.applyLocal(ctx, data)
			a, err = answerFor(c.Kind, res, err, o)
			observeStage(proposeLocalSeconds, start)
		} else {
			a, err = n.forwardPropose(ctx, t, o, data)
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

// errUnparsed is a write proposed with its body not parsed: its entry
// carries Value or Fields, never the JSON text, so it would write
// nothing of the body. A caller's bug, answered 500.
var errUnparsed = errors.New("a write's body must be parsed before it is proposed")

// canProposeEntry is CanPropose for each kind the entry data of c holds:
// the wrapper's (CmdAs…) and the command's own.
func (n *Node) canProposeEntry(c *fsm.Command, data []byte) error {
	if err := n.CanPropose(c.Kind); err != nil {
		return err
	}
	if outer, err := fsm.EntryKind(data); err == nil && outer != c.Kind {
		return n.CanPropose(outer)
	}
	return nil
}

// applyLocal appends data to the log on this node, the leader, and waits
// for it to be committed and applied.
func (n *Node) applyLocal(ctx context.Context, data []byte) (fsm.Result, error) {
	if err := checkWriteBytes(len(data)); err != nil {
		return fsm.Result{}, err
	}
	return n.applyEntry(ctx, data)
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

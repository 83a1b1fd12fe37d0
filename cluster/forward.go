package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// target is where a request goes: this node (the leader) or the leader at
// addr.
type target struct {
	local bool
	id    raft.ServerID
	addr  raft.ServerAddress
}

// route is the one place that decides leader-or-forward: it waits (bounded
// by ctx) until a leader is known and says whether it is this node.
func (n *Node) route(ctx context.Context, op string) (target, error) {
	for {
		ch := n.changes.wait()
		if n.closing.Load() || n.raft.State() == raft.Shutdown {
			return target{}, shuttingDown(op)
		}
		addr, id := n.raft.LeaderWithID()
		switch {
		case id == n.id && n.raft.State() == raft.Leader:
			return target{local: true, id: id, addr: addr}, nil
		case id != "" && id != n.id:
			return target{id: id, addr: addr}, nil
		}
		// No leader, or a stale belief that we lead: wait for news.
		if err := awaitChange(ctx, ch); err != nil {
			return target{}, deadlineError(op, "no leader elected in time", fsm.ErrNoLeader, err)
		}
	}
}

// forwardPropose sends an encoded command to the leader and returns the
// answer it rendered, or an error that matches the same fsm sentinel the
// leader's did (a failed if-match with the leader's rendered 412). errRetry
// means the leader certainly did not apply it (it no longer leads, or
// could not be reached): route again.
func (n *Node) forwardPropose(ctx context.Context, t target, o fsm.AnswerOptions, data []byte) (fsm.Answer, error) {
	payload := make([]byte, 0, 1+len(data))
	payload = append(append(payload, encodeAnswerOptions(o)), data...)
	reply, err := n.roundTrip(ctx, t, opPropose, payload)
	if err != nil {
		return fsm.Answer{}, err
	}
	r, err := decodeReply(reply)
	if err != nil {
		return fsm.Answer{}, forwardError(t, err)
	}
	return decodeAnswer(r)
}

// roundTrip sends one forwarded write and classifies transport failures:
// errRetry when it certainly did not leave, outcome unknown otherwise.
func (n *Node) roundTrip(ctx context.Context, t target, op rpcOp, payload []byte) ([]byte, error) {
	const what = "propose"
	n.forwarded.Add(1)
	reply, err := n.net.RoundTrip(ctx, t.addr, op, payload)
	if err == nil {
		return reply, nil
	}
	if errors.Is(err, errNotSent) {
		n.log.Debug("leader unreachable; will route again", "leader", string(t.id), "error", err)
		return nil, errRetry
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, outcomeUnknown(what, fmt.Sprintf("no answer from leader %s in time", t.id), fsm.ErrTimeout, ctxErr)
	}
	// Sent, then the connection broke: the leader may have applied it.
	return nil, fmt.Errorf("%s: connection to leader %s lost: %w (%w); %w", what, t.id, fsm.ErrNoLeader, err, fsm.ErrOutcomeUnknown)
}

// forwardError names the leader in an error it sent, keeping retry and
// decoding failures recognisable.
func forwardError(t target, err error) error {
	if errors.Is(err, errRetry) || errors.Is(err, errMalformed) {
		return err
	}
	return fmt.Errorf("leader %s: %w", t.id, err)
}

// remoteReadIndex asks the leader for a confirmed commit index, sharing
// one request with every read that arrives while the previous one runs.
func (n *Node) remoteReadIndex(ctx context.Context) (uint64, error) {
	idx, err := n.remoteReads.join(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return 0, deadlineError("linearizable read", "leader did not confirm a read index in time", fsm.ErrTimeout, ctx.Err())
	}
	return idx, err
}

// remoteReadIndexRound is one read-index request to the current leader.
// Reads are idempotent, so any transport failure means "route again".
func (n *Node) remoteReadIndexRound() (uint64, error) {
	ctx, cancel := n.bound(context.Background())
	defer cancel()
	t, err := n.route(ctx, "linearizable read")
	if err != nil {
		return 0, err
	}
	if t.local {
		return 0, errRetry // leadership came here meanwhile
	}
	reply, err := n.net.RoundTrip(ctx, t.addr, opReadIndex, nil)
	if err != nil {
		n.log.Debug("read index from leader failed; will route again", "leader", string(t.id), "error", err)
		return 0, fmt.Errorf("leader %s: %w (%w)", t.id, errRetry, err)
	}
	r, err := decodeReply(reply)
	if err != nil {
		return 0, err
	}
	idx := r.uvarint()
	return idx, r.done()
}

// handleRPC is the leader's side of forwarding. It acts only as the
// leader: anything else answers replyRetry so the sender routes again
// rather than bouncing the request between followers. The one exception
// is opApplied, the leader's question to its members, which any node
// answers.
func (n *Node) handleRPC(ctx context.Context, op rpcOp, payload []byte) []byte {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.WriteTimeout)
	defer cancel()
	switch op {
	case opPropose:
		if len(payload) == 0 {
			return encodeError(fmt.Errorf("forwarded write: empty: %w", tree.ErrInvalidData))
		}
		o, err := decodeAnswerOptions(payload[0])
		if err != nil {
			return encodeError(err)
		}
		data := payload[1:]
		kind, err := fsm.EntryKind(data)
		if err != nil {
			return encodeError(fmt.Errorf("forwarded command: %w", err))
		}
		res, err := n.leaderApply(ctx, kind, data)
		a, err := answerFor(fsm.AnswerKind(data), res, err, o)
		if err != nil {
			return encodeError(err)
		}
		return encodeAnswer(a)
	case opReadIndex:
		if err := n.leading(); err != nil {
			return encodeError(err)
		}
		idx, err := n.leaderReadIndex(ctx)
		if err != nil {
			return encodeError(err)
		}
		return encodeIndex(idx)
	case opCommitNudge:
		if err := n.leaderNudge(ctx); err != nil {
			return encodeError(err)
		}
		return []byte{replyOK}
	case opRemoveServer:
		if err := n.leading(); err != nil {
			return encodeError(err)
		}
		if err := n.leaderRemove(ctx, raft.ServerID(payload)); err != nil {
			return encodeError(err)
		}
		return []byte{replyOK}
	case opProgress:
		return n.handleProgress(ctx)
	case opApplied:
		return encodeIndex(n.raft.AppliedIndex())
	default:
		return unknownOp(op)
	}
}

// unknownOp is the answer to an RPC this build does not know.
func unknownOp(op rpcOp) []byte {
	return encodeError(tree.Public(tree.ErrBadRequest, fmt.Sprintf("%s %d (a newer member?)", msgUnknownOp, op)))
}

// leading returns errRetry unless this node leads and is not stopping.
func (n *Node) leading() error {
	if n.closing.Load() {
		return fmt.Errorf("node stopping: %w", errRetry)
	}
	if n.raft.State() != raft.Leader {
		return fmt.Errorf("not the leader: %w", errRetry)
	}
	return nil
}

// leaderApply applies a forwarded entry of kind if this node leads and
// every member can apply it: the leader writes the log, so its view of
// the members' formats is the one that counts.
func (n *Node) leaderApply(ctx context.Context, kind fsm.CommandKind, data []byte) (fsm.Result, error) {
	if err := n.leading(); err != nil {
		return fsm.Result{}, err
	}
	if err := n.CanPropose(kind); err != nil {
		return fsm.Result{}, err
	}
	return n.applyLocal(ctx, data)
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// Read returns the value at r.Path. A local read serves this node's applied
// state at once. A linearizable read uses a read barrier in the ReadIndex
// style (no log write per read): the leader takes its commit index,
// confirms with a quorum that it still leads, and the state is read once
// everything up to that index is applied. It reflects every write
// acknowledged before Read was called.
func (n *Node) Read(ctx context.Context, r fsm.Read) (fsm.ReadResult, error) {
	if n.closing.Load() {
		return fsm.ReadResult{}, shuttingDown("read")
	}
	if !r.Linearizable {
		return n.fsm.ReadLocal(r.Path), nil
	}
	ctx, cancel := n.bound(ctx)
	defer cancel()
	idx, err := n.readIndex(ctx)
	if err != nil {
		return fsm.ReadResult{}, err
	}
	if err := n.waitApplied(ctx, idx); err != nil {
		return fsm.ReadResult{}, err
	}
	return n.fsm.ReadLocal(r.Path), nil
}

// readIndex returns a commit index that covers every write acknowledged
// before the call, confirmed by a quorum of the current term.
func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	const op = "linearizable read"
	for {
		ch := n.changes.wait()
		t, err := n.route(ctx, op)
		if err != nil {
			return 0, err
		}
		var idx uint64
		if t.local {
			idx, err = n.leaderReadIndex(ctx)
		} else {
			idx, err = n.remoteReadIndex(ctx)
		}
		if !errors.Is(err, errRetry) {
			return idx, err
		}
		if err := awaitChange(ctx, ch); err != nil {
			return 0, deadlineError(op, "leadership changing", fsm.ErrNoLeader, err)
		}
	}
}

// leaderReadIndex is the leader's half of the barrier. The term is read
// first and checked again after the quorum round: a node leads at most
// once per term, so an unchanged term means it led throughout and its
// commit index was current.
func (n *Node) leaderReadIndex(ctx context.Context) (uint64, error) {
	const op = "linearizable read"
	term := n.raft.CurrentTerm()
	// A new leader's commit index may lag what its predecessors committed
	// until an entry of its own term commits; the term barrier waits for
	// that once per term.
	g := n.termBarrier(term)
	select {
	case <-g.done:
	case <-ctx.Done():
		return 0, deadlineError(op, "new leader has not committed an entry of its term", fsm.ErrTimeout, ctx.Err())
	}
	if g.err != nil {
		return 0, raftError(op, g.err, true)
	}
	idx, err := n.lastCommandAt(n.raft.CommitIndex())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	if err := n.verifyLeader(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return 0, deadlineError(op, "leadership not confirmed by a quorum in time", fsm.ErrTimeout, ctxErr)
		}
		return 0, raftError(op, err, true)
	}
	if n.raft.CurrentTerm() != term {
		return 0, errRetry
	}
	return idx, nil
}

// maxCommandWalk bounds lastCommandAt's walk over the log. Non-command
// entries come one or a few at a time; past the bound the index itself is
// used, which is always correct, only possibly slower to reach.
const maxCommandWalk = 1024

// lastCommandAt returns the index of the last command entry at or below
// committed, which must be a committed index of this node's log: that is
// all a read must reflect. Reads ignore Raft's own entries (the no-op of a
// new term, barriers, configuration changes) because the FSM never sees
// them — and because a follower learns of the barrier a commit nudge
// appended only with the next AppendEntries, a read index pointing at one
// would make every read after a write nudge again. A log without commands
// gives 1, its first entry (every member applies it first; 0 would mean
// "no commit index known" to readiness). An entry compacted into a
// snapshot stops the walk at its index: every node holds it or will.
func (n *Node) lastCommandAt(committed uint64) (uint64, error) {
	if committed == 0 {
		return 0, nil
	}
	var l raft.Log
	i := committed
	for ; i > 0 && committed-i < maxCommandWalk; i-- {
		err := n.logs.GetLog(i, &l)
		if errors.Is(err, raft.ErrLogNotFound) {
			return i, nil
		}
		if err != nil {
			if n.closing.Load() {
				return 0, fsm.ErrShuttingDown
			}
			return 0, fmt.Errorf("read log entry %d: %w", i, err)
		}
		if l.Type == raft.LogCommand {
			return i, nil
		}
	}
	if i == 0 {
		return 1, nil
	}
	return committed, nil
}

// termGate holds the log barriers a node issues outside the write path:
// the barrier of the current leadership term, and the commit nudges (see
// nudgeCommit) it sends as a follower and serves as the leader.
type termGate struct {
	mu  sync.Mutex
	cur *gateRound

	// nudgeOnce sets up the two batchers on first use (the Node's
	// constructor knows nothing of them).
	nudgeOnce sync.Once
	// nudgeOut batches a follower's nudge requests to the leader; nudgeIn
	// batches the leader's nudge barriers across requests.
	nudgeOut, nudgeIn roundBatcher
}

// gateRound is one term's barrier; err is valid once done is closed.
type gateRound struct {
	term uint64
	done chan struct{}
	err  error
}

// termBarrier returns the barrier round of term, starting a raft.Barrier
// if none ran in that term yet or the last one failed. The barrier commits
// an entry of this term and returns once the FSM has applied everything
// before it.
func (n *Node) termBarrier(term uint64) *gateRound {
	g := &n.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.cur; r != nil && r.term == term {
		select {
		case <-r.done:
			if r.err == nil {
				return r
			}
		default:
			return r
		}
	}
	r := &gateRound{term: term, done: make(chan struct{})}
	g.cur = r
	go func() {
		start := time.Now()
		r.err = n.raft.Barrier(n.cfg.WriteTimeout).Error()
		if r.err != nil {
			n.log.Debug("leadership barrier failed", "term", term, "error", r.err)
		} else {
			n.log.Debug("leadership barrier applied", "term", term, "took", time.Since(start))
		}
		close(r.done)
	}()
	return r
}

// roundBatcher shares rounds of one expensive check between concurrent
// callers: quorum rounds (VerifyLeader) on the leader, read-index requests
// to the leader on a follower. A caller joins the next round, which starts
// only after the running one finishes, so every caller is covered by a
// round that began after it arrived (after a read took its commit index),
// and one round serves every caller that arrived while the previous round
// ran.
type roundBatcher struct {
	// run performs one round; set once before use.
	run func() (uint64, error)

	mu      sync.Mutex
	next    *batchRound
	running bool
	rounds  atomic.Uint64
}

// batchRound is one round; val and err are valid once done is closed.
type batchRound struct {
	done chan struct{}
	val  uint64
	err  error
	// readers counts the callers sharing the round (guarded by the
	// batcher's mu until the round starts).
	readers int
}

// verifyLeader confirms with a quorum that this node still leads.
func (n *Node) verifyLeader(ctx context.Context) error {
	_, err := n.verify.join(ctx)
	return err
}

// join waits for the next round to finish, starting the worker if idle.
func (b *roundBatcher) join(ctx context.Context) (uint64, error) {
	r := b.enter()
	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// enter joins the next round without waiting for it: the round's done
// channel closes when it has run.
func (b *roundBatcher) enter() *batchRound {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == nil {
		b.next = &batchRound{done: make(chan struct{})}
	}
	r := b.next
	r.readers++
	if !b.running {
		b.running = true
		go b.loop()
	}
	return r
}

// loop executes rounds while callers are waiting and ends when none are.
// Each round ends because run is bounded: Raft answers every VerifyLeader
// (at the latest when it steps down or shuts down), and a remote read
// index has its own deadline.
func (b *roundBatcher) loop() {
	for {
		b.mu.Lock()
		r := b.next
		b.next = nil
		if r == nil {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.rounds.Add(1)
		r.val, r.err = b.run()
		close(r.done)
	}
}

// Polling of Raft's applied index by a linearizable read (Raft offers no
// signal for it): the first look comes soon, later ones back off to a
// bound that keeps a read's added latency small.
const (
	appliedPollFirst = 100 * time.Microsecond
	appliedPollMax   = 2 * time.Millisecond
)

// waitApplied waits until the FSM reflects every entry up to index.
func (n *Node) waitApplied(ctx context.Context, index uint64) error {
	const op = "linearizable read"
	// First until Raft has handed every entry up to index to the FSM (or
	// restored a snapshot covering it): only then are the entries up to
	// index known to be the committed ones (see commandTarget). On the
	// leader it is normally already true.
	if n.raft.AppliedIndex() < index {
		if err := n.awaitRaftApplied(ctx, index); err != nil {
			return err
		}
	}
	target, err := n.commandTarget(index)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if target == 0 {
		return nil
	}
	if err := n.fsm.WaitApplied(ctx, target); err != nil {
		return deadlineError(op, fmt.Sprintf("index %d not applied in time", target), fsm.ErrTimeout, err)
	}
	return nil
}

// awaitRaftApplied polls until Raft's applied index reaches index. A
// follower nudges the leader (nudgeCommit) when it may otherwise wait for
// the leader's next AppendEntries to learn that index is committed.
func (n *Node) awaitRaftApplied(ctx context.Context, index uint64) error {
	const op = "linearizable read"
	var (
		nudge     <-chan struct{} // the nudge round this read waits on, if any
		lastNudge time.Time       // when this read last joined a nudge round
		start     = time.Now()
		delay     = appliedPollFirst
	)
	t := time.NewTimer(delay)
	defer t.Stop()
	for n.raft.AppliedIndex() < index {
		if nudge == nil && n.needsNudge(index, start, lastNudge) {
			nudge, lastNudge = n.nudgeCommit(), time.Now()
		}
		select {
		case <-t.C:
			delay = min(2*delay, appliedPollMax)
		case <-nudge:
			// The leader's barrier carried the commit index: look again
			// soon.
			nudge, delay = nil, appliedPollFirst
		case <-ctx.Done():
			return deadlineError(op, fmt.Sprintf("index %d not applied in time", index), fsm.ErrTimeout, ctx.Err())
		}
		if n.closing.Load() {
			return shuttingDown(op)
		}
		t.Reset(delay) // also discards a tick not yet received (Go 1.23 timers)
	}
	return nil
}

// Commit nudges. A follower learns that an entry is committed only from
// the leader's next AppendEntries. While writes flow that comes at once;
// after the last write of a burst hashicorp/raft sends it only after
// CommitTimeout (50 ms by default), and heartbeats do not carry the commit
// index. A linearizable read on a follower right after a write (the
// read-your-writes pattern) would wait that long. So a follower that has
// nothing else coming asks the leader to append a barrier entry: its
// AppendEntries carries the commit index, and Raft applies the entries the
// read waits for. The read itself is unchanged — it is still served from
// this node's state once it has applied the read index — so the nudge
// costs a small log entry, never linearizability.
const (
	// nudgeAfter is how long a read waits for the commit index to arrive
	// on its own while newer entries are flowing (they carry it) before
	// nudging anyway.
	nudgeAfter = time.Millisecond
	// nudgeAgain is how long after joining a nudge a read still waiting
	// nudges again (a leader change, a lost AppendEntries).
	nudgeAgain = 5 * time.Millisecond
)

// needsNudge reports whether a read waiting for index on this node should
// nudge the leader now. Only followers nudge. Without any entry after
// index in its log nothing else will bring the commit index soon; with
// newer entries arriving it gives them nudgeAfter first.
func (n *Node) needsNudge(index uint64, start, last time.Time) bool {
	if n.raft.State() != raft.Follower {
		return false
	}
	if !last.IsZero() {
		return time.Since(last) >= nudgeAgain
	}
	return n.raft.LastIndex() <= index || time.Since(start) >= nudgeAfter
}

// nudgeCommit joins the next nudge request of this follower to the leader
// (one at a time, shared by every waiting read) and returns a channel
// closed when it is answered.
func (n *Node) nudgeCommit() <-chan struct{} {
	n.initNudges()
	return n.gate.nudgeOut.enter().done
}

// initNudges sets up the nudge batchers on first use.
func (n *Node) initNudges() {
	n.gate.nudgeOnce.Do(func() {
		n.gate.nudgeOut.run = n.nudgeRound
		n.gate.nudgeIn.run = func() (uint64, error) {
			return 0, n.raft.Barrier(n.cfg.WriteTimeout).Error()
		}
	})
}

// nudgeRound sends one nudge to the leader. Failures only cost latency
// (the commit index still arrives with the leader's next AppendEntries),
// so they are logged and not retried; an older leader without the RPC
// answers with an error and nothing changes.
func (n *Node) nudgeRound() (uint64, error) {
	ctx, cancel := n.bound(context.Background())
	defer cancel()
	t, err := n.route(ctx, "commit nudge")
	if err != nil || t.local {
		return 0, err
	}
	reply, err := n.net.RoundTrip(ctx, t.addr, opCommitNudge, nil)
	if err == nil {
		_, err = decodeReply(reply)
	}
	if err != nil {
		n.log.Debug("commit nudge to the leader failed", "leader", string(t.id), "error", err)
	}
	return 0, err
}

// leaderNudge is the leader's side: append a barrier, shared with every
// nudge that arrived before it started, and answer once it is committed —
// by then the AppendEntries that carry it, and the commit index, have gone
// out to the followers and a quorum has answered.
func (n *Node) leaderNudge(ctx context.Context) error {
	if err := n.leading(); err != nil {
		return err
	}
	n.initNudges()
	if _, err := n.gate.nudgeIn.join(ctx); err != nil {
		return raftError("commit nudge", err, true)
	}
	return nil
}

// commandTarget returns the index the FSM must reach to reflect every entry
// up to index, or 0 when it already does. Raft hands only command entries
// to the FSM — never its no-op, barrier or (here) configuration entries —
// so the FSM's applied index stops at the last command and index itself
// may never be reached. Walking back over the log from index to the first
// command not yet applied finds the real target; the walk is short because
// non-command entries are rare, and bounded by the FSM's applied index.
// Call it only after Raft's applied index has reached index, so an entry
// missing from the log was compacted into a snapshot the FSM already holds.
func (n *Node) commandTarget(index uint64) (uint64, error) {
	var l raft.Log
	for i := index; i > n.fsm.AppliedIndex(); i-- {
		err := n.logs.GetLog(i, &l)
		if errors.Is(err, raft.ErrLogNotFound) {
			return 0, nil
		}
		if err != nil {
			if n.closing.Load() {
				return 0, fsm.ErrShuttingDown
			}
			return 0, fmt.Errorf("read log entry %d: %w", i, err)
		}
		if l.Type == raft.LogCommand {
			return i, nil
		}
	}
	return 0, nil
}

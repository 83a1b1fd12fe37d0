package cluster

import (
	"context"
	"sync"
	"sync/atomic"
)

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

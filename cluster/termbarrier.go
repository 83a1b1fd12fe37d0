package cluster

import (
	"sync"
	"time"
)

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

package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// changePoll bounds how long a waiter sleeps between looks at the Raft
// state when no observation arrives: observations are sent without
// blocking and may be dropped, so waiters never rely on them alone.
const changePoll = 25 * time.Millisecond

// notifier is a broadcast: wait returns a channel that is closed at the
// next notify.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *notifier) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *notifier) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// awaitChange waits for ch (from changes.wait, taken before looking at the
// state), a poll interval, or the end of ctx.
func awaitChange(ctx context.Context, ch <-chan struct{}) error {
	t := time.NewTimer(changePoll)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch follows Raft's leader and state observations: it logs them, counts
// leader changes, starts the first-entry barrier of a new leadership term
// and wakes everyone waiting for a leader.
func (n *Node) watch() {
	defer n.wg.Done()
	var leader raft.ServerID
	for {
		select {
		case <-n.stop:
			return
		case o := <-n.obsCh:
			switch d := o.Data.(type) {
			case raft.LeaderObservation:
				if d.LeaderID != leader {
					if d.LeaderID != "" {
						n.leaderChanges.Add(1)
					}
					n.log.Info("raft leader changed", "leader", string(d.LeaderID),
						"leader_addr", string(d.LeaderAddr), "previous", string(leader))
					leader = d.LeaderID
				}
				if d.LeaderID == "" {
					// Cut off from a leader: readiness must be earned again.
					n.readyIndex.Store(0)
				}
			case raft.RaftState:
				attrs := []any{"state", d.String()}
				// Raft announces candidacy before it raises the term, so the
				// term read here could be the one the election leaves; Raft's
				// own "entering candidate state" line names the right one.
				if d != raft.Candidate {
					attrs = append(attrs, "term", n.raft.CurrentTerm())
				}
				n.log.Info("raft state changed", attrs...)
				if d == raft.Leader {
					n.termBarrier(n.raft.CurrentTerm())
					go n.fixSelfAddress()
				}
			}
			n.changes.notify()
			n.memberEvents.notify() // a new leader reconciles at once
		}
	}
}

// fixSelfAddress updates this node's address in the Raft configuration
// when it leads and the configuration remembers an older one (a restart on
// a new IP or port, SPEC §10). Peers dial the address in the configuration.
func (n *Node) fixSelfAddress() {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID != n.id || s.Address == n.addr || s.Suffrage != raft.Voter {
			continue
		}
		if err := n.raft.AddVoter(n.id, n.addr, 0, n.cfg.WriteTimeout).Error(); err != nil {
			n.log.Warn("cannot update this node's raft address", "old", string(s.Address), "new", string(n.addr), "error", err)
			continue
		}
		n.log.Info("raft address of this node updated", "old", string(s.Address), "new", string(n.addr))
	}
}

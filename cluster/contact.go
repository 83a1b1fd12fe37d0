package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A follower's Raft last contact is when it last heard from the leader,
// which proves one direction only. Where the node's own packets to the
// leader are lost (a one-way cut), the leader stops hearing its answers
// and the cluster may declare it gone (and run its onDisconnect
// operations) while it still hears heartbeats and serves its clients. So
// a follower also asks the leader for a round trip every contactEvery:
// while a request to the current leader is unanswered, LeaderContact is
// no later than when the first such request left.

// contactEvery is the pause between a follower's round trips to the
// leader: a few a second, well inside the realtime fence's 2 s.
const contactEvery = 250 * time.Millisecond

// contactTimeout bounds one round trip.
const contactTimeout = time.Second

// roundTrips records a follower's unanswered requests to its leader.
type roundTrips struct {
	mu     sync.Mutex
	leader raft.ServerID // whom the requests went to
	since  time.Time     // when the first unanswered one left; zero when all were answered
}

// sent records a request to leader at now; a new leader starts afresh.
func (r *roundTrips) sent(leader raft.ServerID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leader != leader {
		r.leader, r.since = leader, time.Time{}
	}
	if r.since.IsZero() {
		r.since = now
	}
}

// answered records that leader answered the last request.
func (r *roundTrips) answered(leader raft.ServerID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leader == leader {
		r.since = time.Time{}
	}
}

// unansweredSince is when the first request to leader that is still
// unanswered left; zero when there is none.
func (r *roundTrips) unansweredSince(leader raft.ServerID) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leader != leader {
		return time.Time{}
	}
	return r.since
}

// contactLoop runs on every node; while it follows a known leader it asks
// it for a round trip (opApplied, which every member answers, an older
// one with an error that proves contact as well).
func (n *Node) contactLoop() {
	defer n.wg.Done()
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-n.stop
		cancel() // a round trip in flight must not hold up Shutdown
	}()
	tick := time.NewTicker(contactEvery)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		if n.closing.Load() || n.raft.State() == raft.Leader {
			continue
		}
		addr, id := n.raft.LeaderWithID()
		if addr == "" {
			continue
		}
		n.roundTrips.sent(id, time.Now())
		ctx, done := context.WithTimeout(base, contactTimeout)
		_, err := n.net.RoundTrip(ctx, addr, opApplied, nil)
		done()
		if err == nil {
			n.roundTrips.answered(id)
		}
	}
}

package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
)

// A follower's Raft last contact is when it last heard from the leader,
// which proves one direction only. Where the node's own packets to the
// leader are lost (a one-way cut), the leader stops hearing its answers
// and the cluster may declare it gone (and run its onDisconnect
// operations) while it still hears heartbeats and serves its clients. So
// a follower also asks the leader for a round trip every contactEvery,
// and LeaderContact takes the older of the two.

// contactEvery is the pause between a follower's round trips to the
// leader: a few a second, well inside the realtime fence's 2 s.
const contactEvery = 250 * time.Millisecond

// contactTimeout bounds one round trip.
const contactTimeout = time.Second

// contactLoop runs on every node; while it follows a known leader it asks
// it for a round trip (opApplied, which every member answers, an older
// one with an error that proves contact as well) and records when the
// request that was answered left.
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
		addr, _ := n.raft.LeaderWithID()
		if addr == "" {
			continue
		}
		sent := time.Now()
		ctx, done := context.WithTimeout(base, contactTimeout)
		_, err := n.net.RoundTrip(ctx, addr, opApplied, nil)
		done()
		if err == nil {
			n.lastRoundTrip.Store(sent.UnixNano())
		}
	}
}

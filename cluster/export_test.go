package cluster

import (
	"slices"
	"time"
)

// FastTiming returns timers for this package's in-process tests: failover
// in well under a second and frequent snapshot checks. The arbor binary
// always runs DefaultTiming (with its operator settings). Not faster: Raft heartbeats
// every HeartbeatTimeout/10, and three race-instrumented processes sharing
// two busy cores miss 50 ms leases often enough to flap.
func FastTiming() Timing {
	return Timing{
		HeartbeatTimeout:   250 * time.Millisecond,
		ElectionTimeout:    250 * time.Millisecond,
		LeaderLeaseTimeout: 200 * time.Millisecond,
		CommitTimeout:      5 * time.Millisecond,
		SnapshotInterval:   100 * time.Millisecond,
		ReconcileInterval:  100 * time.Millisecond,
		JoinRetry:          100 * time.Millisecond,
		// Loopback gossip: failures are detected within about a second.
		GossipProbeInterval: 200 * time.Millisecond,
		GossipProbeTimeout:  100 * time.Millisecond,
		GossipInterval:      50 * time.Millisecond,
		GossipReclaim:       time.Second,
		Stabilization:       time.Second,
	}
}

// keys returns a copy of the ring, the primary first.
func (k *gossipKeyring) keys() [][]byte {
	return slices.Clone(k.ring.GetKeys())
}

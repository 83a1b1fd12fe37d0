package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// cutRequests drops the RPCs from one address to another, one way, and
// leaves Raft's own traffic alone: the follower still hears the leader's
// heartbeats, but its requests to the leader are lost.
func (m *memNetwork) cutRequests(from, to raft.ServerAddress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cut[[2]raft.ServerAddress{from, to}] = true
}

// TestLeaderContactNeedsBothDirections: a follower whose requests to the
// leader are lost is out of touch, though it still hears heartbeats, and
// a follower in touch both ways never looks out of touch.
func TestLeaderContactNeedsBothDirections(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	f := c.follower(leader)
	const fence = 2 * time.Second // the realtime fence's bound
	// From the first heartbeat on, before any round trip, and after.
	waitFor(t, "the leader's first heartbeat", 5*time.Second, func() bool { return time.Since(f.raft.LastContact()) < time.Second })
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if age := time.Since(f.LeaderContact()); age >= fence {
			t.Fatalf("a follower in touch both ways looked out of touch for %v", age)
		}
	}

	c.net.cutRequests(f.addr, leader.addr)
	waitFor(t, "the follower out of touch", 10*time.Second, func() bool { return time.Since(f.LeaderContact()) > fence })
	if age := time.Since(f.raft.LastContact()); age > time.Second {
		t.Fatalf("the leader's heartbeats stopped too (last %v ago): the cut was not one way", age)
	}

	c.net.heal()
	waitFor(t, "the follower back in touch", 10*time.Second, func() bool { return time.Since(f.LeaderContact()) < fence })
}

package cluster

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestWipedMemberDoesNotElectAStaleLeader is issue 13's scenario: n3 is
// down while a write is acknowledged by the other two; then the leader
// dies, the other's disk is wiped and it restarts empty under the same
// id, and n3 comes back without the write. The wiped member must not
// vote n3 in (n3 lacks the write): the cluster waits for the old leader,
// and the write survives.
func TestWipedMemberDoesNotElectAStaleLeader(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	l := c.index(leader)
	stale := c.index(c.follower(leader))
	wiped := 3 - l - stale
	c.crash(stale)
	c.waitLeader(c.nodes[l], c.nodes[wiped])
	propose(t, c.nodes[wiped], set("/acked", `"kept"`))

	c.crash(l)
	c.crash(wiped)
	if err := os.RemoveAll(c.cfgs[wiped].DataDir); err != nil {
		t.Fatal(err)
	}
	c.start(wiped)
	c.start(stale)
	if !c.nodes[wiped].catchingUp.Load() {
		t.Fatal("a member restarted without state is not catching up")
	}
	// Fast timing elects within a few hundred milliseconds; give it ten
	// election timeouts.
	deadline := time.Now().Add(10 * clusterTiming().ElectionTimeout)
	for time.Now().Before(deadline) {
		for _, i := range []int{wiped, stale} {
			if c.nodes[i].raft.State() == raft.Leader {
				t.Fatalf("%s became leader without the old leader: the acknowledged write would be lost", c.cfgs[i].NodeID)
			}
		}
		time.Sleep(5 * time.Millisecond) // poll, bounded by the deadline
	}

	c.start(l)
	c.waitLeader()
	for _, n := range c.live() {
		if got := readJSON(t, n, "/acked", true); got != `"kept"` {
			t.Fatalf("%s reads /acked = %s after the old leader returned", n.id, got)
		}
	}
	waitFor(t, "the wiped member to catch up", 10*time.Second, func() bool { return !c.nodes[wiped].catchingUp.Load() })
	if _, err := os.Stat(c.cfgs[wiped].DataDir + "/" + catchUpFile); !os.IsNotExist(err) {
		t.Fatalf("catch-up mark still there: %v", err)
	}
	if voters(t, c.waitLeader())[c.cfgs[wiped].NodeID] == "" {
		t.Fatal("the wiped member lost its seat")
	}
}

// TestCatchUpMarkSurvivesARestart: a member that crashes half-way through
// catching up comes back still catching up, although its log is no
// longer empty.
func TestCatchUpMarkSurvivesARestart(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	propose(t, leader, set("/x", "1"))
	i := c.index(c.follower(leader))
	c.crash(i)
	if err := os.RemoveAll(c.cfgs[i].DataDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.cfgs[i].DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeDurably(c.cfgs[i].DataDir+"/"+catchUpFile, nil); err != nil {
		t.Fatal(err)
	}
	// Give the restarted node some state but keep the mark: as if it had
	// crashed right after its first entries arrived.
	n := c.start(i)
	waitFor(t, "entries on the wiped member", 10*time.Second, func() bool { return n.hasState() })
	if !n.catchingUp.Load() && fileExists(c.cfgs[i].DataDir+"/"+catchUpFile) {
		t.Fatal("mark on disk but not catching up")
	}
	waitFor(t, "the member to catch up", 10*time.Second, func() bool { return !n.catchingUp.Load() })
	c.crash(i)
	if n = c.start(i); n.catchingUp.Load() {
		t.Fatal("a member that had caught up restarts as catching up")
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestNewcomerIsStagedAsNonVoter: a fourth node joins as a non-voter and
// becomes a voter only once caught up and stable for Stabilization.
func TestNewcomerIsStagedAsNonVoter(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	for i := range 50 {
		propose(t, leader, set("/data/"+string(rune('a'+i%26))+string(rune('a'+i/26)), `"some state"`))
	}
	start := time.Now()
	c.add("n4", 3)
	var sawNonvoter bool
	var promotedAfter time.Duration
	waitFor(t, "n4 to become a voter", 15*time.Second, func() bool {
		cf := c.waitLeader().raft.GetConfiguration()
		if cf.Error() != nil {
			return false
		}
		for _, s := range cf.Configuration().Servers {
			if s.ID != "n4" {
				continue
			}
			if s.Suffrage == raft.Nonvoter {
				sawNonvoter = true
			}
			if s.Suffrage == raft.Voter {
				promotedAfter = time.Since(start)
				return true
			}
		}
		return false
	})
	if !sawNonvoter {
		t.Fatal("n4 was never a non-voter before becoming a voter")
	}
	if min := clusterTiming().Stabilization; promotedAfter < min {
		t.Fatalf("n4 promoted after %s, before the stabilization time %s", promotedAfter, min)
	}
	if got := readJSON(t, c.nodes[3], "/data/aa", false); got != `"some state"` {
		t.Fatalf("n4 promoted without the state: %s", got)
	}
}

// TestGrowToFiveAndShrinkBack is the scaling runbook (docs/OPERATIONS.md):
// two nodes started with the same settings as the first three
// (BootstrapExpect 3 unchanged) join as non-voters and are promoted once
// caught up; then they are stopped and removed one at a time, highest
// first, leaving a healthy three-voter cluster that takes writes.
func TestGrowToFiveAndShrinkBack(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	propose(t, c.waitLeader(), set("/grow", `"before"`))
	c.add("n4", 3)
	c.add("n5", 3)
	waitFor(t, "five voters", 20*time.Second, func() bool { return len(voters(t, c.waitLeader())) == 5 })
	propose(t, c.nodes[4], set("/grow", `"five"`))
	if got := readJSON(t, c.nodes[3], "/grow", true); got != `"five"` {
		t.Fatalf("n4 reads %s", got)
	}

	for _, i := range []int{4, 3} { // n5, then n4
		id := c.cfgs[i].NodeID
		if err := c.nodes[i].Shutdown(context.Background()); err != nil {
			t.Fatalf("stop %s: %v", id, err)
		}
		c.nodes[i] = nil
		leader := c.waitLeader()
		c.gossip.setStatus(raft.ServerID(id), peerLeft)
		if err := leader.RemoveMember(context.Background(), id); err != nil {
			t.Fatalf("remove %s: %v", id, err)
		}
	}
	leader := c.waitLeader()
	if got := ids(voters(t, leader)); len(got) != 3 || got[0] != "n1" || got[2] != "n3" {
		t.Fatalf("voters after shrinking: %v", got)
	}
	propose(t, c.follower(leader), set("/grow", `"three"`))
	for _, n := range c.live() {
		if got := readJSON(t, n, "/grow", true); got != `"three"` {
			t.Fatalf("%s reads %s", n.id, got)
		}
	}
}

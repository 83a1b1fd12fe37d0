package cluster

import (
	"fmt"
	"testing"
	"time"
)

// TestFollowerReadAfterWrite: a linearizable read on a follower right
// after a write does not wait for the leader's commit timeout to learn
// that the write committed — the follower nudges the leader — and read
// indexes skip the barriers those nudges append, so a read after a nudge
// needs no nudge of its own.
func TestFollowerReadAfterWrite(t *testing.T) {
	// Without nudges every read below would wait 3–6 s for the commit
	// index, and the test would time out.
	const commitTimeout = 3 * time.Second
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.Timing.CommitTimeout = commitTimeout
		cfg.WriteTimeout = 10 * time.Second
	})
	leader := c.waitLeader()
	f := c.follower(leader)
	const writes = 10
	var slowest time.Duration
	for i := range writes {
		want := fmt.Sprint(i)
		res := propose(t, f, set("/x", want))
		start := time.Now()
		if got := readJSON(t, f, "/x", true); got != want {
			t.Fatalf("write %d: linearizable read on the follower = %s, want %s", i, got, want)
		}
		slowest = max(slowest, time.Since(start))

		idx, err := leader.lastCommandAt(leader.raft.CommitIndex())
		if err != nil {
			t.Fatal(err)
		}
		if idx != res.Index {
			t.Fatalf("write %d at index %d: the read index is %d (commit index %d)", i, res.Index, idx, leader.raft.CommitIndex())
		}
	}
	if slowest >= commitTimeout/2 {
		t.Errorf("slowest read after a write took %s; the commit timeout is %s", slowest, commitTimeout)
	}
	nudges := f.gate.nudgeOut.rounds.Load()
	if nudges == 0 {
		t.Errorf("the follower never nudged the leader")
	}

	// Reads with no write in between are served without nudging: their
	// read index is the last write, already applied here.
	for range 20 {
		if got := readJSON(t, f, "/x", true); got != fmt.Sprint(writes-1) {
			t.Fatalf("read = %s", got)
		}
	}
	if more := f.gate.nudgeOut.rounds.Load() - nudges; more != 0 {
		t.Errorf("20 reads without writes nudged %d times", more)
	}
	t.Logf("%d writes, %d nudges, slowest read after a write %s", writes, nudges, slowest)
}

// TestReadIndexWithoutCommands: before any write, linearizable reads on a
// follower neither wait for the commit index nor nudge: there is nothing
// they must reflect.
func TestReadIndexWithoutCommands(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	f := c.follower(leader)
	for range 20 {
		if got := readJSON(t, f, "/x", true); got != "null" {
			t.Fatalf("read = %s", got)
		}
	}
	if idx, err := leader.lastCommandAt(leader.raft.CommitIndex()); err != nil || idx != 1 {
		t.Errorf("read index of a log without commands: %d, %v; want 1, its first entry", idx, err)
	}
	if n := f.gate.nudgeOut.rounds.Load(); n != 0 {
		t.Errorf("reads of an empty tree nudged %d times", n)
	}
}

package cluster

import (
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
)

// registerOp is the entry keeping a Set of body at path for h.
func registerOp(h fsm.Holder, path, body string) fsm.Command {
	op := set(path, body)
	op.Now = 0
	return fsm.Command{Kind: fsm.CmdDisconnectRegister, Holder: h, Op: &op}
}

// The leader runs the operations of a node's earlier run and of a node
// nobody knows any more at once, leaves a live run's alone, and runs
// them once gossip declares their node dead.
func TestLeaderRunsOrphanedDisconnects(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	f := c.follower(leader)
	live := fsm.Holder{Node: f.ID(), Run: f.RunID(), Session: "live"}
	propose(t, f, registerOp(live, "/presence/live", `"offline"`))
	propose(t, f, registerOp(fsm.Holder{Node: f.ID(), Run: "an-earlier-run", Session: "old"}, "/presence/old", `"offline"`))
	propose(t, leader, registerOp(fsm.Holder{Node: "ghost", Run: "r", Session: "g"}, "/presence/ghost", `"offline"`))

	waitFor(t, "the orphans' operations", 10*time.Second, func() bool {
		return readJSON(t, leader, "/presence", true) == `{"ghost":"offline","old":"offline"}`
	})
	// Several rounds of the leader's loop later, the live run's are kept.
	time.Sleep(3 * presenceInterval)
	if got := readJSON(t, leader, "/presence", true); got != `{"ghost":"offline","old":"offline"}` {
		t.Fatalf("a live session's operations ran: %s", got)
	}
	if n := leader.fsm.DisconnectsOf(live); n != 1 {
		t.Fatalf("the live session holds %d operations, want 1", n)
	}
	c.crash(c.index(f))
	waitFor(t, "the dead node's operations", 10*time.Second, func() bool {
		return readJSON(t, leader, "/presence/live", true) == `"offline"`
	})
	if runs := leader.fsm.DisconnectRuns(); len(runs) != 0 {
		t.Fatalf("operations left: %v", runs)
	}
}

package cluster

import (
	"context"
	"errors"
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
	// Gossip declaring the node failed while the leader still hears from
	// it (their failure detectors disagree) runs nothing.
	c.gossip.setStatus(f.id, peerDead)
	time.Sleep(orphanQuiet + 2*presenceInterval)
	if got := readJSON(t, leader, "/presence", true); got != `{"ghost":"offline","old":"offline"}` {
		t.Fatalf("the operations of a node the leader still hears from ran: %s", got)
	}
	c.crash(c.index(f))
	waitFor(t, "the dead node's operations", 10*time.Second, func() bool {
		return readJSON(t, leader, "/presence/live", true) == `"offline"`
	})
	if runs := leader.fsm.DisconnectRuns(); len(runs) != 0 {
		t.Fatalf("operations left: %v", runs)
	}
}

// firstReleaseBuild is v0.1.0 as gossip sees it: entry and snapshot
// format 1, none of the onDisconnect commands.
func firstReleaseBuild() buildFormats {
	b := thisBuild()
	b.entry, b.snapshot = 1, 1
	b.kinds = map[fsm.CommandKind]int{}
	for k, f := range thisBuild().kinds {
		if f == 1 {
			b.kinds[k] = f
		}
	}
	return b
}

// While a member runs the first release, the onDisconnect commands are
// refused (503 class, nothing logged): the realtime protocol answers
// onDisconnect requests "unavailable" until the upgrade is done.
func TestDisconnectCommandsWaitForEveryMember(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.waitLeader()
	replace(c, 2, firstReleaseBuild())
	leader := c.waitLeader()
	n := c.nodes[0]
	h := fsm.Holder{Node: n.ID(), Run: n.RunID(), Session: "s"}
	for _, cmd := range []fsm.Command{
		registerOp(h, "/p", `1`),
		{Kind: fsm.CmdDisconnectCancel, Holder: h},
		{Kind: fsm.CmdDisconnectRun, Holder: h},
	} {
		waitFor(t, "gossip to show n3's old build", 5*time.Second, func() bool {
			return errors.Is(n.CanPropose(cmd.Kind), fsm.ErrNotReady)
		})
		before := leader.raft.LastIndex()
		if _, err := n.Propose(context.Background(), cmd, fsm.AnswerOptions{}); !errors.Is(err, fsm.ErrNotReady) {
			t.Fatalf("kind %d with n3 on the first release: %v, want ErrNotReady", cmd.Kind, err)
		}
		if after := leader.raft.LastIndex(); after != before {
			t.Fatalf("a refused entry reached the log (%d → %d)", before, after)
		}
	}
	replace(c, 2, thisBuild())
	c.waitLeader()
	waitFor(t, "the upgraded cluster to allow registrations", 5*time.Second, func() bool {
		return n.CanPropose(fsm.CmdDisconnectRegister) == nil
	})
	propose(t, n, registerOp(h, "/p", `1`))
}

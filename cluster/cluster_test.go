package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

func TestClusterBootstrapExpect(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	got := voters(t, leader)
	if want := []string{"n1", "n2", "n3"}; !slices.Equal(ids(got), want) {
		t.Fatalf("voters = %v, want %v", got, want)
	}
	// Exactly one cluster: every node holds the same configuration.
	for _, n := range c.live() {
		if v := voters(t, n); !slices.Equal(ids(v), ids(got)) {
			t.Errorf("%s has voters %v", n.id, v)
		}
	}
	for _, n := range c.live() {
		waitFor(t, string(n.id)+" to advertise its Raft state", 5*time.Second, func() bool {
			return c.gossip.peer(n.id).Meta.HasState
		})
	}
}

// TestClusterForwarding writes through a follower: the answer is the
// leader's, error identity included, and every node's linearizable read
// sees the write as soon as it is acknowledged.
func TestClusterForwarding(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	f := c.follower(leader)

	res := propose(t, f, set("/x", `{"a":1,"p":{".value":2,".priority":"pr"},"d":5.0}`))
	if res.Index == 0 || res.ETag == "" {
		t.Fatalf("forwarded set: index %d etag %q", res.Index, res.ETag)
	}
	if got := string(res.Body); got != `{"a":1,"d":5.0,"p":2}` {
		t.Errorf("forwarded echo = %s", got)
	}
	for _, n := range c.live() {
		r, err := n.Read(context.Background(), fsm.Read{Path: mustPath("/x"), Linearizable: true})
		if err != nil {
			t.Fatalf("%s linearizable read: %v", n.id, err)
		}
		if r.Value.ETag() != res.ETag {
			t.Errorf("%s read /x etag %s, write said %s", n.id, r.Value.ETag(), res.ETag)
		}
	}

	// PATCH: the fields come back in order, nulls included; slashes in
	// field names cross as they are (they are paths, not keys).
	res = propose(t, f, update("/x", `{"b":{"c":true},"a":null,"q/r":1}`))
	if got := string(res.Body); got != `{"b":{"c":true},"a":null,"q/r":1}` {
		t.Errorf("forwarded update echo = %s", got)
	}
	if got := readJSON(t, leader, "/x/q", true); got != `{"r":1}` {
		t.Errorf("forwarded multi-path update on the leader = %s", got)
	}

	// POST: the push key is the leader's.
	name := pushName(t, propose(t, f, pushed("/list", `"v"`)))
	if got := readJSON(t, leader, "/list/"+name, true); got != `"v"` {
		t.Errorf("pushed child on the leader = %s", got)
	}

	// A failed if-match carries the leader's rendered 412 across.
	bad := set("/x/a", `7`)
	bad.HasIfMatch, bad.IfMatch = true, "wrong"
	_, err := f.Propose(context.Background(), bad, fsm.AnswerOptions{})
	var pe *fsm.PreconditionError
	if !errors.Is(err, fsm.ErrPreconditionFailed) || !errors.As(err, &pe) || string(pe.Body) != "null" || pe.ETag != (*tree.Node)(nil).ETag() {
		t.Fatalf("forwarded if-match on a deleted child: %v (%+v)", err, pe)
	}
	bad = set("/x/d", `7`)
	bad.HasIfMatch, bad.IfMatch = true, "wrong"
	if _, err = f.Propose(context.Background(), bad, fsm.AnswerOptions{Pretty: true}); !errors.As(err, &pe) || string(pe.Body) != "5.0" || pe.ETag != tree.Float(5).ETag() {
		t.Fatalf("forwarded if-match: %v, current %s", err, pe.Body)
	}

	// FSM errors keep their sentinel and their exact message.
	big := set("/big", `"`+strings.Repeat("x", 100)+`"`)
	big.WriteLimit = 10
	_, err = f.Propose(context.Background(), big, fsm.AnswerOptions{})
	var pub *tree.PublicError
	if !errors.Is(err, tree.ErrTooLarge) || !errors.As(err, &pub) || pub.Message != tree.MsgWriteTooBig {
		t.Fatalf("forwarded too-large write: %v", err)
	}
	if f.forwarded.Load() < 5 {
		t.Errorf("follower forwarded %d writes", f.forwarded.Load())
	}
}

// TestClusterReadBarrier: a linearizable read on any node reflects writes
// acknowledged anywhere before it; a deposed leader cut off from the
// others refuses linearizable reads rather than answer stale data.
func TestClusterReadBarrier(t *testing.T) {
	// A short write timeout: the cut-off node's refusals wait it out.
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.WriteTimeout = 700 * time.Millisecond })
	leader := c.waitLeader()
	followers := []*Node{}
	for _, n := range c.live() {
		if n != leader {
			followers = append(followers, n)
		}
	}
	// Writes through one follower, reads through the other, at once.
	for i := range 20 {
		want := fmt.Sprint(i)
		propose(t, followers[i%2], set("/counter", want))
		if got := readJSON(t, followers[(i+1)%2], "/counter", true); got != want {
			t.Fatalf("round %d: linearizable read on the other follower = %s, want %s", i, got, want)
		}
	}

	// Concurrent linearizable reads on a follower share read-index rounds.
	before := followers[0].remoteReads.rounds.Load()
	var wg sync.WaitGroup
	const readers = 32
	for range readers {
		wg.Go(func() {
			if got := readJSON(t, followers[0], "/counter", true); got != "19" {
				t.Errorf("concurrent read = %s", got)
			}
		})
	}
	wg.Wait()
	if rounds := followers[0].remoteReads.rounds.Load() - before; rounds == 0 || rounds > readers {
		t.Errorf("%d reads used %d read-index rounds", readers, rounds)
	}

	// Cut the leader off: the others elect a new one and write; the old
	// leader must not serve that stale value as linearizable.
	c.net.isolate(leader.addr)
	next := c.waitLeader(followers...)
	propose(t, next, set("/counter", `"after"`))
	_, err := leader.Read(context.Background(), fsm.Read{Path: mustPath("/counter"), Linearizable: true})
	if !errors.Is(err, fsm.ErrNoLeader) && !errors.Is(err, fsm.ErrTimeout) {
		t.Fatalf("linearizable read on the cut-off old leader: %v, want no leader or timeout", err)
	}
	if got := readJSON(t, leader, "/counter", false); got != "19" {
		t.Errorf("local read on the cut-off node = %s, want its stale 19", got)
	}
	if err := leader.Ready(context.Background()); !errors.Is(err, fsm.ErrNotReady) {
		t.Errorf("cut-off node ready: %v", err)
	}
	if _, err := leader.Propose(context.Background(), set("/y", "1"), fsm.AnswerOptions{}); !errors.Is(err, fsm.ErrNoLeader) && !errors.Is(err, fsm.ErrTimeout) {
		t.Errorf("write on the cut-off node: %v", err)
	}
	c.net.heal()
	c.waitLeader()
	if got := readJSON(t, leader, "/counter", true); got != `"after"` {
		t.Errorf("healed node reads %s", got)
	}
}

// TestClusterLeaderLoss crashes the leader: the survivors elect another
// and take writes (also through the surviving follower); the crashed node
// restarts with its data and catches up.
func TestClusterLeaderLoss(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	propose(t, c.follower(leader), set("/before", `1`))
	i := c.index(leader)
	start := time.Now()
	c.crash(i)
	next := c.waitLeader()
	for _, n := range c.live() {
		propose(t, n, set("/after/"+string(n.id), `true`))
	}
	t.Logf("leader crash → writes accepted again after %s (fast timing)", time.Since(start).Round(time.Millisecond))

	back := c.start(i)
	c.waitLeader()
	if got := readJSON(t, back, "/after", false); !strings.Contains(got, string(next.id)) {
		t.Errorf("restarted node's local state /after = %s", got)
	}
	if got := readJSON(t, back, "/before", true); got != "1" {
		t.Errorf("restarted node lost /before: %s", got)
	}
}

// TestClusterMembership covers voters joining, failures that keep their
// seat, operator removal and restarts on a new address.
func TestClusterMembership(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()

	// A fourth node (expecting a new 3-node cluster, but one exists) is
	// added as a voter by the leader.
	n4 := c.add("n4", 3)
	waitFor(t, "n4 to become a voter", 10*time.Second, func() bool { return voters(t, leader)["n4"] != "" })
	c.waitLeader()
	propose(t, n4, set("/from4", "4"))

	// A failed node stays a voter.
	c.crash(c.index(n4))
	if st := c.gossip.peer("n4").Status; st != peerDead {
		t.Fatalf("crashed n4 has gossip status %v", st)
	}
	// Several reconciliation rounds later it is still there.
	rounds := leader.reconciles.Load()
	waitFor(t, "five reconciliation rounds", 10*time.Second, func() bool { return leader.reconciles.Load() >= rounds+5 })
	if voters(t, leader)["n4"] == "" {
		t.Fatal("a failed node was removed without reap-after")
	}
	st, err := leader.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var m4 *Member
	for i, m := range st.(*Status).Members {
		if m.ID == "n4" {
			m4 = &st.(*Status).Members[i]
		}
	}
	if m4 == nil || m4.Health != "failed" || m4.Versions == nil || m4.Versions.EntryFormat != fsm.CommandVersion {
		t.Fatalf("status of the failed member: %+v", m4)
	}

	// An alive member cannot be removed; a failed one can, from a follower.
	f := c.follower(leader)
	var pub *tree.PublicError
	if err := f.RemoveMember(context.Background(), string(leader.id)); !errors.Is(err, tree.ErrBadRequest) || !errors.As(err, &pub) || !strings.Contains(pub.Message, "alive") {
		t.Fatalf("removing an alive member: %v", err)
	}
	if err := f.RemoveMember(context.Background(), "nobody"); !errors.Is(err, tree.ErrBadRequest) {
		t.Fatalf("removing an unknown member: %v", err)
	}
	if err := f.RemoveMember(context.Background(), "n4"); err != nil {
		t.Fatalf("removing the failed member: %v", err)
	}
	if got := ids(voters(t, leader)); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Fatalf("voters after removal = %v", got)
	}

	// A follower restarted on a new address is updated by the leader.
	f = c.follower(leader)
	i := c.index(f)
	c.crash(i)
	c.startAt(i, "moved-addr")
	waitFor(t, "the leader to learn the new address", 10*time.Second, func() bool {
		l := c.waitLeader()
		return voters(t, l)[string(f.id)] == "moved-addr"
	})
	propose(t, c.nodes[i], set("/moved", "true"))
}

// TestClusterReapAfter: with reap-after, a node gone that long is removed.
func TestClusterReapAfter(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.ReapAfter = 300 * time.Millisecond })
	leader := c.waitLeader()
	f := c.follower(leader)
	c.crash(c.index(f))
	waitFor(t, "the failed node to be reaped", 10*time.Second, func() bool { return voters(t, leader)[string(f.id)] == "" })
	if len(voters(t, leader)) != 2 {
		t.Fatalf("voters = %v", voters(t, leader))
	}
}

// TestClusterSnapshotInstall: a follower cut off while the others write
// far past the leader's retained log is caught up by a snapshot.
func TestClusterSnapshotInstall(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotThreshold = 40
		cfg.TrailingLogs = 10
	})
	leader := c.waitLeader()
	lag := c.follower(leader)
	propose(t, leader, set("/s/start", `0`))
	c.net.isolate(lag.addr)
	next := c.waitLeader(slices.DeleteFunc(c.live(), func(n *Node) bool { return n == lag })...)
	const writes = 200
	for i := range writes {
		propose(t, next, set(fmt.Sprintf("/s/%d", i), fmt.Sprint(i)))
	}
	waitFor(t, "the leader to compact its log", 10*time.Second, func() bool {
		first, err := next.logs.FirstIndex()
		return err == nil && first > lag.raft.LastIndex()
	})
	c.net.heal()
	// Ready alone does not say the install is done: the lagging node may
	// hear the leader's first heartbeat before the snapshot arrives.
	waitFor(t, "a snapshot install on the lagging follower", 10*time.Second, func() bool { return lag.rfsm.installs.Load() > 0 })
	c.waitLeader()
	r, err := lag.Read(context.Background(), fsm.Read{Path: mustPath("/s"), Linearizable: true})
	if err != nil || r.Value.Len() != writes+1 {
		t.Fatalf("lagging follower has %d children (err %v), want %d", r.Value.Len(), err, writes+1)
	}
}

// TestClusterGracefulShutdownTransfersLeadership: a leader that stops
// hands over, and the others keep taking writes at once.
func TestClusterGracefulShutdownTransfersLeadership(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	f := c.follower(leader)
	if err := leader.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	c.nodes[c.index(leader)] = nil
	if st := c.gossip.peer(leader.id).Status; st != peerLeft {
		t.Errorf("stopped leader's gossip status = %v, want left", st)
	}
	propose(t, f, set("/after", "1"))
	next := c.waitLeader()
	if voters(t, next)[string(leader.id)] == "" {
		t.Error("a gracefully stopped node left the configuration")
	}
}

// TestClusterNoQuorumFollower: a follower cut off from both others is not
// ready and refuses writes and linearizable reads within the timeout.
func TestClusterNoQuorumFollower(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.WriteTimeout = 500 * time.Millisecond })
	leader := c.waitLeader()
	f := c.follower(leader)
	c.net.isolate(f.addr)
	waitFor(t, "the cut-off follower to report not ready", 5*time.Second, func() bool {
		return errors.Is(f.Ready(context.Background()), fsm.ErrNotReady)
	})
	start := time.Now()
	if _, err := f.Propose(context.Background(), set("/x", "1"), fsm.AnswerOptions{}); !errors.Is(err, fsm.ErrNoLeader) && !errors.Is(err, fsm.ErrTimeout) {
		t.Fatalf("write on the cut-off follower: %v", err)
	}
	if _, err := f.Read(context.Background(), fsm.Read{Path: mustPath("/x"), Linearizable: true}); !errors.Is(err, fsm.ErrNoLeader) && !errors.Is(err, fsm.ErrTimeout) {
		t.Fatalf("linearizable read on the cut-off follower: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("refusals took %s", took)
	}
	// The majority is unaffected.
	propose(t, leader, set("/y", "1"))
}

// TestClusterStatusMembers lists every member with health and versions.
func TestClusterStatusMembers(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	f := c.follower(leader)
	v, err := f.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ms := v.([]Member)
	if len(ms) != 3 {
		t.Fatalf("members = %+v", ms)
	}
	for _, m := range ms {
		if m.Health != "alive" || m.Suffrage != "Voter" || m.Versions == nil || m.Leader != (m.ID == string(leader.id)) ||
			m.Self != (m.ID == string(f.id)) || m.Address == "" {
			t.Errorf("member %+v", m)
		}
	}
	if _, id := f.raft.LeaderWithID(); id != leader.id {
		t.Fatal("leader changed")
	}
	_ = raft.Voter
}

// TestClusterStatusProgress: every member's applied index, lag and last
// contact, as the leader sees them, on the leader and on a follower alike;
// a member cut off turns stale in both views.
func TestClusterStatusProgress(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	propose(t, leader, set("/x", "1"))
	var cut *Node
	for _, n := range c.live() {
		if n != leader {
			cut = n // the last follower; the first one stays to answer
		}
	}
	f := c.follower(leader)
	if f == cut {
		t.Fatal("follower() and the cut member are the same")
	}
	// progressOf is n's /status view of each member's progress, keyed
	// by id, and the leader it comes from.
	progressOf := func(n *Node) (map[string]Progress, string) {
		v, err := n.Status(context.Background())
		if err != nil {
			t.Fatalf("status of %s: %v", n.id, err)
		}
		st := v.(*Status)
		out := map[string]Progress{}
		for _, m := range st.Members {
			if m.Progress != nil {
				out[m.ID] = *m.Progress
			}
		}
		return out, st.ProgressFrom
	}
	last := ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last view seen: %s", last)
		}
	})
	for _, n := range []*Node{leader, f} {
		waitFor(t, fmt.Sprintf("%s to show three members' progress", n.id), 10*time.Second, func() bool {
			ps, from := progressOf(n)
			last = fmt.Sprintf("from %q: %+v", from, ps)
			if from != string(leader.id) || len(ps) != 3 {
				return false
			}
			for id, p := range ps {
				contact := p.LastContactMS != nil || id == string(leader.id)
				if p.AppliedIndex == nil || *p.AppliedIndex == 0 || p.Lag == nil || p.Stale || !contact {
					return false
				}
			}
			return true
		})
	}
	c.net.isolate(cut.addr)
	defer c.net.heal()
	for _, n := range []*Node{leader, f} {
		waitFor(t, fmt.Sprintf("%s to show %s stale", n.id, cut.id), 10*time.Second, func() bool {
			ps, from := progressOf(n)
			last = fmt.Sprintf("from %q: %+v", from, ps)
			p := ps[string(cut.id)]
			return from == string(leader.id) && p.Stale && p.LastContactMS != nil && !ps[string(f.id)].Stale
		})
	}
}

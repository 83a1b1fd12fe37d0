package cluster

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// cmdFuture is a command kind no release has: the kind a future release
// would add along with a new entry format.
const cmdFuture fsm.CommandKind = 200

// newerBuild is a future release: it applies one more entry format and
// writes cmdFuture, which needs it.
func newerBuild() buildFormats {
	b := thisBuild()
	b.kinds = maps.Clone(b.kinds)
	b.entry++
	b.kinds[cmdFuture] = b.entry
	return b
}

// startBuild (re)starts node i of c on its data directory at addr,
// running build b.
func startBuild(c *testCluster, i int, addr raft.ServerAddress, b buildFormats) *Node {
	c.t.Helper()
	f := fsm.New()
	n, err := newNode(c.cfgs[i], f, deps{network: c.net.factory(addr), discovery: c.gossip.factory, formats: b})
	if err != nil {
		c.t.Fatalf("start %s: %v", c.cfgs[i].NodeID, err)
	}
	c.t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	c.nodes[i], c.fsms[i] = n, f
	return n
}

// replace stops node i gracefully and starts it again on the same data
// running build b: one step of a rolling upgrade.
func replace(c *testCluster, i int, b buildFormats) *Node {
	c.t.Helper()
	if err := c.nodes[i].Shutdown(context.Background()); err != nil {
		c.t.Fatalf("stop %s: %v", c.cfgs[i].NodeID, err)
	}
	c.nodes[i] = nil
	return startBuild(c, i, c.addr(i), b)
}

func TestCanProposeKnownAndUnknownKinds(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	for _, k := range []fsm.CommandKind{fsm.CmdSet, fsm.CmdUpdate, fsm.CmdPush} {
		if err := n.CanPropose(k); err != nil {
			t.Errorf("CanPropose(%d) = %v", k, err)
		}
	}
	// A kind this build does not know would stop every replica that
	// tried to apply it: it never reaches the log.
	before := n.raft.LastIndex()
	c := set("/x", "1")
	c.Kind = cmdFuture
	if _, err := n.Propose(context.Background(), c, fsm.AnswerOptions{}); !errors.Is(err, fsm.ErrUnsupportedVersion) {
		t.Fatalf("Propose(unknown kind) = %v, want ErrUnsupportedVersion", err)
	}
	if after := n.raft.LastIndex(); after != before {
		t.Fatalf("the log grew from %d to %d", before, after)
	}
}

// TestNewKindWaitsForEveryMember upgrades a three-node cluster one node at
// a time to a release with a new entry kind: the kind is refused (503
// class, nothing written) while any member runs the old release, the old
// kinds work throughout, and the new kind is allowed once the last member
// is upgraded — and refused again if a member comes back on the old build.
func TestNewKindWaitsForEveryMember(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.waitLeader()
	future := set("/future", `"x"`)
	future.Kind = cmdFuture

	for _, i := range []int{2, 1, 0} { // n3, n2, n1
		replace(c, i, newerBuild())
		leader := c.waitLeader()
		propose(t, c.nodes[i], set("/step/"+c.cfgs[i].NodeID, "true"))
		if i == 0 {
			break
		}
		for _, n := range c.live() {
			err := n.CanPropose(cmdFuture)
			switch {
			case n.formats.entry == thisBuild().entry:
				// The old build does not know the kind at all.
				if !errors.Is(err, fsm.ErrUnsupportedVersion) {
					t.Fatalf("old %s: CanPropose(new kind) = %v", n.id, err)
				}
			case !errors.Is(err, fsm.ErrNotReady) || !strings.Contains(err.Error(), "member n1"):
				t.Fatalf("upgraded %s with n1 old: CanPropose(new kind) = %v, want ErrNotReady naming n1", n.id, err)
			}
		}
		// Proposed on an upgraded node (forwarded if it follows): refused
		// before anything is written. Were it written, the old members'
		// FSMs could not apply it.
		before := leader.raft.LastIndex()
		if _, err := c.nodes[i].Propose(context.Background(), future, fsm.AnswerOptions{}); !errors.Is(err, fsm.ErrNotReady) {
			t.Fatalf("Propose(new kind) on %s with old members = %v, want ErrNotReady", c.cfgs[i].NodeID, err)
		}
		if after := leader.raft.LastIndex(); after != before {
			t.Fatalf("a refused entry reached the log (%d → %d)", before, after)
		}
	}

	// Every member runs the new release: allowed everywhere (gossip
	// carries each restarted node's formats at once).
	c.waitLeader()
	for _, n := range c.live() {
		waitFor(t, string(n.id)+" to allow the new kind", 5*time.Second, func() bool { return n.CanPropose(cmdFuture) == nil })
	}

	// A member that stops keeps its place: it is judged by the build it
	// ran until it comes back...
	replaceOld := 2
	if err := c.nodes[replaceOld].Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.nodes[replaceOld] = nil
	leader := c.waitLeader()
	if err := leader.CanPropose(cmdFuture); err != nil {
		t.Fatalf("a stopped upgraded member blocks the new kind: %v", err)
	}
	// ...on the old build (a downgrade while the new kind is unused): the
	// kind is refused again.
	startBuild(c, replaceOld, c.addr(replaceOld), thisBuild())
	leader = c.waitLeader()
	waitFor(t, "the downgraded member to block the new kind", 5*time.Second, func() bool {
		return errors.Is(leader.CanPropose(cmdFuture), fsm.ErrNotReady)
	})

	// A member gossip has never heard of counts as the base format.
	crash(t, c.nodes[replaceOld])
	c.nodes[replaceOld] = nil
	c.gossip.mu.Lock()
	delete(c.gossip.peers, "n3")
	c.gossip.mu.Unlock()
	if err := c.waitLeader().CanPropose(cmdFuture); !errors.Is(err, fsm.ErrNotReady) || !strings.Contains(err.Error(), "member n3") {
		t.Fatalf("with n3 unknown to gossip: CanPropose(new kind) = %v", err)
	}
}

// TestNewerLeaderKeepsOlderMembers: during a rolling upgrade the leader may
// run the newer build. An older member already in the configuration that
// comes back on a new address keeps its seat (its address is updated); an
// older newcomer is not added, since it might not apply the log.
func TestNewerLeaderKeepsOlderMembers(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.waitLeader()
	replace(c, 0, newerBuild())
	replace(c, 1, newerBuild())
	c.crash(2) // n3 stays on the old build, leader is n1 or n2
	startBuild(c, 2, "n3-moved", thisBuild())
	waitFor(t, "the newer leader to record old n3's new address", 10*time.Second, func() bool {
		return voters(t, c.waitLeader())["n3"] == "n3-moved"
	})
	propose(t, c.nodes[2], set("/moved", "true"))

	// n3 could win an election and, on the old build itself, rightly add
	// an old newcomer; with n3 down the leader is certainly newer.
	c.crash(2)
	leader := c.waitLeader()
	c.add("n4", 3) // the old build
	rounds := leader.reconciles.Load()
	waitFor(t, "five reconciliation rounds", 10*time.Second, func() bool { return leader.reconciles.Load() >= rounds+5 })
	if voters(t, leader)["n4"] != "" {
		t.Fatal("a newer leader added a member on an older entry format")
	}
}

// TestStatusShowsEveryMembersRelease: the release and commit each node
// was built as travel through gossip into /status.
func TestStatusShowsEveryMembersRelease(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.Release, cfg.Commit = "1.2.3", "abc123" })
	c.cfgs[2].Release = "1.3.0"
	replace(c, 2, thisBuild())
	leader := c.waitLeader()
	want := map[string]string{"n1": "1.2.3", "n2": "1.2.3", "n3": "1.3.0"}
	waitFor(t, "every member's release in /status", 5*time.Second, func() bool {
		st, err := leader.Status(context.Background())
		if err != nil {
			return false
		}
		got := map[string]string{}
		for _, m := range st.(*Status).Members {
			if m.Versions != nil && m.Versions.Commit == "abc123" && m.Versions.EntryFormat == fsm.CommandVersion {
				got[m.ID] = m.Versions.Release
			}
		}
		return maps.Equal(got, want) && st.(*Status).Versions.Release == want[string(leader.id)]
	})

	long := Config{Release: strings.Repeat("x", MaxBuildNameLen+1)}.withDefaults()
	if len(long.Release) != MaxBuildNameLen {
		t.Fatalf("a release name longer than gossip carries is kept at %d bytes", len(long.Release))
	}
}

// bumpedBuild is a future release that changes how an existing kind,
// CmdSetRules, is written: it applies one more entry format and stamps
// that kind with it.
func bumpedBuild() buildFormats {
	b := thisBuild()
	b.kinds = maps.Clone(b.kinds)
	b.entry++
	b.kinds[fsm.CmdSetRules] = b.entry
	return b
}

// TestBumpedKindWaitsForEveryMember: a kind whose format a newer release
// raises is held back by the gate — refused with ErrNotReady on every
// node, nothing written — until every member advertises the new format,
// while the kinds of format 1 keep working; then it is written.
func TestBumpedKindWaitsForEveryMember(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.waitLeader()
	rules := fsm.Command{Kind: fsm.CmdSetRules, Body: []byte(`{"rules": {".read": true, ".write": true}}`)}
	for _, i := range []int{2, 1} {
		replace(c, i, bumpedBuild())
		leader := c.waitLeader()
		for _, n := range c.live() {
			propose(t, n, set("/step/"+string(n.id), "true"))
			before := leader.raft.LastIndex()
			_, err := n.Propose(context.Background(), rules, fsm.AnswerOptions{})
			switch {
			case n.formats.kinds[fsm.CmdSetRules] == 1:
				// The old build writes the kind in the format every member
				// applies; a leader of the new build, which checks the kind
				// by its own formats, may refuse it all the same (leadership
				// can move between waitLeader and the write).
				if err != nil && !(errors.Is(err, fsm.ErrNotReady) && strings.Contains(err.Error(), "needs entry format")) {
					t.Fatalf("old %s: set rules: %v", n.id, err)
				}
			case !errors.Is(err, fsm.ErrNotReady) || !strings.Contains(err.Error(), "member n1"):
				t.Fatalf("upgraded %s with n1 old: set rules = %v, want ErrNotReady naming n1", n.id, err)
			case leader.raft.LastIndex() != before:
				t.Fatalf("a refused entry reached the log (%d → %d)", before, leader.raft.LastIndex())
			}
		}
	}
	replace(c, 0, bumpedBuild())
	for _, n := range c.live() {
		waitFor(t, string(n.id)+" to allow the bumped kind", 5*time.Second, func() bool { return n.CanPropose(fsm.CmdSetRules) == nil })
		propose(t, n, rules)
	}
}

// TestPrejudgedWritesApplyAlike: a user's write that the receiving node
// judged allowed whatever the data is applied on every replica alike, via
// the leader or a follower; judged, then the rules change before the write
// reaches the log, it is refused everywhere with ErrRulesChanged, through
// forwarding too, and nothing is applied.
func TestPrejudgedWritesApplyAlike(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	propose(t, leader, fsm.Command{Kind: fsm.CmdSetRules, Body: []byte(`{"rules": {"users": {"$uid": {".write": "auth.uid == $uid", ".read": true}}}}`)})
	f := c.follower(leader)
	for _, n := range []*Node{f, leader} {
		cmd := set("/users/bob", `{"via":"`+string(n.id)+`"}`)
		cmd.As = &fsm.Access{Auth: map[string]any{"uid": "bob"}}
		// As the HTTP layer does: a refusal is confirmed on a fresh state.
		err := n.Judge(context.Background(), &cmd, false)
		if errors.Is(err, fsm.ErrPermissionDenied) {
			err = n.Judge(context.Background(), &cmd, true)
		}
		if err != nil || !cmd.Prejudged {
			t.Fatalf("judge on %s: %v, prejudged %v", n.id, err, cmd.Prejudged)
		}
		propose(t, n, cmd)
		for _, m := range c.live() {
			if got, want := readJSON(t, m, "/users/bob", true), `{"via":"`+string(n.id)+`"}`; got != want {
				t.Fatalf("%s: /users/bob = %s, want %s", m.id, got, want)
			}
		}
	}
	stale := set("/users/bob", `{"stale":true}`)
	stale.As = &fsm.Access{Auth: map[string]any{"uid": "bob"}}
	if err := f.Judge(context.Background(), &stale, false); err != nil || !stale.Prejudged {
		t.Fatalf("judge: %v, prejudged %v", err, stale.Prejudged)
	}
	propose(t, leader, fsm.Command{Kind: fsm.CmdSetRules, Body: []byte(`{"rules": {"users": {"$uid": {".write": "auth.uid == $uid && newData.hasChild('via')", ".read": true}}}}`)})
	if _, err := f.Propose(context.Background(), stale, fsm.AnswerOptions{}); !errors.Is(err, fsm.ErrRulesChanged) {
		t.Fatalf("a write judged by replaced rules, forwarded: %v, want ErrRulesChanged", err)
	}
	if got := readJSON(t, f, "/users/bob", true); strings.Contains(got, "stale") {
		t.Fatalf("refused write applied: /users/bob = %s", got)
	}
	// A write the rules refuse is still refused by every replica.
	cmd := set("/users/bob", `1`)
	cmd.As = &fsm.Access{Auth: map[string]any{"uid": "mallory"}}
	if err := f.Judge(context.Background(), &cmd, false); !errors.Is(err, fsm.ErrPermissionDenied) || cmd.Prejudged {
		t.Fatalf("mallory's write judged %v, prejudged %v", err, cmd.Prejudged)
	}
}

// TestSilentAnswers: a print=silent write's answer has its ETag and no
// body, from the leader and through a follower alike.
func TestSilentAnswers(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	for _, n := range []*Node{leader, c.follower(leader)} {
		loud := proposeWith(t, n, set("/silent", `{"a":1}`), fsm.AnswerOptions{})
		quiet := proposeWith(t, n, set("/silent", `{"a":1}`), fsm.AnswerOptions{Silent: true})
		if string(loud.Body) != `{"a":1}` || len(quiet.Body) != 0 || quiet.ETag != loud.ETag || quiet.ETag == "" {
			t.Fatalf("via %s: answered %q %s, silently %q %s", n.id, loud.Body, loud.ETag, quiet.Body, quiet.ETag)
		}
	}
}

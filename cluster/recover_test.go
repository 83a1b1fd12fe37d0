package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// lostMajority writes through a three-node cluster, then crashes all three
// nodes: n2 and n3 are taken to be gone for good, n1 is the survivor.
func lostMajority(t *testing.T) *testCluster {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	for _, v := range []string{"1", "2", "3"} {
		propose(t, leader, set("/kept/k"+v, v))
	}
	// n1 must hold every acknowledged write: wait until it has applied them.
	waitFor(t, "n1 to apply the writes", 10*time.Second, func() bool {
		return readJSON(t, c.nodes[0], "/kept", false) == `{"k1":1,"k2":2,"k3":3}`
	})
	for i := range c.nodes {
		c.crash(i)
	}
	return c
}

// survivorAlone restarts n1 and checks that it leads alone, holds the
// data and takes writes.
func survivorAlone(t *testing.T, c *testCluster) {
	n1 := c.start(0)
	if got := c.waitLeader(n1); got != n1 {
		t.Fatalf("leader %s, want n1", got.id)
	}
	if got := readJSON(t, n1, "/kept", true); got != `{"k1":1,"k2":2,"k3":3}` {
		t.Fatalf("after the recovery /kept = %s", got)
	}
	propose(t, n1, set("/after", "true"))
	cf := n1.raft.GetConfiguration()
	if err := cf.Error(); err != nil || len(cf.Configuration().Servers) != 1 {
		t.Fatalf("configuration after recovery: %+v, %v", cf.Configuration(), err)
	}
}

// recoveryLines returns the records of the data directory's recovery log.
func recoveryLines(t *testing.T, dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, RecoveryLog))
	if err != nil {
		t.Fatalf("recovery log: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestRecoverShrinksToTheSurvivor: with two of three nodes gone for good,
// the explicit recovery makes the survivor the whole cluster; it elects
// itself, keeps every write it held, takes new ones, and the recovery is
// on record.
func TestRecoverShrinksToTheSurvivor(t *testing.T) {
	c := lostMajority(t)
	dir := c.cfgs[0].DataDir
	r, err := OpenRecovery(dir, "n1", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Current.Servers) != 3 || r.LastIndex == 0 || r.LastTerm == 0 {
		t.Fatalf("before: %+v, last index %d term %d", r.Current, r.LastIndex, r.LastTerm)
	}
	// The in-memory network's addresses have no port, so no ParseVoters.
	voters := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: "n1", Address: c.addr(0)}}}
	if err := r.Apply(voters, "test"); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	survivorAlone(t, c)
	lines := recoveryLines(t, dir)
	if len(lines) != 1 || !strings.Contains(lines[0], `"new_configuration":["n1=n1-addr (voter)"]`) ||
		!strings.Contains(lines[0], `"source":"test"`) || !strings.Contains(lines[0], "n3=n3-addr (voter)") {
		t.Fatalf("recovery log: %q", lines)
	}
}

// TestRecoverFromPeersFile: the same through a peers.json in the data
// directory, applied once at the next start and renamed.
func TestRecoverFromPeersFile(t *testing.T) {
	c := lostMajority(t)
	dir := c.cfgs[0].DataDir
	peers := `[{"id": "n1", "address": "n1-addr", "non_voter": false}]`
	if err := os.WriteFile(filepath.Join(dir, PeersFile), []byte(peers), 0o600); err != nil {
		t.Fatal(err)
	}
	survivorAlone(t, c)
	if _, err := os.Stat(filepath.Join(dir, PeersFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("peers.json still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, PeersFile+".applied")); err != nil {
		t.Fatalf("peers.json.applied: %v", err)
	}
	// A second start does not apply it again.
	c.crash(0)
	c.start(0)
	c.waitLeader(c.nodes[0])
	if lines := recoveryLines(t, dir); len(lines) != 1 || !strings.Contains(lines[0], `"source":"peers.json"`) {
		t.Fatalf("recovery log: %q", lines)
	}
}

// TestRecoverRefusesBadInput: unusable voter lists, a data directory
// without Raft state, a running node and a malformed peers.json are
// refused with clear errors, and change nothing.
func TestRecoverRefusesBadInput(t *testing.T) {
	if c, err := ParseVoters(" a=h1:8300, b=h2:8300 "); err != nil || len(c.Servers) != 2 || c.Servers[1].Address != "h2:8300" || c.Servers[0].Suffrage != raft.Voter {
		t.Errorf("ParseVoters: %+v, %v", c, err)
	}
	for _, s := range []string{"", ",", "n1", "n1=", "=h:1", "n1=host", "n1=h:0", "n1=h:x", "n1=:8300"} {
		if _, err := ParseVoters(s); !errors.Is(err, ErrBadVoters) {
			t.Errorf("ParseVoters(%q) = %v, want ErrBadVoters", s, err)
		}
	}
	if _, err := OpenRecovery(t.TempDir(), "n1", nil); !errors.Is(err, ErrNoRaftState) {
		t.Errorf("an empty data directory: %v, want ErrNoRaftState", err)
	}

	c := newTestCluster(t, 3, nil)
	c.waitLeader()
	if _, err := OpenRecovery(c.cfgs[0].DataDir, "n1", nil); err == nil || !strings.Contains(err.Error(), "stop the node first") {
		t.Errorf("recovery of a running node: %v", err)
	}
	c.crash(0)
	r, err := OpenRecovery(c.cfgs[0].DataDir, "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, voters := range map[string]raft.Configuration{
		"empty":     {},
		"not self":  {Servers: []raft.Server{{Suffrage: raft.Voter, ID: "n2", Address: "n2-addr"}}},
		"twice":     {Servers: []raft.Server{{Suffrage: raft.Voter, ID: "n1", Address: "a"}, {Suffrage: raft.Voter, ID: "n1", Address: "b"}}},
		"nonvoter":  {Servers: []raft.Server{{Suffrage: raft.Nonvoter, ID: "n1", Address: "n1-addr"}}},
		"no adress": {Servers: []raft.Server{{Suffrage: raft.Voter, ID: "n1"}}},
	} {
		if err := r.Apply(voters, "test"); !errors.Is(err, ErrBadVoters) {
			t.Errorf("%s: Apply = %v, want ErrBadVoters", name, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.cfgs[0].DataDir, RecoveryLog)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused recovery wrote a record: %v", err)
	}

	if err := os.WriteFile(filepath.Join(c.cfgs[0].DataDir, PeersFile), []byte(`[{"id": "n1"`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = newNode(c.cfgs[0], fsm.New(), deps{network: c.net.factory(c.addr(0)), discovery: c.gossip.factory})
	if err == nil || !strings.Contains(err.Error(), PeersFile) {
		t.Fatalf("a start with a malformed peers.json: %v", err)
	}
}

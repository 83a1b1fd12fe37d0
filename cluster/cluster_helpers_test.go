package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// testCluster is an in-process cluster on a memNetwork with fakeGossip.
type testCluster struct {
	t      testing.TB
	net    *memNetwork
	gossip *fakeGossip
	cfgs   []Config
	nodes  []*Node // nil while a node is down
	fsms   []*fsm.FSM
}

// newTestCluster starts size nodes n1…nN that bootstrap together through
// BootstrapExpect, with edit applied to each configuration.
func newTestCluster(t testing.TB, size int, edit func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, net: newMemNetwork(), gossip: newFakeGossip()}
	root := t.TempDir()
	for i := range size {
		cfg := Config{
			NodeID:          fmt.Sprintf("n%d", i+1),
			DataDir:         filepath.Join(root, fmt.Sprintf("n%d", i+1)),
			RaftAddr:        "127.0.0.1:0", // unused by memNetwork
			GossipAddr:      "127.0.0.1:0", // unused by fakeGossip
			InsecureCluster: true,
			BootstrapExpect: size,
			WriteTimeout:    2 * time.Second,
			Timing:          clusterTiming(),
			Logger:          testLogger(t),
		}
		if edit != nil {
			edit(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
		c.nodes = append(c.nodes, nil)
		c.fsms = append(c.fsms, nil)
	}
	for i := range size {
		c.start(i)
	}
	return c
}

// clusterTiming is FastTiming with a little more patience before a leader
// steps down: three Raft instances in one race-instrumented process on two
// cores miss 50 ms deadlines often enough to flap.
func clusterTiming() Timing {
	t := FastTiming()
	t.HeartbeatTimeout = 150 * time.Millisecond
	t.ElectionTimeout = 150 * time.Millisecond
	t.LeaderLeaseTimeout = 100 * time.Millisecond
	return t
}

// addr is node i's address on the memNetwork.
func (c *testCluster) addr(i int) raft.ServerAddress {
	return raft.ServerAddress(c.cfgs[i].NodeID + "-addr")
}

// start (re)starts node i on its data directory.
func (c *testCluster) start(i int) *Node {
	c.t.Helper()
	return c.startAt(i, c.addr(i))
}

// startAt starts node i at addr (a restart on a new address).
func (c *testCluster) startAt(i int, addr raft.ServerAddress) *Node {
	c.t.Helper()
	f := fsm.New()
	n, err := newNode(c.cfgs[i], f, deps{network: c.net.factory(addr), discovery: c.gossip.factory})
	if err != nil {
		c.t.Fatalf("start %s: %v", c.cfgs[i].NodeID, err)
	}
	c.t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	c.nodes[i], c.fsms[i] = n, f
	return n
}

// add appends a new node configured like node 0 but with id and expect.
func (c *testCluster) add(id string, expect int) *Node {
	c.t.Helper()
	cfg := c.cfgs[0]
	cfg.NodeID = id
	cfg.DataDir = filepath.Join(filepath.Dir(cfg.DataDir), id)
	cfg.BootstrapExpect = expect
	c.cfgs = append(c.cfgs, cfg)
	c.nodes = append(c.nodes, nil)
	c.fsms = append(c.fsms, nil)
	return c.start(len(c.cfgs) - 1)
}

// crash kills node i (no transfer, no snapshot, no gossip goodbye).
func (c *testCluster) crash(i int) {
	c.t.Helper()
	crash(c.t, c.nodes[i])
	c.nodes[i] = nil
}

// live returns the running nodes.
func (c *testCluster) live() []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// waitLeader waits until one of nodes leads, every one of them knows it,
// and all of them are ready; it returns the leader.
func (c *testCluster) waitLeader(nodes ...*Node) *Node {
	c.t.Helper()
	if len(nodes) == 0 {
		nodes = c.live()
	}
	var leader *Node
	var last string
	deadline := time.Now().Add(10 * time.Second)
	for !c.agreeOnLeader(nodes, &leader, &last) {
		if time.Now().After(deadline) {
			c.t.Fatalf("no leader known to all and every node ready after 10s: %s", last)
		}
		time.Sleep(5 * time.Millisecond) // poll, bounded by the deadline
	}
	return leader
}

// agreeOnLeader reports whether exactly one of nodes leads, all know it
// and all are ready; otherwise last says why not.
func (c *testCluster) agreeOnLeader(nodes []*Node, leader **Node, last *string) bool {
	*leader = nil
	for _, n := range nodes {
		if n.raft.State() == raft.Leader {
			if *leader != nil {
				*last = "two leaders"
				return false
			}
			*leader = n
		}
	}
	if *leader == nil {
		*last = "no leader"
		return false
	}
	for _, n := range nodes {
		if _, id := n.raft.LeaderWithID(); id != (*leader).id {
			*last = fmt.Sprintf("%s thinks the leader is %q", n.id, id)
			return false
		}
		if err := n.Ready(context.Background()); err != nil {
			*last = fmt.Sprintf("%s: %v", n.id, err)
			return false
		}
	}
	return true
}

// follower returns a live node other than leader.
func (c *testCluster) follower(leader *Node) *Node {
	for _, n := range c.live() {
		if n != leader {
			return n
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// index returns the position of n in the cluster.
func (c *testCluster) index(n *Node) int {
	for i, m := range c.nodes {
		if m == n {
			return i
		}
	}
	c.t.Fatalf("node %s not in the cluster", n.id)
	return -1
}

// voters returns the sorted ids and addresses of the leader's
// configuration.
func voters(t *testing.T, n *Node) map[string]string {
	t.Helper()
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		t.Fatalf("configuration: %v", err)
	}
	out := map[string]string{}
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			out[string(s.ID)] = string(s.Address)
		}
	}
	return out
}

func ids(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

package e2e

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// Cluster is a cluster of real arbor processes on 127.0.0.1, secured as
// in production: mutual TLS between nodes with certificates from
// `arbor certs init` (run by StartCluster) and an encrypted gossip key.
// Each node keeps its Raft and gossip ports across restarts, so a
// restarted node rejoins at the address the others know.
type Cluster struct {
	Nodes []*Node
	// PKI is the directory certs init wrote: ca.pem, nK.pem, gossip.key.
	PKI string
}

// clusterReadyTimeout bounds the first election of a new cluster of
// race-instrumented processes.
const clusterReadyTimeout = 60 * time.Second

// StartCluster starts size nodes n1…nN with --bootstrap-expect size, each
// joining the others' gossip addresses, plus args, and waits until every
// node is ready and agrees on the leader.
func StartCluster(t testing.TB, size int, args ...string) *Cluster {
	t.Helper()
	hosts := make([]string, size)
	for i := range hosts {
		hosts[i] = "127.0.0.1"
	}
	return StartClusterAt(t, hosts, args...)
}

// StartClusterAt is StartCluster with node K's Raft and gossip ports
// bound on hosts[K-1] (loopback addresses of their own let a test cut
// the network between nodes, netcut_test.go); HTTP stays on 127.0.0.1.
func StartClusterAt(t testing.TB, hosts []string, args ...string) *Cluster {
	t.Helper()
	size := len(hosts)
	c := &Cluster{PKI: filepath.Join(t.TempDir(), "pki")}
	names := make([]string, size)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	if code, out := Run(t, "certs", "init", "--dir", c.PKI, "--hosts", strings.Join(names, ",")); code != 0 {
		t.Fatalf("arbor certs init: exit %d\n%s", code, out)
	}
	// Raft and gossip ports; HTTP is 127.0.0.1:0 (StartNode).
	ports, err := testcluster.FreePorts(2 * size)
	if err != nil {
		t.Fatal(err)
	}
	gossip := map[string]string{}
	for i, name := range names {
		gossip[name] = net.JoinHostPort(hosts[i], strconv.Itoa(ports[size+i]))
	}
	for i, name := range names {
		join := testcluster.Peers(names, name, func(m string) string { return gossip[m] })
		nodeArgs := append([]string{
			"--raft-addr", net.JoinHostPort(hosts[i], strconv.Itoa(ports[i])),
			"--gossip-addr", gossip[name],
		}, testcluster.ClusterFlags(name, c.PKI, join, size)...)
		c.Nodes = append(c.Nodes, StartNode(t, Options{
			Name:      name,
			Args:      append(nodeArgs, args...),
			TrustFile: filepath.Join(c.PKI, "ca.pem"),
		}))
	}
	// Registered after the nodes' own cleanups, so it runs first, while
	// their output is still at hand.
	t.Cleanup(func() { c.checkNoRaces(t) })
	c.WaitStable(t, c.Nodes...)
	return c
}

// checkNoRaces fails the test if any process of the cluster reported a
// data race (the binary is built with -race; a report does not stop it).
func (c *Cluster) checkNoRaces(t testing.TB) {
	for _, n := range c.Nodes {
		n.mu.Lock()
		procs := n.procs
		n.mu.Unlock()
		for i, p := range procs {
			if strings.Contains(p.logs.String(), "WARNING: DATA RACE") {
				t.Errorf("%s, process %d: the race detector reported a data race (its output is logged below)", n.Name, i+1)
			}
		}
	}
}

// nodeStatus is the part of /status the tests read.
type nodeStatus = testcluster.Status

// Status reads the node's /status; ok is false if it did not answer 200.
func (n *Node) Status() (nodeStatus, bool) {
	r, err := n.TryDo("GET", "/status", "")
	if err != nil || r.Status != 200 {
		return nodeStatus{}, false
	}
	st, err := testcluster.ParseStatus([]byte(r.Body))
	return st, err == nil
}

// WaitStable waits until every one of nodes is ready and they name the
// same leader, one of them; it returns that leader.
func (c *Cluster) WaitStable(t testing.TB, nodes ...*Node) *Node {
	t.Helper()
	var leader *Node
	var last string
	poll(t, clusterReadyTimeout, "the nodes to agree on a leader and be ready", func() bool {
		leader = nil
		var names []string
		byName := map[string]*Node{}
		for _, n := range nodes {
			names = append(names, n.Name)
			byName[n.Name] = n
		}
		name, err := testcluster.OneLeader(names, func(name string) (nodeStatus, error) {
			n := byName[name]
			if n.current().exited() {
				t.Fatalf("%s exited", n.Name)
			}
			st, ok := n.Status()
			if !ok {
				return st, errors.New(n.Name + ": no status")
			}
			return st, nil
		})
		if err != nil {
			last = err.Error()
			return false
		}
		leader = c.Node(name)
		if leader == nil || !containsNode(nodes, leader) {
			last = fmt.Sprintf("leader %q is not among the nodes waited for", name)
			return false
		}
		return true
	}, func() string { return last })
	return leader
}

// Node returns the node called name (nil if none).
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Others returns the nodes other than n.
func (c *Cluster) Others(n *Node) []*Node {
	var out []*Node
	for _, m := range c.Nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

func containsNode(nodes []*Node, n *Node) bool {
	for _, m := range nodes {
		if m == n {
			return true
		}
	}
	return false
}

// writeUntilOK repeats a PUT on n until it answers 200 or timeout passes,
// and returns how long that took.
func writeUntilOK(t testing.TB, n *Node, path, body string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	poll(t, timeout, "a write on "+n.Name+" to succeed", func() bool {
		r, err := n.TryDo("PUT", path, body)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%d %s", r.Status, r.Body)
		return r.Status == 200
	}, func() string { return "last answer: " + last })
	return time.Since(start)
}

package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// netCut cuts the network between nodes on one machine for real: each
// node binds its cluster ports on a loopback address of its own (and
// sends from it, cluster/sourceaddr.go), and iptables drops packets by
// source and destination address, in a chain of the test's own hooked
// into INPUT. Unlike stopping a process, both sides go on running: the
// cut-off node serves its clients while the others carry on without it.
// Clients reach every node on 127.0.0.1, which no rule touches.
//
// It needs root and iptables. Without them the test is skipped, except
// under CI, where it fails: CI must run it.
type netCut struct {
	t     testing.TB
	chain string
	base  string // "127.A.B.": the addresses are base+1, base+2, …
}

var netCutChains atomic.Int64

func newNetCut(t testing.TB) *netCut {
	t.Helper()
	_, err := exec.LookPath("iptables")
	if err != nil || os.Geteuid() != 0 {
		msg := fmt.Sprintf("network cuts need root and iptables (euid %d, iptables: %v)", os.Geteuid(), err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// Addresses and a chain no other run of the suite shares, so rules
	// left behind by a killed run cut nothing that is running now.
	c := &netCut{
		t:     t,
		chain: fmt.Sprintf("arbor-e2e-%d-%d", os.Getpid(), netCutChains.Add(1)),
		base:  fmt.Sprintf("127.%d.%d.", 32+rand.IntN(200), rand.IntN(250)),
	}
	c.iptables("-N", c.chain)
	c.iptables("-I", "INPUT", "-j", c.chain)
	t.Cleanup(func() {
		c.iptables("-D", "INPUT", "-j", c.chain)
		c.iptables("-F", c.chain)
		c.iptables("-X", c.chain)
	})
	return c
}

// hosts returns n addresses, one per node.
func (c *netCut) hosts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", c.base, i+1)
	}
	return out
}

// hostOf is the address node n's cluster ports are bound on: that of
// its last --raft-addr (a later flag overrides an earlier one).
func hostOf(n *Node) string {
	host := ""
	for i, a := range n.args {
		if a == "--raft-addr" && i+1 < len(n.args) {
			host, _, _ = net.SplitHostPort(n.args[i+1])
		}
	}
	return host
}

// drop drops every packet from node from to node to (one direction).
func (c *netCut) drop(from, to *Node) {
	c.t.Helper()
	if hostOf(from) == "" || hostOf(to) == "" {
		c.t.Fatalf("%s or %s has no cluster address of its own", from.Name, to.Name)
	}
	c.iptables("-A", c.chain, "-s", hostOf(from), "-d", hostOf(to), "-j", "DROP")
}

// isolate cuts n from each of others, both ways.
func (c *netCut) isolate(n *Node, others ...*Node) {
	for _, o := range others {
		c.drop(n, o)
		c.drop(o, n)
	}
}

// heal removes every cut.
func (c *netCut) heal() { c.iptables("-F", c.chain) }

func (c *netCut) iptables(args ...string) {
	c.t.Helper()
	if out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput(); err != nil {
		c.t.Fatalf("iptables %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

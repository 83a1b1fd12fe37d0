package e2e

import (
	"testing"
	"time"
)

// TestOnDisconnectRunsOnceWhenItsNodeIsPartitioned: the network between
// the node holding a connection and the other two is cut while all three
// run (netcut_test.go), for a follower, for the leader, and for a
// follower whose outgoing packets alone are dropped (it still hears the
// leader), and for a leader that hears nothing but can still send. The holder closes the connection itself, within seconds, and
// only after that do the others run its onDisconnect operations, once,
// while the cut lasts. When the network heals, nothing runs again.
func TestOnDisconnectRunsOnceWhenItsNodeIsPartitioned(t *testing.T) {
	cut := newNetCut(t)
	c := StartClusterAt(t, cut.hosts(3))
	leader := c.WaitStable(t, c.Nodes...)
	cases := []struct {
		name   string
		holder func(leader *Node) *Node
		cut    func(holder *Node, others []*Node)
	}{
		{"follower, both ways", func(l *Node) *Node { return c.Others(l)[0] }, func(h *Node, o []*Node) { cut.isolate(h, o...) }},
		{"leader, both ways", func(l *Node) *Node { return l }, func(h *Node, o []*Node) { cut.isolate(h, o...) }},
		{"follower, its sends only", func(l *Node) *Node { return c.Others(l)[0] }, func(h *Node, o []*Node) {
			for _, n := range o {
				cut.drop(h, n)
			}
		}},
		{"leader, its receives only", func(l *Node) *Node { return l }, func(h *Node, o []*Node) {
			for _, n := range o {
				cut.drop(n, h)
			}
		}},
	}
	for i, tc := range cases {
		holder := tc.holder(leader)
		others := c.Others(holder)
		key := "partitioned-" + string(rune('a'+i))
		s := registerPresence(t, holder, key)
		checkNothingRan(t, holder, key)
		tc.cut(holder, others)
		start := time.Now()
		closed := waitClosed(t, s.rt, 30*time.Second)
		closedAt := time.Now()
		t.Logf("%s (%s): it closed the connection %v after the cut", tc.name, holder.Name, closed.Round(time.Millisecond))
		// waitRanOnce checks that the run's timestamp is after the close.
		ran := waitRanOnce(t, others[0], key, closedAt, 60*time.Second)
		t.Logf("%s (%s): the others ran its operations %v after the cut", tc.name, holder.Name, ran.Sub(start).Round(time.Millisecond))
		cut.heal()
		leader = c.WaitStable(t, c.Nodes...)
		checkStillOnce(t, holder, key)
	}
}

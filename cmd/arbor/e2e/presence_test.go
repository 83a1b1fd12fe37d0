package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// presenceSession is one realtime connection with onDisconnect operations
// registered at /presence/<key>: an update that counts its runs and stamps
// the time it ran, and a set at /cancelled/<key> that is cancelled (oc).
type presenceSession struct {
	key string
	rt  *rtConn
}

// registerPresence connects to n as an admin and registers the
// operations; it checks that nothing ran while the connection lives.
func registerPresence(t *testing.T, n *Node, key string) *presenceSession {
	t.Helper()
	rt := dialRT(t, n)
	if s, _, _ := rt.do("gauth", map[string]any{"cred": AdminSecret}); s != "ok" {
		t.Fatalf("%s: gauth %s", n.Name, s)
	}
	for _, rq := range []struct {
		action string
		body   map[string]any
	}{
		{"om", map[string]any{"p": "/presence/" + key, "d": map[string]any{
			"runs": map[string]any{".sv": map[string]any{"increment": 1}},
			"at":   map[string]any{".sv": "timestamp"},
		}}},
		{"o", map[string]any{"p": "/cancelled/" + key + "/x", "d": "ran"}},
		{"oc", map[string]any{"p": "/cancelled/" + key}},
	} {
		if s, d, _ := rt.do(rq.action, rq.body); s != "ok" {
			t.Fatalf("%s: %s: %s %v", n.Name, rq.action, s, d)
		}
	}
	return &presenceSession{key: key, rt: rt}
}

// presenceOf reads /presence/<key> and /cancelled/<key> on n: how many
// times the operations ran and when (0 when they did not), and whether
// the cancelled one ran; ok is false if n did not answer.
func presenceOf(n *Node, key string) (runs int, at int64, cancelledRan bool, ok bool) {
	r, err := n.TryDo("GET", "/presence/"+key+".json", "")
	if err != nil || r.Status != 200 {
		return 0, 0, false, false
	}
	var v struct {
		Runs int   `json:"runs"`
		At   int64 `json:"at"`
	}
	if r.Body != "null" {
		if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
			return 0, 0, false, false
		}
	}
	c, err := n.TryDo("GET", "/cancelled/"+key+".json", "")
	if err != nil || c.Status != 200 {
		return 0, 0, false, false
	}
	return v.Runs, v.At, c.Body != "null", true
}

// waitRanOnce polls n until the operations of key ran, checks they ran
// once, after since, and the cancelled one did not, and returns when
// they were seen.
func waitRanOnce(t *testing.T, n *Node, key string, since time.Time, timeout time.Duration) time.Time {
	t.Helper()
	var runs int
	var at int64
	var cancelled bool
	poll(t, timeout, key+"'s onDisconnect operations to run on "+n.Name, func() bool {
		r, a, c, ok := presenceOf(n, key)
		runs, at, cancelled = r, a, c
		return ok && r > 0
	}, func() string { return fmt.Sprintf("runs %d", runs) })
	seen := time.Now()
	if runs != 1 || cancelled {
		t.Fatalf("%s: operations ran %d times, the cancelled one ran: %v", key, runs, cancelled)
	}
	// {".sv":"timestamp"} is the time they ran, not the time they were
	// registered (before since).
	if at < since.UnixMilli() || at > seen.UnixMilli() {
		t.Fatalf("%s: ran at %d, want between %d and %d", key, at, since.UnixMilli(), seen.UnixMilli())
	}
	return seen
}

// checkStillOnce checks, after a few rounds of the leader's orphan loop,
// that the operations of key ran exactly once.
func checkStillOnce(t *testing.T, n *Node, key string) {
	t.Helper()
	time.Sleep(3 * time.Second)
	poll(t, 20*time.Second, "a read of "+key, func() bool {
		runs, _, cancelled, ok := presenceOf(n, key)
		if ok && (runs != 1 || cancelled) {
			t.Fatalf("%s: operations ran %d times, the cancelled one ran: %v", key, runs, cancelled)
		}
		return ok
	})
}

// checkNothingRan checks, a few rounds of the leader's orphan loop after
// the operations were registered, that none ran while the connection
// lives.
func checkNothingRan(t *testing.T, n *Node, keys ...string) {
	t.Helper()
	time.Sleep(3 * time.Second)
	for _, key := range keys {
		poll(t, 20*time.Second, "a read of "+key, func() bool {
			runs, _, cancelled, ok := presenceOf(n, key)
			if ok && (runs != 0 || cancelled) {
				t.Fatalf("%s: operations ran while the connection lives (%d runs)", key, runs)
			}
			return ok
		})
	}
}

// TestOnDisconnectRunsOnceWhenTheClientLeaves: through the leader and a
// follower, the operations run once when the client closes its
// connection, with the time they ran, and a cancelled one never.
func TestOnDisconnectRunsOnceWhenTheClientLeaves(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	follower := c.Others(leader)[0]
	sessions := map[*Node]*presenceSession{}
	for _, n := range []*Node{leader, follower} {
		sessions[n] = registerPresence(t, n, "left-"+n.Name)
	}
	checkNothingRan(t, leader, "left-"+leader.Name, "left-"+follower.Name)
	for _, n := range []*Node{leader, follower} {
		since := time.Now()
		sessions[n].rt.ws.Close(websocket.StatusNormalClosure, "bye")
		seen := waitRanOnce(t, c.Others(n)[0], sessions[n].key, since, 20*time.Second)
		t.Logf("through %s (%s): ran %v after the client left", n.Name, role(n, leader), seen.Sub(since).Round(time.Millisecond))
	}
	checkStillOnce(t, follower, "left-"+leader.Name)
	checkStillOnce(t, follower, "left-"+follower.Name)
}

// TestOnDisconnectRunsOnceWhenItsNodeIsKilled: the node holding the
// connection is killed with -9, a follower and then the leader; the
// (new) leader runs the operations once gossip declares the node dead,
// and they do not run again when it restarts.
func TestOnDisconnectRunsOnceWhenItsNodeIsKilled(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	follower := c.Others(leader)[0]
	for _, n := range []*Node{follower, leader} {
		key := "killed-" + n.Name
		registerPresence(t, n, key)
		checkNothingRan(t, n, key)
		since := time.Now()
		n.Kill(t)
		seen := waitRanOnce(t, c.Others(n)[0], key, since, 60*time.Second)
		t.Logf("holder %s (%s) killed: its operations ran %v after the kill", n.Name, role(n, leader), seen.Sub(since).Round(time.Millisecond))
		n.Restart(t)
		c.WaitStable(t, c.Nodes...)
		checkStillOnce(t, n, key)
	}
}

// TestOnDisconnectRunsOnceWhenItsNodeRestarts: the node holding the
// connection is killed and started again at once, before gossip could
// declare it dead: it comes back as another run of its process, and the
// leader runs the operations of the run that ended.
func TestOnDisconnectRunsOnceWhenItsNodeRestarts(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	n := c.Others(leader)[0]
	key := "restarted-" + n.Name
	registerPresence(t, n, key)
	since := time.Now()
	n.Kill(t)
	n.Restart(t)
	seen := waitRanOnce(t, leader, key, since, 60*time.Second)
	t.Logf("holder %s (follower) restarted: its operations ran %v after the kill", n.Name, seen.Sub(since).Round(time.Millisecond))
	c.WaitStable(t, c.Nodes...)
	checkStillOnce(t, n, key)
}

// role names n's part when the test began.
func role(n, leader *Node) string {
	if n == leader {
		return "leader"
	}
	return "follower"
}

// TestOnDisconnectRunsOnceWhenItsNodeIsCutOff: the node holding the
// connection is stopped (SIGSTOP) until the others declare it dead and
// run its operations; when it resumes it closes the connection, whose
// operations already ran, and nothing runs twice. A follower, then the
// leader.
func TestOnDisconnectRunsOnceWhenItsNodeIsCutOff(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	follower := c.Others(leader)[0]
	for _, n := range []*Node{follower, leader} {
		key := "cut-" + n.Name
		s := registerPresence(t, n, key)
		checkNothingRan(t, n, key)
		since := time.Now()
		resume := stopNodes(t, n)
		seen := waitRanOnce(t, c.Others(n)[0], key, since, 60*time.Second)
		t.Logf("holder %s (%s) stopped: its operations ran %v after SIGSTOP", n.Name, role(n, leader), seen.Sub(since).Round(time.Millisecond))
		resume()
		closed := waitClosed(t, s.rt, 60*time.Second)
		t.Logf("holder %s (%s) resumed: it closed the connection %v after SIGCONT", n.Name, role(n, leader), closed.Round(time.Millisecond))
		c.WaitStable(t, c.Nodes...)
		checkStillOnce(t, n, key)
	}
}

// waitClosed waits until the server closes rt's connection, saying that
// its onDisconnect operations ran, and returns how long that took.
func waitClosed(t *testing.T, rt *rtConn, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(timeout)
	for {
		select {
		case _, ok := <-rt.msgs:
			if !ok {
				var ce websocket.CloseError
				if !errors.As(rt.readErr, &ce) || ce.Code != websocket.StatusGoingAway || !strings.Contains(ce.Reason, "onDisconnect") {
					t.Fatalf("the connection ended with %v, want a going-away close naming the onDisconnect operations", rt.readErr)
				}
				return time.Since(start)
			}
		case <-deadline:
			t.Fatalf("the connection is still open %v after the node resumed", timeout)
		}
	}
}

// TestIsolatedNodeClosesConnectionsBeforeTheirOperationsRun: the node
// holding the connection is isolated from the other two (they are
// stopped: a partition as the isolated node sees it), a follower and then
// the leader. Out of touch with a leader, it closes the connection itself
// within seconds, before anyone could run its operations; they run once
// when the cluster is whole again, after the close.
func TestIsolatedNodeClosesConnectionsBeforeTheirOperationsRun(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	follower := c.Others(leader)[0]
	for _, n := range []*Node{follower, leader} {
		key := "isolated-" + n.Name
		s := registerPresence(t, n, key)
		checkNothingRan(t, n, key)
		resume := stopNodes(t, c.Others(n)...)
		closed := waitClosed(t, s.rt, 30*time.Second)
		since := time.Now()
		t.Logf("holder %s (%s) isolated: it closed the connection %v after the others stopped", n.Name, role(n, leader), closed.Round(time.Millisecond))
		if runs, _, _, ok := presenceOf(n, key); ok && runs != 0 {
			t.Fatalf("%s: operations ran %d times while the cluster was cut in two", key, runs)
		}
		resume()
		c.WaitStable(t, c.Nodes...)
		seen := waitRanOnce(t, n, key, since, 60*time.Second)
		t.Logf("holder %s (%s): its operations ran %v after the others resumed", n.Name, role(n, leader), seen.Sub(since).Round(time.Millisecond))
		checkStillOnce(t, c.Others(n)[0], key)
	}
}

// stopNodes stops nodes (SIGSTOP) and returns what resumes them
// (SIGCONT), once, whenever it is called first: by the test or at its
// end.
func stopNodes(t *testing.T, nodes ...*Node) (resume func()) {
	t.Helper()
	for _, n := range nodes {
		n.Signal(t, syscall.SIGSTOP)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			for _, n := range nodes {
				n.Signal(t, syscall.SIGCONT)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

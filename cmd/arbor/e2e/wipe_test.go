package e2e

import (
	"os"
	"testing"
	"time"
)

// TestWipedMemberKeepsAcknowledgedWrite is issue 13's scenario on real
// processes: with one member down, a write is acknowledged by the other
// two; the leader is killed, the other member's data directory is lost
// and it restarts empty under the same id, and the member that missed the
// write comes back. The wiped member must not vote the stale one in: no
// leader until the old leader returns (or an operator runs arbor
// recover), and then the write is on every node.
func TestWipedMemberKeepsAcknowledgedWrite(t *testing.T) {
	c := StartCluster(t, 3, "--write-timeout", "2s")
	leader := c.WaitStable(t, c.Nodes...)
	others := c.Others(leader)
	stale, wiped := others[0], others[1]
	stale.Kill(t)
	wantResponse(t, "PUT with one member down", wiped.Do(t, "PUT", "/acked.json", `"kept"`), 200, `"kept"`)

	leader.Kill(t)
	wiped.Kill(t)
	if err := os.RemoveAll(wiped.DataDir); err != nil {
		t.Fatal(err)
	}
	wiped.Restart(t)
	stale.Restart(t)

	// Fast timing elects a leader in well under a second when it can.
	window := time.Now().Add(4 * time.Second)
	sawCatchingUp := false
	for time.Now().Before(window) {
		for _, n := range []*Node{stale, wiped} {
			st, ok := n.Status()
			if ok && st.Role == "leader" {
				t.Fatalf("%s became leader while the only other copy of the acknowledged write was down: the write would be lost", n.Name)
			}
			for _, m := range st.Members {
				sawCatchingUp = sawCatchingUp || (n == wiped && m.Self && m.CatchingUp)
			}
		}
		time.Sleep(50 * time.Millisecond) // poll, bounded by the window
	}
	if !sawCatchingUp {
		t.Errorf("the wiped member's /status never showed it catching up")
	}
	if r, err := stale.TryDo("PUT", "/probe.json", "1"); err == nil && r.Status != 503 {
		t.Fatalf("a write without a leader answered %d %s, want 503", r.Status, r.Body)
	}

	leader.Restart(t)
	c.WaitStable(t, c.Nodes...)
	for _, n := range c.Nodes {
		wantResponse(t, "the acknowledged write on "+n.Name, n.Do(t, "GET", "/acked.json", ""), 200, `"kept"`)
		wantResponse(t, "the refused probe on "+n.Name, n.Do(t, "GET", "/probe.json", ""), 200, `null`)
	}
	if _, err := os.Stat(wiped.DataDir + "/catching-up"); !os.IsNotExist(err) {
		t.Fatalf("the wiped member is ready but still marked as catching up: %v", err)
	}
	if st, ok := wiped.Status(); !ok || st.Members == nil {
		t.Fatalf("no /status from the wiped member")
	} else {
		for _, m := range st.Members {
			if m.Self && (m.CatchingUp || m.Suffrage != "Voter") {
				t.Fatalf("the wiped member after catching up: %+v", m)
			}
		}
	}
}

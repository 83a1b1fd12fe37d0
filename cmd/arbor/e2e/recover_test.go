package e2e

import (
	"strings"
	"testing"
)

// TestRecoverFromQuorumLoss: two of three nodes are lost for good; arbor
// recover on the stopped survivor makes it the whole cluster; it starts,
// leads alone, serves every acknowledged write and takes new ones. The
// command refuses a running node and, without a terminal, needs its
// acknowledging flag.
func TestRecoverFromQuorumLoss(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	for _, k := range []string{"a", "b", "c"} {
		wantResponse(t, "write "+k, leader.Do(t, "PUT", "/kept/"+k+".json", `"`+k+`"`), 200, `"`+k+`"`)
	}
	n1 := c.Nodes[0]
	// A linearizable read through n1 means n1 has applied every write.
	wantResponse(t, "read through n1", n1.Do(t, "GET", "/kept.json", ""), 200, `{"a":"a","b":"b","c":"c"}`)
	// The cluster's --raft-addr comes after the harness's default.
	i := -1
	for j, a := range n1.args {
		if a == "--raft-addr" {
			i = j
		}
	}
	if i < 0 {
		t.Fatal("no --raft-addr among n1's flags")
	}
	recoverArgs := []string{"recover", "--data-dir", n1.DataDir, "--node-id", "n1", "--voters", "n1=" + n1.args[i+1]}

	if code, out := Run(t, append(recoverArgs, "--i-understand-acknowledged-writes-may-be-lost")...); code != 1 || !strings.Contains(out, "stop the node first") {
		t.Fatalf("arbor recover on a running node: exit %d\n%s", code, out)
	}
	c.Nodes[1].Kill(t)
	c.Nodes[2].Kill(t)
	n1.Kill(t)

	code, out := Run(t, recoverArgs...)
	if code != 2 || !strings.Contains(out, "--i-understand-acknowledged-writes-may-be-lost") || !strings.Contains(out, "current configuration:") {
		t.Fatalf("arbor recover without a terminal or the flag: exit %d\n%s", code, out)
	}
	code, out = Run(t, append(recoverArgs, "--i-understand-acknowledged-writes-may-be-lost")...)
	if code != 0 || !strings.Contains(out, "recovered") || !strings.Contains(out, "n3=") || !strings.Contains(out, "RECOVERY") {
		t.Fatalf("arbor recover: exit %d\n%s", code, out)
	}

	n1.Restart(t)
	n1.WaitReady(t)
	wantResponse(t, "read after the recovery", n1.Do(t, "GET", "/kept.json", ""), 200, `{"a":"a","b":"b","c":"c"}`)
	wantResponse(t, "write after the recovery", n1.Do(t, "PUT", "/after.json", `true`), 200, `true`)
	st, ok := n1.Status()
	if !ok || st.Role != "leader" || len(st.Members) != 1 {
		t.Fatalf("/status after the recovery: %+v", st)
	}
}

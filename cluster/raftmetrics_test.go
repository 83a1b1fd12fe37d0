package cluster

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// stageCounts gathers reg and returns the number of observations per stage
// of arbor_raft_stage_seconds.
func stageCounts(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "arbor_raft_stage_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" {
					got[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return got
}

func TestRaftStageTimingsReachPrometheus(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	reg := prometheus.NewRegistry()
	if err := n.RegisterMetrics(reg); err != nil {
		t.Fatalf("RegisterMetrics: %v", err)
	}
	before := stageCounts(t, reg)
	const writes = 5
	for i := 0; i < writes; i++ {
		propose(t, n, set("/a", `1`))
	}
	after := stageCounts(t, reg)
	// Every write is stored by the leader, committed and applied; the
	// timings are process-wide, so other nodes may add to them too.
	for _, stage := range []string{"propose_local", "leader_store", "bolt_store_logs", "commit", "fsm_apply"} {
		if d := after[stage] - before[stage]; d < writes {
			t.Errorf("stage %s: %d observations for %d writes (before %v, after %v)", stage, d, writes, before, after)
		}
	}
	for stage := range after {
		known := stage == stageProposeLocal || stage == stageForward
		for _, s := range raftStages {
			known = known || s == stage
		}
		if !known {
			t.Errorf("unexpected stage %q", stage)
		}
	}
}

func TestForwardedWritesAreTimed(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	follower := c.follower(leader)
	reg := prometheus.NewRegistry()
	if err := follower.RegisterMetrics(reg); err != nil {
		t.Fatalf("RegisterMetrics: %v", err)
	}
	before := stageCounts(t, reg)
	const writes = 3
	for i := 0; i < writes; i++ {
		propose(t, follower, set("/f", `1`))
	}
	after := stageCounts(t, reg)
	if d := after[stageForward] - before[stageForward]; d < writes {
		t.Errorf("forward: %d observations for %d forwarded writes", d, writes)
	}
	if d := after["follower_store"] - before["follower_store"]; d < writes {
		t.Errorf("follower_store: %d observations for %d writes", d, writes)
	}
}

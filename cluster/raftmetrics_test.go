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

// stageDeltas registers observed's metrics, proposes writes through
// writer and returns how many observations each stage gained meanwhile
// (and the stages seen afterwards).
func stageDeltas(t *testing.T, observed, writer *Node, writes int) (delta, after map[string]uint64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := observed.RegisterMetrics(reg); err != nil {
		t.Fatalf("RegisterMetrics: %v", err)
	}
	before := stageCounts(t, reg)
	for i := 0; i < writes; i++ {
		propose(t, writer, set("/a", `1`))
	}
	after = stageCounts(t, reg)
	delta = map[string]uint64{}
	for stage, n := range after {
		delta[stage] = n - before[stage]
	}
	return delta, after
}

func TestRaftStageTimingsReachPrometheus(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	const writes = 5
	delta, after := stageDeltas(t, n, n, writes)
	// Every write is stored by the leader, committed and applied; the
	// timings are process-wide, so other nodes may add to them too.
	for _, stage := range []string{"propose_local", "leader_store", "bolt_store_logs", "commit", "fsm_apply"} {
		if delta[stage] < writes {
			t.Errorf("stage %s: %d observations for %d writes (after %v)", stage, delta[stage], writes, after)
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
	follower := c.follower(c.waitLeader())
	const writes = 3
	delta, _ := stageDeltas(t, follower, follower, writes)
	if delta[stageForward] < writes {
		t.Errorf("forward: %d observations for %d forwarded writes", delta[stageForward], writes)
	}
	if delta["follower_store"] < writes {
		t.Errorf("follower_store: %d observations for %d writes", delta["follower_store"], writes)
	}
}

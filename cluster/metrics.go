package cluster

import (
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// RegisterMetrics registers the node's Raft gauges with reg. Values are
// read at scrape time, so nothing runs between scrapes.
func (n *Node) RegisterMetrics(reg prometheus.Registerer) error {
	gauge := func(name, help string, fn func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "arbor", Subsystem: "raft", Name: name, Help: help,
		}, fn)
	}
	counter := func(name, help string, fn func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "arbor", Subsystem: "raft", Name: name, Help: help,
		}, fn)
	}
	collectors := []prometheus.Collector{
		gauge("state", "Raft state of this node: 0 follower, 1 candidate, 2 leader, 3 shutdown.",
			func() float64 { return float64(stateNumber(n.raft.State())) }),
		gauge("is_leader", "1 when this node is the Raft leader.",
			func() float64 { return boolFloat(n.raft.State() == raft.Leader) }),
		gauge("term", "Current Raft term.",
			func() float64 { return float64(n.raft.CurrentTerm()) }),
		gauge("commit_index", "Index of the last committed Raft log entry known to this node.",
			func() float64 { return float64(n.raft.CommitIndex()) }),
		gauge("applied_index", "Index of the last Raft log entry handed to the state machine.",
			func() float64 { return float64(n.raft.AppliedIndex()) }),
		gauge("fsm_applied_index", "Index of the last command the state machine applied.",
			func() float64 { return float64(n.fsm.AppliedIndex()) }),
		gauge("last_log_index", "Index of the last entry in this node's Raft log.",
			func() float64 { return float64(n.raft.LastIndex()) }),
		gauge("last_snapshot_duration_seconds", "Time taken to write the last snapshot (0 until one is written).",
			func() float64 { return n.snaps.lastSnapshot().Duration.Seconds() }),
		gauge("last_snapshot_size_bytes", "Size of the last snapshot written (0 until one is written).",
			func() float64 { return float64(n.snaps.lastSnapshot().Size) }),
		gauge("last_snapshot_index", "Log index covered by the last snapshot written by this process.",
			func() float64 { return float64(n.snaps.lastSnapshot().Index) }),
		counter("snapshots_total", "Snapshots written (taken or installed) by this process.",
			func() float64 { return float64(n.snaps.count.Load()) }),
		counter("snapshot_failures_total", "Snapshots that failed or were cancelled.",
			func() float64 { return float64(n.snaps.failures.Load()) }),
		counter("snapshot_installs_total", "Snapshots installed from the leader since start (this node had fallen behind the log).",
			func() float64 { return float64(n.rfsm.installs.Load()) }),
		counter("forwarded_writes_total", "Writes this node forwarded to the leader.",
			func() float64 { return float64(n.forwarded.Load()) }),
		counter("remote_read_index_rounds_total", "Read-index requests this node sent to the leader (concurrent reads share one).",
			func() float64 { return float64(n.remoteReads.rounds.Load()) }),
		counter("verify_rounds_total", "Quorum rounds run for linearizable reads (concurrent reads share one).",
			func() float64 { return float64(n.verify.rounds.Load()) }),
		counter("leader_changes_total", "Times this node saw a new Raft leader.",
			func() float64 { return float64(n.leaderChanges.Load()) }),
		counter("writes_too_large_total", "Writes this node refused (413) for their size or for the nodes they create or change, before logging them.",
			func() float64 { return float64(n.tooLarge.Load()) }),
	}
	collectors = append(collectors, raftStageSeconds)
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("cluster: register metrics: %w", err)
		}
	}
	return nil
}

// stateNumber gives each Raft state a stable gauge value.
func stateNumber(s raft.RaftState) int {
	switch s {
	case raft.Follower:
		return 0
	case raft.Candidate:
		return 1
	case raft.Leader:
		return 2
	default:
		return 3
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

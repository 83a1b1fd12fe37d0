package cluster

import (
	"strings"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// raftStages names the timings hashicorp/raft and raft-boltdb measure on
// the write path (go-metrics keys) after the stage label they get in
// arbor_raft_stage_seconds. Together they answer "where does a write's
// time go" (docs/PERFORMANCE.md): the leader's own log write, the
// round trip to a follower (which includes the follower's log write), the
// commit, and the hand-off to the state machine.
var raftStages = map[string]string{
	"raft.leader.dispatchLog":            "leader_store",
	"raft.replication.appendEntries.rpc": "replicate_rpc",
	"raft.rpc.appendEntries":             "follower_append",
	"raft.rpc.appendEntries.storeLogs":   "follower_store",
	"raft.commitTime":                    "commit",
	"raft.fsm.enqueue":                   "fsm_enqueue",
	"raft.fsm.applyBatch":                "fsm_apply",
	"raft.boltdb.storeLogs":              "bolt_store_logs",
	"raft.replication.heartbeat":         "heartbeat_rpc",
	"raft.snapshot.takeSnapshot":         "snapshot_take",
	"raft.rpc.installSnapshot":           "snapshot_install",
	"raft.fsm.restore":                   "fsm_restore",
	"raft.compactLogs":                   "compact_logs",
}

// Stages Arbor measures itself around Raft, in the same histogram.
const (
	// stageProposeLocal is a write on the leader from raft.Apply to the
	// FSM's answer: commit plus apply plus the hand-offs in between.
	stageProposeLocal = "propose_local"
	// stageForward is a write a follower forwarded, to the leader's answer.
	stageForward = "forward"
)

// observeStage records the time since start under stage.
func observeStage(stage prometheus.Observer, start time.Time) {
	stage.Observe(time.Since(start).Seconds())
}

// raftStageSeconds is process-wide, like go-metrics' global sink that
// feeds it: in a test process running several nodes their timings mix.
// Buckets run from 25 µs to about 1.6 s in factors of two.
var raftStageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "arbor", Subsystem: "raft", Name: "stage_seconds",
	Help:    "Time spent in stages of the write path: as hashicorp/raft and raft-boltdb measure them (leader_store, replicate_rpc, follower_store, commit, fsm_apply, ...) and around Raft (propose_local on the leader, forward on a follower).",
	Buckets: prometheus.ExponentialBuckets(25e-6, 2, 17),
}, []string{"stage"})

// The write path's observers, resolved once: a label lookup per write
// (and per Raft timing) would hash the label each time.
var (
	proposeLocalSeconds = raftStageSeconds.WithLabelValues(stageProposeLocal)
	forwardSeconds      = raftStageSeconds.WithLabelValues(stageForward)
	// raftStageObservers maps a go-metrics key to its stage's observer.
	raftStageObservers = func() map[string]prometheus.Observer {
		m := make(map[string]prometheus.Observer, len(raftStages))
		for key, stage := range raftStages {
			m[key] = raftStageSeconds.WithLabelValues(stage)
		}
		return m
	}()
)

var installRaftMetricsOnce sync.Once

// installRaftMetrics routes go-metrics, which hashicorp/raft and
// raft-boltdb report through, to raftStageSeconds. Only timers named in
// raftStages pass go-metrics' prefix filter, so the rest cost a lookup.
func installRaftMetrics() {
	installRaftMetricsOnce.Do(func() {
		cfg := metrics.DefaultConfig("")
		cfg.EnableHostname = false
		cfg.EnableRuntimeMetrics = false
		cfg.EnableServiceLabel = false
		cfg.EnableTypePrefix = false
		cfg.TimerGranularity = time.Millisecond
		cfg.FilterDefault = false
		for key := range raftStages {
			cfg.AllowedPrefixes = append(cfg.AllowedPrefixes, key)
		}
		// NewGlobal only fails for a sink it cannot build; ours cannot fail.
		_, _ = metrics.NewGlobal(cfg, stageSink{})
	})
}

// stageSink is a go-metrics sink that keeps timers as histograms and drops
// gauges and counters (the node's own collectors cover those).
type stageSink struct{}

func (stageSink) observe(key []string, ms float32) {
	// A prefix filter lets "raft.rpc.appendEntries.storeLogs" through for
	// "raft.rpc.appendEntries" too, so the exact key decides; per-peer
	// legacy keys (a trailing peer ID) are off (NoLegacyTelemetry).
	if o, ok := raftStageObservers[strings.Join(key, ".")]; ok {
		o.Observe(float64(ms) / 1e3)
	}
}

func (s stageSink) AddSample(key []string, val float32) { s.observe(key, val) }
func (s stageSink) AddSampleWithLabels(key []string, val float32, _ []metrics.Label) {
	s.observe(key, val)
}
func (stageSink) SetGauge([]string, float32)                                     {}
func (stageSink) SetGaugeWithLabels([]string, float32, []metrics.Label)          {}
func (stageSink) SetPrecisionGauge([]string, float64)                            {}
func (stageSink) SetPrecisionGaugeWithLabels([]string, float64, []metrics.Label) {}
func (stageSink) EmitKey([]string, float32)                                      {}
func (stageSink) IncrCounter([]string, float32)                                  {}
func (stageSink) IncrCounterWithLabels([]string, float32, []metrics.Label)       {}

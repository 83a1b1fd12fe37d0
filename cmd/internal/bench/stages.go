package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// stageMetric is the histogram in which every Arbor node keeps the
// timings hashicorp/raft and raft-boltdb measure on the write path
// (cluster/raftmetrics.go).
const stageMetric = "arbor_raft_stage_seconds"

// stageOrder is the order in which stages are printed: a write's path on
// the leader, then on a follower, then the rest.
var stageOrder = []string{
	"forward", "propose_local", "leader_store", "replicate_rpc", "commit", "fsm_enqueue", "fsm_apply",
	"follower_append", "follower_store", "bolt_store_logs",
}

// stageStat is one stage's share of a run on one node.
type stageStat struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
}

// nodeStages is what one node's /metrics said about a run: the difference
// between a scrape before and one after.
type nodeStages struct {
	Addr   string               `json:"addr"`
	Leader bool                 `json:"leader"`
	Stages map[string]stageStat `json:"stages"`
}

// stageSnapshot is one scrape: count and sum per stage, and whether the
// node led.
type stageSnapshot struct {
	leader bool
	count  map[string]uint64
	sum    map[string]float64
}

// scrapeStages reads stageMetric and arbor_raft_is_leader from the node at
// base (https://host:port). /metrics needs no credentials (SPEC §10).
func scrapeStages(ctx context.Context, conf *tls.Config, base string) (stageSnapshot, error) {
	c := newBenchHTTPClient(conf, 5*time.Second)
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return stageSnapshot{}, fmt.Errorf("metrics of %s: %w", base, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return stageSnapshot{}, fmt.Errorf("metrics of %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return stageSnapshot{}, fmt.Errorf("metrics of %s: status %s", base, resp.Status)
	}
	return parseStages(resp.Body)
}

// parseStages extracts a stageSnapshot from Prometheus text.
func parseStages(r io.Reader) (stageSnapshot, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return stageSnapshot{}, fmt.Errorf("parse metrics: %w", err)
	}
	s := stageSnapshot{count: map[string]uint64{}, sum: map[string]float64{}}
	if mf := mfs["arbor_raft_is_leader"]; mf != nil && len(mf.GetMetric()) > 0 {
		s.leader = mf.GetMetric()[0].GetGauge().GetValue() == 1
	}
	mf := mfs[stageMetric]
	if mf == nil {
		return s, nil
	}
	for _, m := range mf.GetMetric() {
		stage := labelValue(m, "stage")
		if h := m.GetHistogram(); stage != "" && h != nil {
			s.count[stage] = h.GetSampleCount()
			s.sum[stage] = h.GetSampleSum()
		}
	}
	return s, nil
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// stagesBetween is what happened on one node between two scrapes; stages
// that did not run are left out. The leader is as of the second scrape.
func stagesBetween(addr string, before, after stageSnapshot) nodeStages {
	ns := nodeStages{Addr: addr, Leader: after.leader, Stages: map[string]stageStat{}}
	for stage, n := range after.count {
		if n <= before.count[stage] { // idle, or restarted in between
			continue
		}
		d := n - before.count[stage]
		ns.Stages[stage] = stageStat{Count: d, MeanMs: round3((after.sum[stage] - before.sum[stage]) / float64(d) * 1e3)}
	}
	return ns
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// writeStages prints the stage table of a run: one row per node, one
// column per stage, mean milliseconds with the count.
func writeStages(b *strings.Builder, nodes []nodeStages) {
	cols, rows := stageTable(nodes)
	if len(cols) == 0 {
		return
	}
	b.WriteString("raft stages (mean ms per stage run on each node during the measurement, from its /metrics; count in brackets):\n")
	fmt.Fprintf(b, "  %-26s", "node")
	for _, c := range cols {
		fmt.Fprintf(b, " %16s", c)
	}
	b.WriteString("\n")
	for _, row := range rows {
		fmt.Fprintf(b, "  %-26s", row[0])
		for _, cell := range row[1:] {
			fmt.Fprintf(b, " %16s", cell)
		}
		b.WriteString("\n")
	}
}

// stageTable lays out nodes for printing: the stage columns, and per node
// its name (address, "(leader)" when it led) followed by one cell per
// column.
func stageTable(nodes []nodeStages) (cols []string, rows [][]string) {
	cols = stageColumns(nodes)
	for _, n := range nodes {
		name := strings.TrimPrefix(n.Addr, "https://")
		if n.Leader {
			name += " (leader)"
		}
		row := []string{name}
		for _, c := range cols {
			row = append(row, stageCell(n, c))
		}
		rows = append(rows, row)
	}
	return cols, rows
}

// stageCell is "mean (count)" of one stage on one node.
func stageCell(n nodeStages, stage string) string {
	s, ok := n.Stages[stage]
	if !ok {
		return noFigure
	}
	return fmt.Sprintf("%.3f (%d)", s.MeanMs, s.Count)
}

// stageColumns lists the stages any node ran, in stageOrder.
func stageColumns(nodes []nodeStages) []string {
	var cols []string
	for _, n := range nodes {
		for stage := range n.Stages {
			if !slices.Contains(cols, stage) {
				cols = append(cols, stage)
			}
		}
	}
	rank := func(s string) int {
		if i := slices.Index(stageOrder, s); i >= 0 {
			return i
		}
		return len(stageOrder)
	}
	slices.SortFunc(cols, func(a, c string) int {
		if d := rank(a) - rank(c); d != 0 {
			return d
		}
		return strings.Compare(a, c)
	})
	return cols
}

// stageWatcher scrapes every node before and after a run against Arbor.
// A node that cannot be scraped (an older build, /metrics unreachable) is
// left out; the run itself does not depend on it.
type stageWatcher struct {
	conf   *tls.Config
	addrs  []string
	before map[string]stageSnapshot // by address, the nodes scraped
}

func newStageWatcher(ctx context.Context, conf *tls.Config, addrs []string) *stageWatcher {
	w := &stageWatcher{conf: conf, addrs: addrs, before: map[string]stageSnapshot{}}
	for _, a := range addrs {
		if s, err := scrapeStages(ctx, conf, a); err == nil {
			w.before[a] = s
		}
	}
	return w
}

// finish scrapes again and returns each node's stages.
func (w *stageWatcher) finish(ctx context.Context) []nodeStages {
	var out []nodeStages
	for _, a := range w.addrs {
		before, ok := w.before[a]
		if !ok {
			continue
		}
		after, err := scrapeStages(ctx, w.conf, a)
		if err != nil {
			continue
		}
		if ns := stagesBetween(a, before, after); len(ns.Stages) > 0 {
			out = append(out, ns)
		}
	}
	return out
}

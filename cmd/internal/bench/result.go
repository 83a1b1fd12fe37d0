package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// benchResult is the outcome of one run, printed as text or, with --json,
// as one JSON object (one line, so that results append to a file that
// `arbor bench --report` reads).
type benchResult struct {
	Target    string  `json:"target"`
	Workload  string  `json:"workload"`
	Clients   int     `json:"clients"`
	Nodes     int     `json:"nodes"`
	ValueSize int     `json:"value_size"`
	Keys      int     `json:"keys"`
	Fields    int     `json:"fields,omitempty"`
	Seconds   float64 `json:"duration_s"`
	Ops       uint64  `json:"ops"`
	Errors    uint64  `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// Latency covers successful requests only; errors are counted apart.
	Latency    latencySummary            `json:"latency_ms"`
	ByKind     map[string]latencySummary `json:"by_kind,omitempty"`
	ErrorKinds map[string]uint64         `json:"error_kinds,omitempty"`
	// RaftStages is where Arbor's nodes spent the time, from their own
	// Raft timings (--target arbor only).
	RaftStages []nodeStages `json:"raft_stages,omitempty"`
}

// latencySummary is a histogram's digest in milliseconds.
type latencySummary struct {
	Ops  uint64  `json:"ops"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

func summarize(h *histogram) latencySummary {
	return latencySummary{
		Ops:  h.count(),
		Mean: ms(h.mean()),
		P50:  ms(h.quantile(0.50)),
		P90:  ms(h.quantile(0.90)),
		P99:  ms(h.quantile(0.99)),
		Max:  ms(h.maxValue()),
	}
}

// ms is d in milliseconds, rounded to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// newBenchResult merges the clients' measurements.
func newBenchResult(cfg benchConfig, stats []*clientStats, elapsed time.Duration) benchResult {
	res := benchResult{
		Target:    cfg.Target,
		Workload:  cfg.Workload,
		Clients:   cfg.Clients,
		Nodes:     len(cfg.Addrs),
		ValueSize: cfg.ValueSize,
		Keys:      cfg.Keys,
		Seconds:   elapsed.Seconds(),
	}
	if cfg.Workload == "patch-multi" {
		res.Fields = cfg.Fields
	}
	var all histogram
	var byKind [opKindCount]histogram
	errs := map[string]uint64{}
	for _, st := range stats {
		for k, h := range st.hists {
			if h != nil {
				all.merge(h)
				byKind[k].merge(h)
			}
		}
		for k, n := range st.errs {
			errs[k] += n
			res.Errors += n
		}
	}
	res.Ops = all.count()
	if elapsed > 0 {
		res.OpsPerSec = float64(res.Ops) / elapsed.Seconds()
	}
	res.Latency = summarize(&all)
	kinds := 0
	for k := range byKind {
		if byKind[k].count() > 0 {
			kinds++
		}
	}
	if kinds > 1 {
		res.ByKind = map[string]latencySummary{}
		for k := range byKind {
			if byKind[k].count() > 0 {
				res.ByKind[opKind(k).String()] = summarize(&byKind[k])
			}
		}
	}
	if len(errs) > 0 {
		res.ErrorKinds = errs
	}
	return res
}

// writeJSON prints r as one line of JSON.
func (r benchResult) writeJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeText prints r for a person.
func (r benchResult) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "target:     %s, %d node(s)\n", r.Target, r.Nodes)
	fmt.Fprintf(&b, "workload:   %s, %d clients, %d B values, %d keys", r.Workload, r.Clients, r.ValueSize, r.Keys)
	if r.Fields > 0 {
		fmt.Fprintf(&b, ", %d keys per request", r.Fields)
	}
	fmt.Fprintf(&b, "\nrequests:   %d ok, %d errors in %.2fs\n", r.Ops, r.Errors, r.Seconds)
	fmt.Fprintf(&b, "throughput: %.0f ops/s\n", r.OpsPerSec)
	fmt.Fprintf(&b, "latency:    %s\n", latencyLine(r.Latency))
	for _, k := range slices.Sorted(maps.Keys(r.ByKind)) {
		fmt.Fprintf(&b, "  %-18s %d ok, %s\n", k+":", r.ByKind[k].Ops, latencyLine(r.ByKind[k]))
	}
	if len(r.ErrorKinds) > 0 {
		b.WriteString("errors:\n")
		kinds := slices.SortedFunc(maps.Keys(r.ErrorKinds), func(a, c string) int {
			return cmp.Or(cmp.Compare(r.ErrorKinds[c], r.ErrorKinds[a]), strings.Compare(a, c))
		})
		for _, k := range kinds {
			fmt.Fprintf(&b, "  %8d  %s\n", r.ErrorKinds[k], k)
		}
	}
	writeStages(&b, r.RaftStages)
	_, err := io.WriteString(w, b.String())
	return err
}

func latencyLine(l latencySummary) string {
	return fmt.Sprintf("p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms (mean %.3f ms)", l.P50, l.P90, l.P99, l.Max, l.Mean)
}

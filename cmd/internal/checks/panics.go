package checks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// PanicMetric counts the panics a node recovered from while serving
// requests and streams; each one is a bug the node survived.
const PanicMetric = "arbor_panics_recovered_total"

// MetricsReader reads a node's /metrics (client.Client does).
type MetricsReader interface {
	Do(ctx context.Context, node, method, path, body string, headers ...string) (client.Response, error)
}

// metricsAttempts is how often a node's /metrics is asked for before it
// counts as unanswered: a recovered node may still be catching up.
const metricsAttempts = 3

// PanicsRecovered reads every node's PanicMetric and fails when one is
// above zero, or when a node's count cannot be read (a panic could hide
// there). A node restarted during the run lost its count: the log scan
// (Logs) finds its panics instead.
func PanicsRecovered(ctx context.Context, r MetricsReader, nodes []string) Result {
	b := NewBuilder("no panics recovered (" + PanicMetric + " on every node)")
	var counts []string
	for _, n := range nodes {
		v, err := readPanics(ctx, r, n)
		switch {
		case err != nil:
			b.Fail("%s: %v", n, err)
			counts = append(counts, n+" ?")
		case v > 0:
			b.Fail("%s: %s %v (its log says where)", n, PanicMetric, v)
			counts = append(counts, fmt.Sprintf("%s %v", n, v))
		default:
			counts = append(counts, n+" 0")
		}
	}
	return b.Done("recovered panics: " + strings.Join(counts, ", "))
}

// readPanics reads node's PanicMetric, asking up to metricsAttempts times.
func readPanics(ctx context.Context, r MetricsReader, node string) (float64, error) {
	var last error
	for i := range metricsAttempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Second):
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := r.Do(rctx, node, "GET", "/metrics", "")
		cancel()
		switch {
		case err != nil:
			last = fmt.Errorf("GET /metrics: %w", err)
		case resp.Status != 200:
			last = fmt.Errorf("GET /metrics: status %d", resp.Status)
		default:
			v, ok := MetricValue(string(resp.Body), PanicMetric)
			if !ok {
				return 0, fmt.Errorf("/metrics has no %s", PanicMetric)
			}
			return v, nil
		}
	}
	return 0, last
}

// MetricValue is the value of the unlabelled metric name in a Prometheus
// text exposition; ok is false when it is not there.
func MetricValue(exposition, name string) (v float64, ok bool) {
	for _, line := range strings.Split(exposition, "\n") {
		rest, found := strings.CutPrefix(line, name+" ")
		if !found {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return f, err == nil
	}
	return 0, false
}

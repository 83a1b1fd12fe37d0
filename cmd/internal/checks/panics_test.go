package checks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// fakeMetrics answers /metrics per node: a body, or an error.
type fakeMetrics map[string]any

func (f fakeMetrics) Do(_ context.Context, node, method, path, _ string, _ ...string) (client.Response, error) {
	if method != "GET" || path != "/metrics" {
		return client.Response{Status: 404}, nil
	}
	switch v := f[node].(type) {
	case string:
		return client.Response{Status: 200, Body: []byte(v)}, nil
	case int:
		return client.Response{Status: v}, nil
	case error:
		return client.Response{}, v
	}
	return client.Response{}, errors.New("no such node")
}

const metricsHead = "# HELP arbor_panics_recovered_total Panics recovered.\n# TYPE arbor_panics_recovered_total counter\n"

func TestPanicsRecovered(t *testing.T) {
	ctx := context.Background()
	nodes := []string{"n1", "n2", "n3"}
	clean := fakeMetrics{
		"n1": metricsHead + "arbor_panics_recovered_total 0\narbor_stream_open 3\n",
		"n2": "arbor_panics_recovered_total_other 5\narbor_panics_recovered_total 0\n",
		"n3": metricsHead + "arbor_panics_recovered_total 0\n",
	}
	r := PanicsRecovered(ctx, clean, nodes)
	wantOK(t, r)
	if r.Summary != "recovered panics: n1 0, n2 0, n3 0" {
		t.Errorf("summary %q", r.Summary)
	}

	one := fakeMetrics{"n1": clean["n1"], "n2": metricsHead + "arbor_panics_recovered_total 2\n", "n3": clean["n3"]}
	wantFail(t, PanicsRecovered(ctx, one, nodes), "n2: arbor_panics_recovered_total 2")

	// A count that cannot be read may hide a panic.
	wantFail(t, PanicsRecovered(ctx, fakeMetrics{"n1": clean["n1"], "n2": clean["n2"], "n3": "arbor_http_requests_total 1\n"}, nodes), "n3: /metrics has no arbor_panics_recovered_total")
	wantFail(t, PanicsRecovered(ctx, fakeMetrics{"n1": clean["n1"], "n2": 503, "n3": clean["n3"]}, nodes), "n2: GET /metrics: status 503")
}

func TestLogsRecoveredPanic(t *testing.T) {
	for _, line := range []string{
		`time=x level=ERROR msg="panic serving request" method=GET path=/a.json panic="boom"`,
		`time=x level=ERROR msg="panic serving a stream" path=/a panic="boom"`,
		`2026/01/01 00:00:00 http: panic serving 127.0.0.1:5555: boom`,
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "n1.log"), []byte("time=x level=INFO msg=ok\n"+line+"\n"), 0o644)
		wantFail(t, Logs(dir), "n1.log:2")
	}
}

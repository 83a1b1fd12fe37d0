// Command plot draws the cost curves of `make bench-scale`: it reads the raw
// figures scripts/bench/scale.sh writes (scale.tsv) and writes one small
// SVG per curve, so that docs/PERFORMANCE.md shows each figure's growth
// at a glance. The SVG is written by hand, with no dependency.
//
//	go run ./scripts/bench/plot -in bin/bench-scale/scale.tsv -out docs/scale
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Curve is one SVG to draw: which rows (phase "size" or "subs") and
// columns of the table make its lines.
type Curve struct {
	File  string
	Phase string
	XCol  string
	Chart Chart
	// YCols are the columns of the chart's lines, one per entry of
	// Chart.Lines (whose names they are given with).
	YCols []string
}

// Curves are the charts `make bench-scale` puts in docs/PERFORMANCE.md.
// Against the database size, x is logarithmic (10k to 10M leaves);
// latencies keep a linear y axis from 0, where a flat curve looks flat,
// and the figures that grow with the data a logarithmic one, where
// proportional growth is a straight line.
var Curves = []Curve{
	sizeCurve("leaves-write-latency.svg", "Write latency (one client, on the leader)", "latency (ms)", false,
		"p50", "write_p50_ms", "p99", "write_p99_ms"),
	sizeCurve("leaves-read-latency.svg", "Local read latency (one client, on the leader)", "latency (ms)", false,
		"p50", "read_p50_ms", "p99", "read_p99_ms"),
	sizeCurve("leaves-snapshot-time.svg", "Snapshot time (on SIGTERM, one follower)", "seconds (log scale)", true,
		"snapshot", "snapshot_s"),
	sizeCurve("leaves-snapshot-size.svg", "Snapshot size on disk", "MB (log scale)", true,
		"state.bin", "snapshot_mb"),
	sizeCurve("leaves-restart.svg", "Stop and restart (one follower)", "seconds (log scale)", true,
		"restart to /readyz", "restart_s", "SIGTERM to exit", "stop_s"),
	sizeCurve("leaves-rss.svg", "Resident memory per node", "RSS (MB, log scale)", true,
		"max of 3 nodes", "rss_max_mb", "mean", "rss_mean_mb"),
	subsCurve("subscribers-write-latency.svg", "Write latency with idle subscribers", "latency (ms)",
		"p50", "write_p50_ms", "p99", "write_p99_ms"),
	subsCurve("subscribers-read-latency.svg", "Local read latency with idle subscribers", "latency (ms)",
		"p50", "read_p50_ms", "p99", "read_p99_ms"),
	subsCurve("subscribers-rss.svg", "Resident memory per node with idle subscribers", "RSS (MB)",
		"max of 3 nodes", "rss_max_mb", "mean", "rss_mean_mb"),
}

func sizeCurve(file, title, ylabel string, ylog bool, lines ...string) Curve {
	c := curve(file, "size", "leaves", lines)
	c.Chart = Chart{Title: title, XLabel: "leaves in the database (log scale)", YLabel: ylabel, XLog: true, YLog: ylog, Lines: c.Chart.Lines}
	return c
}

func subsCurve(file, title, ylabel string, lines ...string) Curve {
	c := curve(file, "subs", "subscribers", lines)
	c.Chart = Chart{Title: title, XLabel: "idle SSE subscribers over the 3 nodes", YLabel: ylabel, Lines: c.Chart.Lines}
	return c
}

// curve pairs names and columns: lines is name, column, name, column….
func curve(file, phase, xcol string, lines []string) Curve {
	c := Curve{File: file, Phase: phase, XCol: xcol}
	for i := 0; i+1 < len(lines); i += 2 {
		c.Chart.Lines = append(c.Chart.Lines, Line{Name: lines[i]})
		c.YCols = append(c.YCols, lines[i+1])
	}
	return c
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "the `file` of raw figures scripts/bench/scale.sh wrote (scale.tsv; required)")
	out := fs.String("out", "docs/scale", "`directory` to write the SVGs into")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *in == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: plot -in scale.tsv [-out dir]")
		return 2
	}
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintf(stderr, "plot: %v\n", err)
		return 1
	}
	t, err := ReadTable(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "plot: %s: %v\n", *in, err)
		return 1
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "plot: %v\n", err)
		return 1
	}
	written, err := WriteCurves(t, Curves, *out)
	for _, name := range written {
		fmt.Fprintf(stdout, "plot: wrote %s\n", filepath.Join(*out, name))
	}
	if err != nil {
		fmt.Fprintf(stderr, "plot: %v\n", err)
		return 1
	}
	return 0
}

// WriteCurves draws each curve that has data into dir and returns the
// names of the files written. A curve with no measured point (e.g. no
// subscriber rows) is skipped, not drawn empty.
func WriteCurves(t *Table, curves []Curve, dir string) ([]string, error) {
	var written []string
	for _, c := range curves {
		chart := c.Chart
		chart.Lines = append([]Line(nil), c.Chart.Lines...)
		points := 0
		for i, col := range c.YCols {
			pts, err := t.Series(c.Phase, c.XCol, col)
			if err != nil {
				return written, fmt.Errorf("%s: %w", c.File, err)
			}
			chart.Lines[i].Points = pts
			points += len(pts)
		}
		if points == 0 {
			continue
		}
		var b bytes.Buffer
		if err := chart.Render(&b); err != nil {
			return written, fmt.Errorf("%s: %w", c.File, err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.File), b.Bytes(), 0o644); err != nil {
			return written, err
		}
		written = append(written, c.File)
	}
	return written, nil
}

package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgDoc is what a test reads back from a rendered chart.
type svgDoc struct {
	title   string
	texts   []string
	circles [][2]float64 // cx, cy in document order
	tips    []string     // the dots' tooltips
}

// parseSVG checks that b is well-formed XML with an <svg> root in the SVG
// namespace and collects its texts and dots.
func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	d := xml.NewDecoder(bytes.NewReader(b))
	depth, inText, inTitle, inTip := 0, false, false, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 && (e.Name.Local != "svg" || e.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root element %v, want svg in the SVG namespace", e.Name)
			}
			depth++
			inText, inTitle = e.Name.Local == "text", e.Name.Local == "title" && depth == 2
			inTip = e.Name.Local == "title" && depth > 2
			if e.Name.Local == "circle" {
				var c [2]float64
				for _, a := range e.Attr {
					v, _ := strconv.ParseFloat(a.Value, 64)
					switch a.Name.Local {
					case "cx":
						c[0] = v
					case "cy":
						c[1] = v
					}
				}
				doc.circles = append(doc.circles, c)
			}
		case xml.EndElement:
			depth--
			inText, inTitle, inTip = false, false, false
		case xml.CharData:
			switch {
			case inTip:
				doc.tips = append(doc.tips, string(e))
			case inTitle:
				doc.title = string(e)
			case inText:
				doc.texts = append(doc.texts, string(e))
			}
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced elements")
	}
	return doc
}

func render(t *testing.T, c Chart) svgDoc {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(&b); err != nil {
		t.Fatal(err)
	}
	return parseSVG(t, b.Bytes())
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

// The x axis runs from plotLeft+8 to plotRight-8 (the inset), the y axis
// from plotBottom up to plotTop.
var (
	xLeft, xRight = float64(plotLeft + 8), float64(plotRight - 8)
	xMid, yMid    = (xLeft + xRight) / 2, float64(plotTop+plotBottom) / 2
)

func TestPointsLandOnLogXLinearY(t *testing.T) {
	doc := render(t, Chart{
		Title: "Write <latency> & more", XLabel: "leaves", YLabel: "ms", XLog: true,
		Lines: []Line{{Name: "p50", Points: []Point{{1e4, 0}, {1e5, 5}, {1e6, 10}}}},
	})
	if doc.title != "Write <latency> & more" {
		t.Errorf("title %q", doc.title)
	}
	want := [][2]float64{{xLeft, plotBottom}, {xMid, yMid}, {xRight, plotTop}}
	if len(doc.circles) != len(want) {
		t.Fatalf("%d dots, want %d", len(doc.circles), len(want))
	}
	for i, w := range want {
		if c := doc.circles[i]; !near(c[0], w[0]) || !near(c[1], w[1]) {
			t.Errorf("dot %d at %v, want %v", i, c, w)
		}
	}
	for _, label := range []string{"10k", "100k", "1M", "0", "10", "leaves", "ms", "p50"} {
		if !slices.Contains(doc.texts, label) {
			t.Errorf("no text %q in %q", label, doc.texts)
		}
	}
}

func TestPointsLandOnLogY(t *testing.T) {
	// 3 to 70 spans the decades 1 to 100, so 10 is halfway up.
	doc := render(t, Chart{YLog: true, Lines: []Line{
		{Name: "a", Points: []Point{{0, 3}, {5, 10}}},
		{Name: "b", Points: []Point{{10, 70}}},
	}})
	if len(doc.circles) != 3 {
		t.Fatalf("%d dots, want 3", len(doc.circles))
	}
	if c := doc.circles[1]; !near(c[0], xMid) || !near(c[1], yMid) {
		t.Errorf("(5, 10) at %v, want (%v, %v)", c, xMid, yMid)
	}
	if c := doc.circles[2]; !near(c[1], yMid-(yMid-plotTop)*math.Log10(7)) {
		t.Errorf("(10, 70) at %v", c)
	}
	for _, label := range []string{"1", "2", "5", "10", "20", "50", "100", "a", "b"} {
		if !slices.Contains(doc.texts, label) {
			t.Errorf("no text %q in %q", label, doc.texts)
		}
	}
}

func TestRenderRefuses(t *testing.T) {
	var b bytes.Buffer
	if err := (Chart{}).Render(&b); err == nil {
		t.Error("a chart without points rendered")
	}
	if err := (Chart{YLog: true, Lines: []Line{{Points: []Point{{1, 0}}}}}).Render(&b); err == nil {
		t.Error("zero rendered on a log axis")
	}
}

func TestAxisTicks(t *testing.T) {
	// 0.2 * 3 is 0.6000000000000001 in floating point; the tick is 0.6.
	lo, hi, ticks, err := axis([]float64{0.1, 0.7}, false, true)
	if err != nil || lo != 0 || hi != 0.8 || !slices.Equal(ticks, []float64{0, 0.2, 0.4, 0.6, 0.8}) {
		t.Errorf("axis(0.1, 0.7) = %v %v %v %v", lo, hi, ticks, err)
	}
	for _, tc := range []struct{ raw, want float64 }{{0.07, 0.1}, {1.2, 2}, {3, 5}, {6, 10}, {2000, 2000}} {
		if got := niceStep(tc.raw); got != tc.want {
			t.Errorf("niceStep(%v) = %v, want %v", tc.raw, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{1e4, "10k"}, {1e7, "10M"}, {2500, "2.5k"}, {0.05, "0.05"}, {250, "250"}, {0, "0"}} {
		if got := tickLabel(tc.v); got != tc.want {
			t.Errorf("tickLabel(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

const sampleTSV = "phase\tleaves\tsubscribers\twrite_p50_ms\twrite_p99_ms\twrite_errors\tread_p50_ms\tread_p99_ms\tread_errors\tsnapshot_s\tsnapshot_mb\tstop_s\trestart_s\trss_max_mb\trss_mean_mb\trss_nodes_mb\tload_s\topen_s\tauto_snapshots\tn3_role\n" +
	"size\t10000\t0\t1.9\t5.9\t0\t0.25\t0.64\t0\t0.012\t0.3\t0.29\t0.22\t32\t30\t32/29/29\t0.4\t-\t0\tfollower\n" +
	"size\t100000\t0\t2.3\t7.0\t0\t0.20\t0.52\t0\t-\t-\t0.41\t0.34\t82\t77\t82/73/75\t1.2\t-\t0\tfollower\n" +
	"# 2026-12-08, a note\n"

func TestReadTableAndSeries(t *testing.T) {
	tab, err := ReadTable(strings.NewReader(sampleTSV))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 2 || len(tab.Notes) != 1 || tab.Notes[0] != "2026-12-08, a note" {
		t.Fatalf("rows %d, notes %q", len(tab.Rows), tab.Notes)
	}
	pts, err := tab.Series("size", "leaves", "snapshot_s")
	if err != nil || len(pts) != 1 || pts[0] != (Point{1e4, 0.012}) {
		t.Errorf("snapshot_s: %v %v (the unmeasured row must be skipped)", pts, err)
	}
	if pts, _ := tab.Series("subs", "subscribers", "rss_max_mb"); len(pts) != 0 {
		t.Errorf("subs rows: %v", pts)
	}
	if _, err := tab.Series("size", "leaves", "nope"); err == nil {
		t.Error("no error for a missing column")
	}
	if _, err := ReadTable(strings.NewReader("a\tb\n1\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("short row: %v", err)
	}
}

func TestWriteCurves(t *testing.T) {
	tab, err := ReadTable(strings.NewReader(sampleTSV))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	written, err := WriteCurves(tab, Curves, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Six curves against the size; none against subscribers (no rows).
	if len(written) != 6 || slices.ContainsFunc(written, func(f string) bool { return strings.HasPrefix(f, "subscribers-") }) {
		t.Fatalf("wrote %q", written)
	}
	b, err := os.ReadFile(filepath.Join(dir, "leaves-write-latency.svg"))
	if err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, b)
	if len(doc.circles) != 4 { // p50 and p99 at two sizes
		t.Errorf("%d dots in the write latency chart, want 4", len(doc.circles))
	}
	if !slices.Contains(doc.texts, "p99") || !slices.Contains(doc.texts, "latency (ms)") {
		t.Errorf("texts %q", doc.texts)
	}
	if !slices.Contains(doc.tips, "p99: 7 at 100k") || !slices.Contains(doc.tips, "p50: 1.9 at 10k") {
		t.Errorf("tooltips %q", doc.tips)
	}
	// Every curve names its columns in the table scale.sh writes.
	for _, c := range Curves {
		for _, col := range append([]string{c.XCol}, c.YCols...) {
			if tab.column(col) < 0 {
				t.Errorf("%s: column %q is not in scale.sh's header", c.File, col)
			}
		}
		if len(c.YCols) != len(c.Chart.Lines) {
			t.Errorf("%s: %d columns for %d lines", c.File, len(c.YCols), len(c.Chart.Lines))
		}
	}
}

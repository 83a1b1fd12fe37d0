package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Chart is one small line plot: a title, two labelled axes and up to a
// few lines sharing them.
type Chart struct {
	Title  string
	XLabel string
	YLabel string
	// XLog and YLog put an axis on a base-10 logarithmic scale (every
	// value must then be positive); a linear y axis starts at 0.
	XLog, YLog bool
	Lines      []Line
}

// Line is one series of a chart, drawn as a polyline with a dot at each
// point, in a colour (and dash) of its own.
type Line struct {
	Name   string
	Points []Point
}

// Drawing geometry, in SVG user units (pixels at 100 %).
const (
	width, height           = 480, 300
	marginLeft, marginRight = 64, 16
	marginTop, marginBottom = 46, 48
	plotLeft, plotRight     = marginLeft, width - marginRight
	plotTop, plotBottom     = marginTop, height - marginBottom
	pointRadius             = 3
	fontFamily              = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
	gridColour, axisColour  = "#e3e3e3", "#555"
	legendSwatch, legendGap = 18, 16
	// charWidth is a generous average width of a 12px character, to
	// space legend entries without measuring text.
	charWidth = 7
)

// lineStyles are the lines' colours and dashes, in order: p50 solid blue,
// p99 dashed orange, and so on.
var lineStyles = []struct{ colour, dash string }{
	{"#1f77b4", ""},
	{"#d95f02", "6 3"},
	{"#2ca02c", "2 3"},
	{"#7b3294", "8 3 2 3"},
}

// scale maps data values on one axis to pixels.
type scale struct {
	lo, hi   float64 // the domain, already logged for a log axis
	from, to float64 // pixels of lo and hi
	log      bool
}

func (s scale) pixel(v float64) float64 {
	if s.log {
		v = math.Log10(v)
	}
	if s.hi == s.lo {
		return (s.from + s.to) / 2
	}
	return s.from + (v-s.lo)/(s.hi-s.lo)*(s.to-s.from)
}

// Render writes c as a standalone SVG document.
func (c Chart) Render(w io.Writer) error {
	var xs, ys []float64
	for _, l := range c.Lines {
		for _, p := range l.Points {
			xs = append(xs, p.X)
			ys = append(ys, p.Y)
		}
	}
	if len(xs) == 0 {
		return errors.New("chart has no points")
	}
	xlo, xhi, xticks, err := axis(xs, c.XLog, false)
	if err != nil {
		return fmt.Errorf("x axis: %w", err)
	}
	ylo, yhi, yticks, err := axis(ys, c.YLog, true)
	if err != nil {
		return fmt.Errorf("y axis: %w", err)
	}
	// The x axis keeps a small inset so that dots at its ends stay whole.
	sx := scale{lo: xlo, hi: xhi, from: plotLeft + 8, to: plotRight - 8, log: c.XLog}
	sy := scale{lo: ylo, hi: yhi, from: plotBottom, to: plotTop, log: c.YLog}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12">`+"\n",
		width, height, width, height, fontFamily)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(c.Title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="14" font-weight="bold">%s</text>`+"\n", marginLeft, esc(c.Title))

	b.WriteString(`<g class="grid" stroke="` + gridColour + `" stroke-width="1">` + "\n")
	for _, t := range yticks {
		y := sy.pixel(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s"/>`+"\n", plotLeft, num(y), plotRight, num(y))
	}
	for _, t := range xticks {
		x := sx.pixel(t)
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d"/>`+"\n", num(x), plotTop, num(x), plotBottom)
	}
	b.WriteString("</g>\n")

	fmt.Fprintf(&b, `<g class="axes" stroke="%s" stroke-width="1"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/></g>`+"\n",
		axisColour, plotLeft, plotBottom, plotRight, plotBottom, plotLeft, plotTop, plotLeft, plotBottom)
	b.WriteString(`<g class="ticks" fill="#333">` + "\n")
	for _, t := range yticks {
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n",
			plotLeft-6, num(sy.pixel(t)), esc(strconv.FormatFloat(t, 'f', -1, 64)))
	}
	for _, t := range xticks {
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n",
			num(sx.pixel(t)), plotBottom+16, esc(tickLabel(t)))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<text class="xlabel" x="%d" y="%d" text-anchor="middle">%s</text>`+"\n",
		(plotLeft+plotRight)/2, height-10, esc(c.XLabel))
	fmt.Fprintf(&b, `<text class="ylabel" transform="translate(16 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n",
		(plotTop+plotBottom)/2, esc(c.YLabel))

	for i, l := range c.Lines {
		if len(l.Points) == 0 {
			continue
		}
		st := lineStyles[i%len(lineStyles)]
		dash := ""
		if st.dash != "" {
			dash = ` stroke-dasharray="` + st.dash + `"`
		}
		fmt.Fprintf(&b, `<g class="series" data-name="%s" stroke="%s" fill="%s">`+"\n", esc(l.Name), st.colour, st.colour)
		var pts []string
		for _, p := range l.Points {
			pts = append(pts, num(sx.pixel(p.X))+","+num(sy.pixel(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke-width="2"%s points="%s"/>`+"\n", dash, strings.Join(pts, " "))
		for _, p := range l.Points {
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="%d"><title>%s: %s at %s</title></circle>`+"\n",
				num(sx.pixel(p.X)), num(sy.pixel(p.Y)), pointRadius, esc(l.Name), esc(valueLabel(p.Y)), esc(tickLabel(p.X)))
		}
		// The legend: one row under the title, out of the data's way.
		lx, ly := legendX(c.Lines, i), 32
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke-width="2"%s/>`+"\n", lx, ly, lx+legendSwatch, ly, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" stroke="none" fill="#333" dominant-baseline="middle">%s</text>`+"\n", lx+legendSwatch+6, ly, esc(l.Name))
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// legendX is the left edge of line i's legend entry: entries follow one
// another from the plot's left edge.
func legendX(lines []Line, i int) int {
	x := plotLeft
	for _, l := range lines[:i] {
		if len(l.Points) > 0 {
			x += legendSwatch + 6 + charWidth*len([]rune(l.Name)) + legendGap
		}
	}
	return x
}

// axis chooses an axis's domain (logged for a log axis) and its ticks (in
// data units). A linear y axis starts at zero so that a flat curve looks
// flat; a log axis spans whole decades.
func axis(vs []float64, logScale, fromZero bool) (lo, hi float64, ticks []float64, err error) {
	mn, mx := vs[0], vs[0]
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0, nil, fmt.Errorf("value %v", v)
		}
		mn, mx = min(mn, v), max(mx, v)
	}
	if logScale {
		if mn <= 0 {
			return 0, 0, nil, fmt.Errorf("log scale needs positive values, got %v", mn)
		}
		lo, hi = math.Floor(math.Log10(mn)), math.Ceil(math.Log10(mx))
		if lo == hi {
			hi = lo + 1
		}
		for d := lo; d <= hi; d++ {
			ticks = append(ticks, math.Pow(10, d))
			// Within two decades, 2 and 5 times each power say more.
			if hi-lo <= 2 && d < hi {
				ticks = append(ticks, 2*math.Pow(10, d), 5*math.Pow(10, d))
			}
		}
		return lo, hi, ticks, nil
	}
	if fromZero && mn > 0 {
		mn = 0
	}
	if mx == mn {
		mx = mn + 1
	}
	step := niceStep((mx - mn) / 5)
	lo, hi = math.Floor(mn/step)*step, math.Ceil(mx/step)*step
	for i := 0; ; i++ {
		t := lo + float64(i)*step
		if t > hi+step/2 {
			break
		}
		ticks = append(ticks, round(t, step))
	}
	return lo, hi, ticks, nil
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// round removes the float noise of lo + i*step (0.30000000000000004).
func round(v, step float64) float64 {
	digits := max(0, -int(math.Floor(math.Log10(step)))+1)
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return r
}

// tickLabel is an x tick's label: large counts with k and M (10k, 1M),
// other values in their shortest form. (The y axis, which carries units
// such as MB, keeps plain numbers: 10k MB would read oddly.)
func tickLabel(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6 && math.Mod(v, 1e5) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3 && math.Mod(v, 100) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// valueLabel is a measured value in a dot's tooltip: whole from 1000 up,
// else up to four significant digits, never with an exponent.
func valueLabel(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// num prints a pixel coordinate with two decimals at most.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// esc escapes text for an XML element or a double-quoted attribute.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Table is the raw figures scale.sh writes: a header line of column names,
// then one tab-separated row per measurement. Lines starting with # are
// notes, kept apart; "-" marks a figure that was not measured.
type Table struct {
	Columns []string
	Rows    [][]string
	Notes   []string
}

// ReadTable parses a scale.sh TSV.
func ReadTable(r io.Reader) (*Table, error) {
	t := &Table{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.TrimSpace(text) == "":
			continue
		case strings.HasPrefix(text, "#"):
			t.Notes = append(t.Notes, strings.TrimSpace(strings.TrimPrefix(text, "#")))
			continue
		}
		fields := strings.Split(text, "\t")
		if t.Columns == nil {
			t.Columns = fields
			continue
		}
		if len(fields) != len(t.Columns) {
			return nil, fmt.Errorf("line %d: %d fields, the header has %d", line, len(fields), len(t.Columns))
		}
		t.Rows = append(t.Rows, fields)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if t.Columns == nil {
		return nil, fmt.Errorf("no header line")
	}
	return t, nil
}

// Point is one measured figure at one x.
type Point struct {
	X, Y float64
}

// Series returns the (x, y) points of the rows whose column "phase" is
// phase, with x from column xcol and y from ycol, skipping rows where
// either is not measured ("-" or empty). Points come in row order.
func (t *Table) Series(phase, xcol, ycol string) ([]Point, error) {
	pi, xi, yi := t.column("phase"), t.column(xcol), t.column(ycol)
	for name, i := range map[string]int{"phase": pi, xcol: xi, ycol: yi} {
		if i < 0 {
			return nil, fmt.Errorf("no column %q", name)
		}
	}
	var pts []Point
	for _, row := range t.Rows {
		if row[pi] != phase || !measured(row[xi]) || !measured(row[yi]) {
			continue
		}
		x, err := strconv.ParseFloat(row[xi], 64)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", xcol, err)
		}
		y, err := strconv.ParseFloat(row[yi], 64)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", ycol, err)
		}
		pts = append(pts, Point{X: x, Y: y})
	}
	return pts, nil
}

func (t *Table) column(name string) int {
	for i, c := range t.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

func measured(s string) bool { return s != "" && s != "-" }

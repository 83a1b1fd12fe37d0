package checks

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fatalMarks are log lines that are bugs whatever the faults: the race
// detector's report, a panic, a runtime crash, and a panic the node
// recovered from while serving ("panic serving request", "panic serving
// a stream", net/http's "http: panic serving"), whose count a restart
// resets.
var fatalMarks = []string{"WARNING: DATA RACE", "panic: ", "fatal error: ", "panic serving"}

// Logs scans every *.log file in dir for races, panics and crashes. Lines
// logged at level ERROR are counted in the summary, not judged: under
// faults some are expected (a peer unreachable).
func Logs(dir string) Result {
	r := NewBuilder("node logs free of races, panics and crashes")
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		r.Fail("no node logs in %s (%v)", dir, err)
		return r.Done("no logs")
	}
	slices.Sort(files)
	errorsByFile := map[string]int{}
	lines := 0
	for _, f := range files {
		n, errs := scanLog(r, f)
		lines += n
		errorsByFile[filepath.Base(f)] = errs
	}
	var counts []string
	for _, f := range files {
		counts = append(counts, fmt.Sprintf("%s %d", filepath.Base(f), errorsByFile[filepath.Base(f)]))
	}
	return r.Done(fmt.Sprintf("%d lines in %d logs; level=ERROR lines: %s", lines, len(files), strings.Join(counts, ", ")))
}

func scanLog(r *Builder, path string) (lines, errorLines int) {
	f, err := os.Open(path)
	if err != nil {
		r.Fail("%s: %v", path, err)
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		lines++
		line := sc.Text()
		if strings.Contains(line, "level=ERROR") {
			errorLines++
		}
		for _, m := range fatalMarks {
			if strings.Contains(line, m) {
				r.Fail("%s:%d: %s", filepath.Base(path), lines, truncate(line, 300))
			}
		}
	}
	if err := sc.Err(); err != nil {
		r.Fail("%s: %v", path, err)
	}
	return lines, errorLines
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

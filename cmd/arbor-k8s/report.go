package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// result is one scenario's outcome: its figures, and what missed a bar.
type result struct {
	Name, Title string
	Figures     []string
	Fails       []string
	Took        time.Duration
}

func (r *result) figure(format string, args ...any) {
	r.Figures = append(r.Figures, fmt.Sprintf(format, args...))
}

func (r *result) fail(format string, args ...any) {
	r.Fails = append(r.Fails, fmt.Sprintf(format, args...))
}

func (r *result) verdict() string {
	if len(r.Fails) > 0 {
		return "FAIL"
	}
	return "PASS"
}

func (r *result) print(w io.Writer) {
	for _, f := range r.Figures {
		fmt.Fprintf(w, "   %s\n", f)
	}
	for _, f := range r.Fails {
		fmt.Fprintf(w, "   FAIL: %s\n", f)
	}
	fmt.Fprintf(w, "-- %s %s (%s)\n", r.verdict(), r.Name, r.Took.Round(time.Second))
}

// writeReport writes the scenarios' figures as markdown.
func writeReport(path string, o options, results []*result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# make test-k8s, %s\n\narbor:%s → arbor:%s\n", time.Now().UTC().Format(time.RFC3339), o.oldTag, o.newTag)
	for _, r := range results {
		fmt.Fprintf(&b, "\n## %s — %s: %s (%s)\n\n", r.Name, r.Title, r.verdict(), r.Took.Round(time.Second))
		for _, f := range r.Figures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		for _, f := range r.Fails {
			fmt.Fprintf(&b, "- **FAIL**: %s\n", f)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

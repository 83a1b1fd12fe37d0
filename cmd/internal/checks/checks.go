// Package checks holds the checks of a chaos history besides
// linearizability: every acknowledged write is present at the end, push
// keys are well formed and strictly increasing in commit order, ETags are
// a function of the value, and no answer was one the workload never
// provokes.
package checks

import (
	"fmt"
	"slices"
	"strings"
)

// maxDetails bounds the details one check lists; the count is kept.
const maxDetails = 20

// Result is the verdict of one check.
type Result struct {
	Name    string
	OK      bool
	Summary string   // one line
	Details []string // the first problems found
	Count   int      // how many problems in all
}

// Builder collects the problems one check finds.
type Builder struct {
	Result
}

// NewBuilder starts a passing check.
func NewBuilder(name string) *Builder {
	return &Builder{Result{Name: name, OK: true}}
}

// Fail records a problem.
func (r *Builder) Fail(format string, args ...any) {
	r.OK = false
	r.Count++
	if len(r.Details) < maxDetails {
		r.Details = append(r.Details, fmt.Sprintf(format, args...))
	}
}

// Done returns the verdict with a one-line summary.
func (r *Builder) Done(summary string) Result {
	r.Summary = summary
	if !r.OK {
		r.Summary = fmt.Sprintf("%s — %d problem(s)", summary, r.Count)
	}
	return r.Result
}

// String renders a result for the report.
func (r Result) String() string {
	verdict := "OK  "
	if !r.OK {
		verdict = "FAIL"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s\n", verdict, r.Name, r.Summary)
	for _, d := range r.Details {
		fmt.Fprintf(&b, "       %s\n", d)
	}
	if r.Count > len(r.Details) {
		fmt.Fprintf(&b, "       … and %d more\n", r.Count-len(r.Details))
	}
	return b.String()
}

// AllOK reports whether every result passed.
func AllOK(rs []Result) bool {
	return !slices.ContainsFunc(rs, func(r Result) bool { return !r.OK })
}

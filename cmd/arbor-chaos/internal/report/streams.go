package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/watch"
)

// writeStreams renders the stream watchers' figures; their verdicts are
// among the checks.
func writeStreams(w io.Writer, f *watch.Figures) {
	if f == nil {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\nstreams: %d watchers on \"/\" with resume=true\n", f.Watchers)
	p("  %d streams opened, %d connection attempts without a stream (refused, 503, timeout)\n", f.Streams, f.Failed)
	p("  %d reconnects: %d resumed from Last-Event-ID, %d fresh puts at \"/\" (history gone, or a snapshot installed first), %d ended before their first event; %d puts at \"/\" mid-stream (snapshot installed)\n",
		f.Reconnects, f.Resumed, f.Fresh, f.Quiet, f.Restores)
	var ends []string
	for _, k := range slices.Sorted(maps.Keys(f.Ends)) {
		ends = append(ends, fmt.Sprintf("%s %d", k, f.Ends[k]))
	}
	p("  %d events (put, patch), %d keep-alives; streams ended: %s\n", f.Events, f.KeepAlives, joinOrNone(ends))
	p("  %d changes recorded; committed register values: %d delivered, %d coalesced into a put at \"/\", %d before a watcher's first put\n",
		f.Changes, f.Delivered, f.Coalesced, f.BeforeStart)
	p("  increments and list children: %d in their own event, %d within a put at \"/\"\n", f.OwnEvent, f.InPut)
	p("  violations: %d (protocol problems among them: %d)\n", f.Violations, f.Problems)
}

// joinOrNone joins s, or says "none".
func joinOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

package watch

import "strings"

// Figures are the watchers' numbers for the report.
type Figures struct {
	Watchers int
	// Streams opened (answered 200 with an event stream); Failed
	// connection attempts that opened none.
	Streams, Failed int
	// Reconnects are the streams after each watcher's first: Resumed
	// went on from Last-Event-ID, Fresh began with a new put at "/"
	// (the node's history did not reach back), Quiet ended before their
	// first event.
	Reconnects, Resumed, Fresh, Quiet int
	// Restores are puts at "/" in the middle of a stream (a snapshot
	// installed on its node).
	Restores int
	// Events are put and patch frames; KeepAlives the keep-alive ones.
	Events, KeepAlives int
	// Ends counts why streams ended: eof, idle, rotated, stopped,
	// cancel, error, malformed, …
	Ends map[string]int
	// Changes are the per-key changes the watchers recorded.
	Changes int
	// Committed register values, per watcher: Delivered, Coalesced into a
	// put at "/" after a reconnect or restore, or committed before the
	// watcher's first put.
	Delivered, Coalesced, BeforeStart int
	// Increments and list children that arrived as their own event, or
	// within a put at "/".
	OwnEvent, InPut int
	// Problems are the watchers' protocol problems; Violations all the
	// problems of the three checks (problems included).
	Problems, Violations int
}

// tally counts the streams of the records.
func tally(recs []Record) Figures {
	f := Figures{Watchers: len(recs), Ends: map[string]int{}}
	for _, r := range recs {
		f.Failed += r.Failed
		f.Problems += len(r.Problems) + r.MoreProblems
		f.Streams += len(r.Streams)
		for i, s := range r.Streams {
			if i > 0 {
				f.Reconnects++
			}
			switch s.How {
			case "resumed":
				f.Resumed++
			case "fresh":
				f.Fresh++
			case "quiet":
				f.Quiet++
			}
			f.Restores += s.Restores
			f.Events += s.Events
			f.KeepAlives += s.KeepAlives
			end, _, _ := strings.Cut(s.End, ":")
			f.Ends[end]++
		}
	}
	return f
}

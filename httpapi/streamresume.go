package httpapi

import (
	"fmt"
	"strconv"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// Resumable streams (SPEC §5, Arbor's own, opt-in): with ?resume=true or a
// Last-Event-ID header every frame carries "id: <log index>", and a client
// that reconnects with Last-Event-ID gets exactly the events it missed,
// from a bounded history of this node's recent events — or, when that
// history no longer reaches back far enough, a fresh put at "/".

// historyEvents and historyBytes bound the recent events a node keeps
// for resumes: their count, and the approximate JSON size of the values
// they hold (a value overwritten since would otherwise stay in memory).
const (
	historyEvents = 4096
	historyBytes  = 64 << 20
)

// history is a ring of the most recent events, oldest first. Not every
// log index has an event (Raft's own entries, refused writes), so what it
// covers is told by gone: every event at an index up to gone may be
// missing, every later one is here.
type history struct {
	events []fsm.Event
	start  int // index in events of the oldest
	n      int
	bytes  int64 // eventBytes of the events held
	gone   uint64
	seen   bool // an event has arrived (gone is meaningful)
}

// eventBytes approximates the memory an event's values keep alive.
func eventBytes(e *fsm.Event) int64 {
	size := e.Value.Size()
	for _, f := range e.Fields {
		size += f.Value.Size()
	}
	return size
}

// dropOldest forgets the oldest event.
func (r *history) dropOldest() {
	old := &r.events[r.start]
	r.gone, r.bytes = old.Index, r.bytes-eventBytes(old)
	*old = fsm.Event{}
	r.start = (r.start + 1) % len(r.events)
	r.n--
}

func (r *history) add(e fsm.Event) {
	if r.events == nil {
		r.events = make([]fsm.Event, historyEvents)
	}
	if !r.seen {
		// Events before this one (the log replayed at start, before the
		// streams were wired) never reached the history.
		r.seen, r.gone = true, e.Index-1
	}
	size := eventBytes(&e)
	for r.n > 0 && (r.n == len(r.events) || r.bytes+size > historyBytes) {
		r.dropOldest()
	}
	if size > historyBytes { // too big to keep: resumes from before it get a fresh put
		r.gone = e.Index
		return
	}
	r.events[(r.start+r.n)%len(r.events)] = e
	r.n++
	r.bytes += size
}

// since returns the events after index, and false when the history does
// not reach back to index (events after it may be missing).
func (r *history) since(index uint64) ([]fsm.Event, bool) {
	if !r.seen || index < r.gone {
		return nil, false
	}
	var out []fsm.Event
	for k := range r.n {
		e := r.events[(r.start+k)%len(r.events)]
		if e.Index > index {
			out = append(out, e)
		}
	}
	return out, true
}

// resumeFrom returns the Last-Event-ID a stream resumes from (0 for
// none) and whether frames carry ids.
func resumeFrom(lastEventID string, resume bool) (uint64, bool, error) {
	if lastEventID == "" {
		return 0, resume, nil
	}
	id, err := strconv.ParseUint(lastEventID, 10, 64)
	if err != nil {
		return 0, false, badRequest("Last-Event-ID must be the log index of an event: %q", lastEventID)
	}
	return id, true, nil
}

// framesFor renders event e for one stream at path (the mapping deliver
// does for every subscriber at once through the trie).
func framesFor(path tree.Path, e *fsm.Event) [][]byte {
	p := e.Path
	if p.HasPrefix(path) { // at or below the stream's location
		return [][]byte{eventChange(e, p[len(path):]).sse()}
	}
	if !path.HasPrefix(p) {
		return nil
	}
	rest := path[len(p):] // the location is below the change
	if e.Kind == fsm.EventPut {
		return [][]byte{putFrame(nil, e.Value.Get(rest))}
	}
	var out [][]byte
	for _, f := range e.Fields {
		switch {
		case f.Path.HasPrefix(rest): // the field is at or below the location
			if len(f.Path) == len(rest) {
				out = append(out, putFrame(nil, f.Value))
			} else {
				out = append(out, putFrame(f.Path[len(rest):], f.Value))
			}
		case rest.HasPrefix(f.Path): // the field is above it
			out = append(out, putFrame(nil, f.Value.Get(rest[len(f.Path):])))
		}
	}
	return out
}

// withID prefixes a frame with its event id.
func withID(index uint64, data []byte) []byte {
	return append(fmt.Appendf(nil, "id: %d\n", index), data...)
}

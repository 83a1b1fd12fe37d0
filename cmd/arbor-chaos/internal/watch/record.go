package watch

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// MarkerKey is the path the runner writes once the cluster is quiet and
// every workload write has settled: a committed write after all of them,
// which every watcher must receive before the run ends, so that the
// completeness check can rely on each stream having reached past every
// workload write. The checks ignore it.
const MarkerKey = "watch-end"

// PresenceKey holds what the presence watchers' onDisconnect operations
// write (cmd/arbor-chaos/internal/presence), which their own check
// judges; the stream checks ignore it.
const PresenceKey = "presence"

// Record is what one watcher saw, for the checks.
type Record struct {
	Watcher int      `json:"watcher"`
	Streams []Stream `json:"streams"`
	// Failed counts connection attempts that opened no stream (refused,
	// 503, TLS or header timeout).
	Failed int `json:"failed"`
	// Puts are the puts at "/" the copy was rebased on, in order: the
	// first stream's, each fresh put of a reconnect, and each put at "/"
	// in the middle of a stream (a snapshot installed on its node).
	// Changes at indexes in (After, Index] may have been coalesced
	// into it; every other change after the first put arrived as its own
	// event.
	Puts []Put `json:"puts"`
	// Last is the highest id received.
	Last uint64 `json:"last"`
	// Keys are, per key, the changes of its value the watcher saw, in
	// the order it saw them.
	Keys map[string][]Obs `json:"keys"`
	// Problems break the protocol: a malformed frame, a frame without an
	// id, ids not increasing, an unexpected answer or cancel.
	Problems []string `json:"problems,omitempty"`
	// MoreProblems counts those beyond the first maxProblems.
	MoreProblems int `json:"more_problems,omitempty"`
	// Copy is the watcher's copy of the tree when it stopped (canonical
	// JSON). Equal to the final state, which holds the marker, it
	// shows the watcher received everything committed before the marker.
	Copy string `json:"copy"`
}

// Stream is one connection that opened an event stream.
type Stream struct {
	Node string `json:"node"`
	// Opened and Closed are on the history's clock (ns since the
	// workload started).
	Opened int64 `json:"opened"`
	Closed int64 `json:"closed"`
	// LastEventID is the header sent (0: none, the watcher's first).
	LastEventID uint64 `json:"last_event_id,omitempty"`
	// How the stream began: "initial" (the watcher's first put),
	// "resumed" (its first event followed LastEventID), "fresh" (a put
	// at "/": the node's history did not reach back — or it did, and a
	// snapshot the node installed came first, which looks the same) or
	// "quiet" (it ended before its first event).
	How        string `json:"how"`
	Events     int    `json:"events"`
	KeepAlives int    `json:"keep_alives"`
	Restores   int    `json:"restores,omitempty"` // puts at "/" after its first event
	// End says why it ended: "eof", "idle", "rotated", "stopped",
	// "cancel: <reason>", or the error.
	End string `json:"end"`
}

// Put is one put at "/" the copy was rebased on.
type Put struct {
	After uint64 `json:"after"` // the last id before it (0 for the first)
	Index uint64 `json:"index"`
	At    int64  `json:"at"` // when it arrived, on the history's clock
}

// Obs is one change of a key's value as a watcher saw it.
type Obs struct {
	Index uint64 `json:"i"`
	// Rebase: seen through a put at "/", which may coalesce several
	// changes; otherwise the change is the event of one log entry.
	Rebase bool `json:"r,omitempty"`
	// Value is the new value's JSON text ("null" when gone); for a list
	// key only when it is not an object.
	Value string `json:"v,omitempty"`
	// Added and Removed are a list key's children new since the
	// previous change, and those gone or changed (never legal).
	Added   []history.Item `json:"add,omitempty"`
	Removed []history.Item `json:"del,omitempty"`
}

// File is what watchers.json in the report directory holds, so that
// arbor-chaos -check judges the streams again.
type File struct {
	// Final is the state read from the cluster after quiescence and the
	// marker (canonical JSON).
	Final string `json:"final"`
	// Error says why Final is missing (the marker could not be written
	// or the state not read).
	Error    string   `json:"error,omitempty"`
	Watchers []Record `json:"watchers"`
}

// WriteFile saves f as JSON.
func WriteFile(path string, f File) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("watch: encode: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	return nil
}

// ReadFile reads a file written by WriteFile.
func ReadFile(path string) (File, error) {
	var f File
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("watch: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("watch: %s: %w", path, err)
	}
	return f, nil
}

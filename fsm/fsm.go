package fsm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/arbordb/arbor/fsm/tree"
)

// state is one immutable version of everything Apply reads and writes.
type state struct {
	root         *tree.Node
	lastPushTime int64
	lastRand     [12]byte
	index        uint64
	// rules are the security rules set by the log (nil: the default).
	rules *Rules
	// indexes are the `.indexOn` indexes the rules declare, of root
	// (index.go); derived from rules and root, so never in a snapshot.
	indexes *IndexSet
	// disconnects are the onDisconnect operations registered
	// (disconnectset.go; nil: none).
	disconnects *disconnectSet
}

// ApplyResponse is what FSM.Apply returns through raft's ApplyFuture.Response.
type ApplyResponse struct {
	Result Result
	Err    error
}

// FSM is the replicated state machine: the tree and the push-key clock.
// Apply is called by one goroutine (raft's); readers load the current state
// without locks.
type FSM struct {
	cur atomic.Pointer[state]
	// applyMu orders the installs of indexes built outside Apply
	// (BuildIndexes) with Apply, which otherwise runs alone.
	applyMu   sync.Mutex
	indexWork chan struct{}

	mu      sync.Mutex
	waiters map[uint64][]chan struct{}
	sink    func(uint64, []Event)
	// auths is the apply goroutine's memo of decoded auths (authcache.go).
	auths *decodedAuths
}

// Entry is one log entry as the state machine applies it: its place in
// the log and, for a command, its encoded data. Entries that are not
// commands (configuration changes, no-ops) only advance the index.
type Entry struct {
	Index, Term uint64
	Command     bool
	Data        []byte
}

// New returns an empty FSM.
func New() *FSM {
	f := &FSM{waiters: map[uint64][]chan struct{}{}, indexWork: make(chan struct{}, 1), auths: &decodedAuths{m: map[string]any{}}}
	f.cur.Store(&state{})
	return f
}

// Root returns the current tree (nil when empty).
func (f *FSM) Root() *tree.Node { return f.cur.Load().root }

// AppliedIndex returns the index of the last applied log entry.
func (f *FSM) AppliedIndex() uint64 { return f.cur.Load().index }

// ReadLocal returns the value at p in the current state.
func (f *FSM) ReadLocal(p tree.Path) ReadResult {
	s := f.cur.Load()
	return ReadResult{Value: s.root.Get(p), Index: s.index, Rules: s.rules, Indexes: s.indexes}
}

// SetEventSink registers fn to receive the change events of the applied
// entries, in commit order: one call per Apply or ApplyBatch, with the
// index applied and the events (each carrying its entry's index; none
// when the entries changed nothing). fn runs on the apply goroutine and
// must not block.
func (f *FSM) SetEventSink(fn func(applied uint64, events []Event)) {
	f.mu.Lock()
	f.sink = fn
	f.mu.Unlock()
}

// WaitApplied blocks until the entry at index has been applied or ctx ends.
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	f.mu.Lock()
	if f.cur.Load().index >= index {
		f.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	f.waiters[index] = append(f.waiters[index], ch)
	f.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// publish installs s as the current state, wakes waiters and emits events.
func (f *FSM) publish(s *state, events []Event) {
	f.cur.Store(s)
	f.mu.Lock()
	for idx, chs := range f.waiters {
		if idx <= s.index {
			for _, ch := range chs {
				close(ch)
			}
			delete(f.waiters, idx)
		}
	}
	sink := f.sink
	f.mu.Unlock()
	if sink != nil {
		sink(s.index, events)
	}
	if s.indexes.Pending() {
		select {
		case f.indexWork <- struct{}{}:
		default: // already signalled
		}
	}
}

// Apply applies one log entry and returns its response (nil for an
// entry that is not a command).
func (f *FSM) Apply(l Entry) *ApplyResponse {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	next, resp, events, stop := step(f.cur.Load(), l, f.auths)
	if stop != nil {
		panic(stop)
	}
	f.publish(next, events)
	return resp
}

// ApplyBatch applies a run of committed entries (commands and
// configuration changes) in order, publishing the state once at the end:
// a leader committing many writes at once pays for one state swap and one wake-up of the waiting reads per batch
// instead of one per write. Every entry's response is what Apply would have
// returned, and the states in between are never visible, which readers
// cannot tell from a batch applied faster.
func (f *FSM) ApplyBatch(logs []Entry) []*ApplyResponse {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	resps := make([]*ApplyResponse, len(logs))
	s := f.cur.Load()
	var events []Event
	for i, l := range logs {
		next, resp, evs, stop := step(s, l, f.auths)
		if stop != nil {
			// What came before the entry stays applied, as with Apply.
			f.publish(s, events)
			panic(stop)
		}
		s, resps[i] = next, resp
		events = append(events, evs...)
	}
	f.publish(s, events)
	return resps
}

// step computes the state after one entry, its response (nil for a
// non-command entry) and its change events. An entry written by a newer
// release returns stop, the value to panic with: skipping it would make
// this replica diverge silently, while stopping is safe — the node stays
// down (and keeps its log) until it runs a release that can apply it.
func step(s *state, l Entry, auths *decodedAuths) (next *state, resp *ApplyResponse, events []Event, stop *UnsupportedEntryError) {
	if !l.Command {
		n := *s
		n.index = l.Index
		return &n, nil, nil, nil
	}
	next, res, events, err := applyEntry(s, l.Data, auths)
	if errors.Is(err, ErrUnsupportedVersion) {
		return nil, nil, nil, &UnsupportedEntryError{Index: l.Index, Err: err}
	}
	next.index = l.Index
	next.stampRules(l.Index)
	res.Index = l.Index
	for i := range events {
		events[i].Index = l.Index
	}
	return next, &ApplyResponse{Result: res, Err: err}, events, nil
}

// Snapshot captures the current state in O(1).
func (f *FSM) Snapshot() (*Snapshot, error) {
	return &Snapshot{s: f.cur.Load()}, nil
}

// Restore replaces the state with a snapshot read from r.
func (f *FSM) Restore(r io.Reader) error {
	s, err := readSnapshot(r)
	if err != nil {
		return err
	}
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	events := []Event{{Index: s.index, Kind: EventPut, Path: nil, Value: s.root}, {Index: s.index, Kind: EventRules}}
	// A node far behind is sent a snapshot instead of the entries: the
	// runs among them are told as the sessions the snapshot no longer
	// holds operations of.
	if gone := f.cur.Load().disconnects.goneFrom(s.disconnects); len(gone) > 0 {
		events = append(events, Event{Index: s.index, Kind: EventDisconnectsRan, Holders: gone})
	}
	f.publish(s, events)
	return nil
}

// UnsupportedEntryError is the panic value of Apply for a log entry written
// by a newer release: the node must be upgraded before it can go on.
type UnsupportedEntryError struct {
	Index uint64
	Err   error
}

// Error implements error.
func (e *UnsupportedEntryError) Error() string {
	return fmt.Sprintf("log entry %d needs a newer Arbor release: %v", e.Index, e.Err)
}

// Unwrap exposes ErrUnsupportedVersion.
func (e *UnsupportedEntryError) Unwrap() error { return e.Err }

package realtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// fsmDB is a DB and an Events on a real in-process fsm.FSM, so tests see
// the real semantics of writes, reads, rules and change events.
type fsmDB struct {
	mu    sync.Mutex
	f     *fsm.FSM
	index uint64

	subMu sync.Mutex
	subs  map[*fakeFeed]struct{}

	// lagged, when set, holds the events of applied entries back from
	// the feeds until it is drained (lagFeeds): a follower that applies a
	// write after the leader has answered it.
	lagged chan lagBatch

	// lostAnswers is how many of the next writes are applied and then
	// answered with an unknown outcome, as a forwarded write whose leader
	// was lost.
	lostAnswers atomic.Int32

	delivMu   sync.Mutex
	delivered uint64
	delivCh   chan struct{}
}

func newFSMDB() *fsmDB {
	d := &fsmDB{f: fsm.New(), subs: map[*fakeFeed]struct{}{}, delivCh: make(chan struct{})}
	d.f.SetEventSink(d.sink)
	return d
}

// lagFeeds makes the events of every later write reach the feeds after
// its Propose has returned, each after delay.
func (d *fsmDB) lagFeeds(delay time.Duration) {
	d.lagged = make(chan lagBatch, 1024)
	go func() {
		for b := range d.lagged {
			time.Sleep(delay)
			d.route(b.applied, b.events)
		}
	}()
}

// lagBatch is one applied batch held back by lagFeeds.
type lagBatch struct {
	applied uint64
	events  []fsm.Event
}

func (d *fsmDB) sink(applied uint64, events []fsm.Event) {
	if d.lagged != nil {
		d.lagged <- lagBatch{applied, events}
		return
	}
	d.route(applied, events)
}

// route hands events to the feeds, then counts them delivered.
func (d *fsmDB) route(applied uint64, events []fsm.Event) {
	d.publish(events)
	d.delivMu.Lock()
	d.delivered = max(d.delivered, applied)
	close(d.delivCh)
	d.delivCh = make(chan struct{})
	d.delivMu.Unlock()
}

// WaitDelivered implements Events.
func (d *fsmDB) WaitDelivered(ctx context.Context, index uint64) error {
	for {
		d.delivMu.Lock()
		done, ch := d.delivered >= index, d.delivCh
		d.delivMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (d *fsmDB) Read(_ context.Context, r fsm.Read) (fsm.ReadResult, error) { return d.f.ReadAs(r) }

func (d *fsmDB) Judge(_ context.Context, c *fsm.Command, _ bool) error { return d.f.Judge(c) }

func (d *fsmDB) Propose(_ context.Context, c fsm.Command, o fsm.AnswerOptions) (fsm.Answer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.index++
	data := c.Encode()
	ar := d.f.Apply(fsm.Entry{Index: d.index, Command: true, Data: data})
	if ar == nil {
		return fsm.Answer{}, fmt.Errorf("apply of command %d answered nothing", d.index)
	}
	if ar.Err != nil {
		return fsm.Answer{}, ar.Err
	}
	if d.lostAnswers.Load() > 0 {
		d.lostAnswers.Add(-1)
		return fsm.Answer{}, fmt.Errorf("fake: connection to leader lost: %w", fsm.ErrOutcomeUnknown)
	}
	// The protocol reads only the outcome; the body is REST's.
	return fsm.Answer{ETag: ar.Result.ETag, Index: ar.Result.Index}, nil
}

// setRules installs rules as an admin would.
func (d *fsmDB) setRules(text string) error {
	_, err := d.Propose(context.Background(), fsm.Command{Kind: fsm.CmdSetRules, Body: []byte(text)}, fsm.AnswerOptions{})
	return err
}

// set writes v (JSON) at path as an admin.
func (d *fsmDB) set(path, v string) error {
	p, err := tree.SplitPath(path)
	if err != nil {
		return err
	}
	n, err := tree.ParseBody([]byte(v), tree.MaxDepth)
	if err != nil {
		return err
	}
	_, err = d.Propose(context.Background(), fsm.Command{Kind: fsm.CmdSet, Path: p, Value: n, Body: []byte(v), Parsed: true}, fsm.AnswerOptions{})
	return err
}

// Subscribe implements Events as the node's hub would: on the apply
// goroutine, each batch that concerns a feed's location is judged as its
// reader and delivered with the location's value after it.
func (d *fsmDB) Subscribe(loc tree.Path, as *fsm.Access, wake func()) (Feed, error) {
	f := &fakeFeed{db: d, loc: loc, as: as, wake: wake}
	d.subMu.Lock()
	d.subs[f] = struct{}{}
	d.subMu.Unlock()
	return f, nil
}

// feeds is the number of open feeds.
func (d *fsmDB) feeds() int {
	d.subMu.Lock()
	defer d.subMu.Unlock()
	return len(d.subs)
}

func (d *fsmDB) publish(events []fsm.Event) {
	d.subMu.Lock()
	defer d.subMu.Unlock()
	for f := range d.subs {
		var mine []fsm.Event
		rules := false
		for _, e := range events {
			switch {
			case e.Kind == fsm.EventRules:
				rules = true
			case e.Kind == fsm.EventPatch && len(f.loc) > len(e.Path) && f.loc.HasPrefix(e.Path):
				mine = append(mine, patchBelow(e, f.loc)...)
			case e.Path.HasPrefix(f.loc) || f.loc.HasPrefix(e.Path):
				mine = append(mine, e)
			}
		}
		if len(mine) == 0 && !rules {
			continue
		}
		res, err := d.f.ReadAs(fsm.Read{Path: f.loc, Access: f.as})
		if errors.Is(err, fsm.ErrPermissionDenied) {
			f.deliver(Change{End: EndDenied})
			delete(d.subs, f)
			continue
		}
		if len(mine) > 0 {
			f.deliver(Change{Index: mine[len(mine)-1].Index, Events: mine, Value: res.Value, Indexes: res.Indexes})
		}
	}
}

// patchBelow is what the node's hub makes of an update above a feed's
// location: a put for each field at or below it, where it happened, and a
// put at the location for a field above it.
func patchBelow(e fsm.Event, loc tree.Path) []fsm.Event {
	var out []fsm.Event
	for _, f := range e.Fields {
		full := append(append(tree.Path{}, e.Path...), f.Path...)
		switch {
		case full.HasPrefix(loc):
			out = append(out, fsm.Event{Kind: fsm.EventPut, Index: e.Index, Path: full, Value: f.Value})
		case loc.HasPrefix(full):
			out = append(out, fsm.Event{Kind: fsm.EventPut, Index: e.Index, Path: loc, Value: f.Value.Get(loc[len(full):])})
		}
	}
	return out
}

// fakeFeed is one subscription of fsmDB.
type fakeFeed struct {
	db   *fsmDB
	loc  tree.Path
	as   *fsm.Access
	wake func()

	mu      sync.Mutex
	changes []Change
}

func (f *fakeFeed) deliver(c Change) {
	f.mu.Lock()
	f.changes = append(f.changes, c)
	f.mu.Unlock()
	f.wake()
}

func (f *fakeFeed) Take() []Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.changes
	f.changes = nil
	return c
}

func (f *fakeFeed) Close() {
	f.db.subMu.Lock()
	delete(f.db.subs, f)
	f.db.subMu.Unlock()
}

// fakeTokens accepts "uid:<name>" tokens valid until expires, and
// "expired" ones; anything else is invalid.
type fakeTokens struct {
	expires time.Time
}

func (t fakeTokens) Verify(token string) (Identity, error) {
	switch {
	case token == "expired":
		return Identity{}, fmt.Errorf("token: %w", ErrExpiredToken)
	case strings.HasPrefix(token, "uid:"):
		uid := strings.TrimPrefix(token, "uid:")
		return Identity{Auth: map[string]any{"uid": uid}, Claims: map[string]any{"sub": uid}, Expires: t.expires}, nil
	}
	return Identity{}, errors.New("token: not one of ours")
}

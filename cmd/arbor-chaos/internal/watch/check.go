package watch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/workload"
)

// Verdict is the judgement of what the watchers saw.
type Verdict struct {
	Results []checks.Result
	Figures Figures
}

// sighting is where an element was seen as the change of one entry.
type sighting struct {
	watcher int
	index   uint64
	element string
}

// checker holds the state of one Check.
type checker struct {
	h                      map[string]*keyWrites
	valid, order, complete *checks.Builder
	fig                    Figures
	// direct[key][element]: the entry that made the change, from the
	// first watcher that saw it as its own event
	direct map[string]map[string]sighting
	// entries[key][index]: what that entry made of the key
	entries map[string]map[uint64]sighting
	// seen[watcher][key][element], and seenAny[key][element] over all
	seen    []map[string]map[string]bool
	seenAny map[string]map[string]bool
}

// Check judges the watchers' records against the history ops and the
// final state:
//
//   - written: every value a watcher saw was written by an operation
//     that did not certainly fail (acknowledged or indeterminate) — the
//     register value, each increment's bit, each list child under the push
//     key its append was acknowledged with;
//   - order: frames well formed with ids increasing on every stream;
//     per key, changes at increasing indexes, no register value seen again
//     once replaced, counters and lists only growing, push keys arriving
//     in increasing order, one element per event; the entry of an element
//     is the same on every watcher, and an index means the same change on
//     every watcher; commit order agrees with real time (no write
//     committed after one that was acknowledged before it was invoked);
//   - complete: every watcher's copy equals the final state, which holds
//     the marker written after everything else; and every register value
//     known to be committed (acknowledged, or seen by a read or a
//     watcher) reached every watcher, unless a put at "/" may have
//     coalesced it: its entry lies in the range a put covered, or —
//     when no watcher saw it as its own event, so its index is unknown —
//     a put arrived after the write was invoked. Those are counted, not
//     failed. A write whose outcome its client did not learn is held to
//     this only once something saw it.
func Check(ops []history.Op, f File) Verdict {
	c := &checker{
		h:        indexHistory(ops),
		valid:    checks.NewBuilder("stream values were written"),
		order:    checks.NewBuilder("stream events in commit order"),
		complete: checks.NewBuilder("streams complete"),
		direct:   map[string]map[string]sighting{},
		entries:  map[string]map[uint64]sighting{},
		seenAny:  map[string]map[string]bool{},
	}
	c.fig = tally(f.Watchers)
	for w, rec := range f.Watchers {
		c.seen = append(c.seen, map[string]map[string]bool{})
		for _, p := range rec.Problems {
			c.order.Fail("%s", p)
		}
		if rec.MoreProblems > 0 {
			c.order.Fail("watcher %d: %d more protocol problems", w, rec.MoreProblems)
		}
		for _, key := range slices.Sorted(maps.Keys(rec.Keys)) {
			c.walk(w, key, rec.Keys[key])
		}
	}
	entries := c.realTime()
	c.finalState(f)
	c.delivery(f)
	c.fig.Violations = c.valid.Count + c.order.Count + c.complete.Count
	return Verdict{
		Results: []checks.Result{
			c.valid.Done(fmt.Sprintf("%d changes seen by %d watchers, held against the operations that may have written them", c.fig.Changes, len(f.Watchers))),
			c.order.Done(fmt.Sprintf("%d streams; %d entries compared across watchers and with real time", c.fig.Streams, entries)),
			c.complete.Done(fmt.Sprintf("%d copies compared with the final state; committed register values: %d delivered, %d coalesced into a put at \"/\", %d before a watcher's first put",
				len(f.Watchers),
				c.fig.Delivered, c.fig.Coalesced, c.fig.BeforeStart)),
		},
		Figures: c.fig,
	}
}

// walk checks one watcher's changes of one key.
func (c *checker) walk(w int, key string, obs []Obs) {
	if key == MarkerKey || key == PresenceKey || strings.HasPrefix(key, PresenceKey+"/") {
		return
	}
	kind, ok := workload.KindOf(key)
	if !ok || strings.Count(key, "/") != keyDepth-1 {
		for _, o := range obs {
			c.valid.Fail("watcher %d: %q = %.80s at index %d: a path the workload never writes", w, key, o.Value, o.Index)
		}
		return
	}
	kw := c.h[key]
	if kw == nil {
		kw = &keyWrites{kind: kind}
	}
	var (
		prev    uint64
		seen    = map[string]bool{} // register values
		ctr     uint64              // counter bits
		maxName string              // list: the greatest push key so far
	)
	for _, o := range obs {
		c.fig.Changes++
		if o.Index <= prev {
			c.order.Fail("watcher %d: %s: a change at index %d after one at index %d", w, key, o.Index, prev)
		}
		prev = max(prev, o.Index)
		switch kind {
		case history.Register:
			c.register(w, key, kw, o, seen)
		case history.Counter:
			ctr = c.counter(w, key, kw, o, ctr)
		case history.List:
			maxName = c.list(w, key, kw, o, maxName)
		}
	}
}

// written checks that element e of key was written by an operation that
// may have happened, and returns it.
func (c *checker) written(w int, key string, kw *keyWrites, e, what string, index uint64) *history.Op {
	op := kw.writes[e]
	switch {
	case op == nil:
		c.valid.Fail("watcher %d: %s: %s at index %d, which no operation wrote", w, key, what, index)
	case !op.MayHaveHappened():
		c.valid.Fail("watcher %d: %s: %s at index %d, written by %s, which certainly did not take effect", w, key, what, index, describe(op))
	}
	return op
}

func (c *checker) register(w int, key string, kw *keyWrites, o Obs, seen map[string]bool) {
	v := o.Value
	if v == history.Null {
		if !o.Rebase {
			c.sight(w, key, v, o.Index, false)
		}
		return
	}
	var s string
	if json.Unmarshal([]byte(v), &s) != nil {
		c.valid.Fail("watcher %d: %s = %.80s at index %d: not a string", w, key, v, o.Index)
		return
	}
	c.written(w, key, kw, v, v, o.Index)
	if seen[v] {
		c.order.Fail("watcher %d: %s = %s again at index %d after it had been replaced: the value went back", w, key, v, o.Index)
	}
	seen[v] = true
	c.see(w, key, v)
	if !o.Rebase {
		c.sight(w, key, v, o.Index, true)
	}
}

func (c *checker) counter(w int, key string, kw *keyWrites, o Obs, prev uint64) uint64 {
	var cur uint64
	if o.Value != history.Null {
		n, err := strconv.ParseInt(o.Value, 10, 64)
		if err != nil || n < 0 {
			c.valid.Fail("watcher %d: %s = %.80s at index %d: not a count", w, key, o.Value, o.Index)
			return prev
		}
		cur = uint64(n)
	}
	lost, added := prev&^cur, cur&^prev
	if lost != 0 {
		c.order.Fail("watcher %d: %s went from %d to %d at index %d: increments lost", w, key, prev, cur, o.Index)
	}
	var op *history.Op
	for _, b := range bitsOf(added) {
		e := bitElement(b)
		op = c.written(w, key, kw, e, fmt.Sprintf("the increment 2^%d in %d", b, cur), o.Index)
		c.see(w, key, e)
	}
	if o.Rebase {
		c.fig.InPut += bits.OnesCount64(added)
		return cur
	}
	c.fig.OwnEvent++
	if bits.OnesCount64(added) != 1 || lost != 0 {
		c.order.Fail("watcher %d: %s went from %d to %d in the one event of index %d: not one increment", w, key, prev, cur, o.Index)
		return cur
	}
	c.sight(w, key, bitElement(bits.TrailingZeros64(added)), o.Index, true)
	if op != nil && op.Acked() && uint64(op.OutNum) != cur {
		c.order.Fail("watcher %d: %s: the event of %s at index %d shows %d, its client was answered %d", w, key, describe(op), o.Index, cur, op.OutNum)
	}
	return cur
}

func (c *checker) list(w int, key string, kw *keyWrites, o Obs, maxName string) string {
	if o.Value != "" {
		c.valid.Fail("watcher %d: %s = %.80s at index %d: not a list", w, key, o.Value, o.Index)
	}
	for _, it := range o.Removed {
		c.order.Fail("watcher %d: %s: child %s (%q) removed or changed at index %d: lists only grow", w, key, it.Name, it.Value, o.Index)
	}
	for _, it := range o.Added {
		op := c.written(w, key, kw, it.Value, fmt.Sprintf("child %s = %q", it.Name, it.Value), o.Index)
		if op != nil && op.Acked() && op.Name != it.Name {
			c.valid.Fail("watcher %d: %s: %q under push key %s at index %d; %s was answered %s", w, key, it.Value, it.Name, o.Index, describe(op), op.Name)
		}
		if it.Name <= maxName {
			c.order.Fail("watcher %d: %s: push key %s arrived at index %d after %s: not in commit order", w, key, it.Name, o.Index, maxName)
		}
		maxName = max(maxName, it.Name)
		c.see(w, key, it.Value)
	}
	if o.Rebase {
		c.fig.InPut += len(o.Added)
		return maxName
	}
	c.fig.OwnEvent++
	if len(o.Added) != 1 || len(o.Removed) != 0 {
		c.order.Fail("watcher %d: %s: the one event of index %d added %d children and removed %d", w, key, o.Index, len(o.Added), len(o.Removed))
		return maxName
	}
	c.sight(w, key, o.Added[0].Value, o.Index, true)
	return maxName
}

// see notes that watcher w saw element e of key.
func (c *checker) see(w int, key, e string) {
	if c.seen[w][key] == nil {
		c.seen[w][key] = map[string]bool{}
	}
	c.seen[w][key][e] = true
	if c.seenAny[key] == nil {
		c.seenAny[key] = map[string]bool{}
	}
	c.seenAny[key][e] = true
}

// sight records that entry index made key's element e, as watcher w saw
// it in its own event; unique elements have one entry only.
func (c *checker) sight(w int, key, e string, index uint64, unique bool) {
	s := sighting{watcher: w, index: index, element: e}
	if unique {
		if c.direct[key] == nil {
			c.direct[key] = map[string]sighting{}
		}
		if d, ok := c.direct[key][e]; !ok {
			c.direct[key][e] = s
		} else if d.index != index {
			c.order.Fail("%s: %s came with the event of index %d on watcher %d and of index %d on watcher %d: one write, two entries", key, e, d.index, d.watcher, index, w)
		}
	}
	if c.entries[key] == nil {
		c.entries[key] = map[uint64]sighting{}
	}
	if d, ok := c.entries[key][index]; !ok {
		c.entries[key][index] = s
	} else if d.element != e {
		c.order.Fail("%s: the entry of index %d made %s on watcher %d but %s on watcher %d", key, index, d.element, d.watcher, e, w)
	}
}

// realTime checks that the commit order of the writes whose entries the
// watchers saw agrees with real time: a write acknowledged before
// another was invoked has the lower index. It returns how many entries
// were compared.
func (c *checker) realTime() int {
	n := 0
	for _, key := range slices.Sorted(maps.Keys(c.direct)) {
		kw := c.h[key]
		if kw == nil {
			continue
		}
		type entry struct {
			index uint64
			op    *history.Op
		}
		var es []entry
		for e, s := range c.direct[key] {
			if op := kw.writes[e]; op != nil {
				es = append(es, entry{s.index, op})
			}
		}
		slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.index, b.index) })
		n += len(es)
		// The latest invocation among the writes committed so far.
		var latest *entry
		for i := range es {
			e := &es[i]
			if latest != nil && e.op.Acked() && e.op.Return < latest.op.Call {
				c.order.Fail("%s: %s committed at index %d, after %s at index %d, yet was acknowledged at %s, before that one was invoked at %s",
					key, describe(e.op), e.index, describe(latest.op), latest.index, at(e.op.Return), at(latest.op.Call))
			}
			if latest == nil || e.op.Call > latest.op.Call {
				latest = e
			}
		}
	}
	return n
}

// at renders a time of the history's clock.
func at(ns int64) string {
	return fmt.Sprintf("%.3fs", time.Duration(ns).Seconds())
}

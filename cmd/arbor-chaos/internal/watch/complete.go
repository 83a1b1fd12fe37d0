package watch

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// finalState checks every watcher's copy against the final state.
func (c *checker) finalState(f File) {
	if f.Final == "" {
		if len(f.Watchers) > 0 {
			c.complete.Fail("no final state to compare the copies with: %s", f.Error)
		}
		return
	}
	for w, rec := range f.Watchers {
		if rec.Copy != f.Final {
			c.complete.Fail("watcher %d: its copy differs from the final state (last id %d): %s", w, rec.Last, diffTrees(rec.Copy, f.Final))
		}
	}
}

// diffTrees names the first keys whose values differ between a copy and
// the final state.
func diffTrees(copyJSON, final string) string {
	a, errA := decodeValue([]byte(copyJSON))
	b, errB := decodeValue([]byte(final))
	if errA != nil || errB != nil {
		return fmt.Sprintf("unreadable (%v, %v)", errA, errB)
	}
	keys := map[string]bool{}
	keysUnder(a, nil, keys)
	keysUnder(b, nil, keys)
	var out []string
	n := 0
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, y := Tree{a}, Tree{b}
		va, vb := x.Get(splitKey(k)), y.Get(splitKey(k))
		if reflect.DeepEqual(va, vb) {
			continue
		}
		n++
		if len(out) < 3 {
			out = append(out, fmt.Sprintf("%s: watcher %.60s, cluster %.60s", k, jsonText(va), jsonText(vb)))
		}
	}
	if n > len(out) {
		out = append(out, fmt.Sprintf("… %d keys in all", n))
	}
	return strings.Join(out, "; ")
}

// delivery checks that every committed register value reached every
// watcher that reached the final state, unless a put at "/" may have
// coalesced it (see Check). Counters and lists only grow, so a copy equal
// to the final state holds all of theirs; a register value can be
// overwritten before a watcher sees it.
func (c *checker) delivery(f File) {
	for w, rec := range f.Watchers {
		reached := f.Final != "" && rec.Copy == f.Final
		for _, key := range slices.Sorted(maps.Keys(c.h)) {
			kw := c.h[key]
			if kw.kind != history.Register {
				continue
			}
			committed := maps.Clone(kw.committed)
			maps.Copy(committed, c.seenAny[key])
			for _, v := range slices.Sorted(maps.Keys(committed)) {
				if c.seen[w][key][v] {
					c.fig.Delivered++
					continue
				}
				op := kw.writes[v]
				if op == nil || !op.MayHaveHappened() {
					continue // the written check says so
				}
				c.missed(w, rec, reached, key, v, op)
			}
		}
	}
}

// missed judges a committed register value v that watcher w never saw.
func (c *checker) missed(w int, rec Record, reached bool, key, v string, op *history.Op) {
	if len(rec.Puts) == 0 {
		return // never started: the final state check says so
	}
	if s, ok := c.direct[key][v]; ok {
		if s.index > rec.Last {
			return // past the watcher's last event: the final state check says so
		}
		for i, p := range rec.Puts {
			if p.After < s.index && s.index <= p.Index {
				c.coalesced(i == 0)
				return
			}
		}
		c.complete.Fail("watcher %d: %s = %s, written by %s, never arrived, though its entry %d (seen by watcher %d) lies where the stream missed nothing",
			w, key, v, describe(op), s.index, s.watcher)
		return
	}
	if !reached {
		return // without the marker, an unknown index may lie past the watcher's last event
	}
	// The entry's index is unknown, but above that of every put that
	// arrived before the write was invoked.
	var late []int
	for i, p := range rec.Puts {
		if p.At > op.Call {
			late = append(late, i)
		}
	}
	if len(late) == 0 {
		last := rec.Puts[len(rec.Puts)-1]
		c.complete.Fail("watcher %d: %s = %s, written by %s invoked at %s, never arrived, though no put at \"/\" came after (the last, index %d, at %s)",
			w, key, v, describe(op), at(op.Call), last.Index, at(last.At))
		return
	}
	c.coalesced(len(late) == 1 && late[0] == 0)
}

func (c *checker) coalesced(beforeStart bool) {
	if beforeStart {
		c.fig.BeforeStart++
	} else {
		c.fig.Coalesced++
	}
}

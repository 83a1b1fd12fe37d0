package fsm

import (
	"context"

	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// Building the indexes new rules declare outside Apply. Indexing a node
// of a million children takes seconds, and Apply holds up every write
// meanwhile; an index changes no answer, only its cost. So the apply of
// new rules keeps the indexes the old ones had and marks the set partial;
// BuildIndexes, on a goroutine of the caller's (cluster's), builds the
// whole set from that state's immutable tree, then installs it, caught up
// with what was written in the meantime (the paths the partial set
// logged) as Apply keeps a set through a write. Until then queries of the
// new indexes scan. Which indexes a replica holds when thus depends on
// timing, but no replicated value does.

// maxLoggedPaths bounds the paths a partial set remembers (a few seconds
// of a heavy write load): past it, a build begun earlier cannot catch up
// and starts again from a newer state.
const maxLoggedPaths = 1 << 17

// writeLog is what was written to a partial set's tree since the set was
// made: each write's paths, newest first, sharing the older entries. Its
// first entry has no paths; a new one starts the log afresh.
type writeLog struct {
	paths [][]string
	n     int // paths here and in the older entries
	older *writeLog
}

// add returns l with the paths of one more write.
func (l *writeLog) add(paths [][]string) *writeLog {
	if l.n+len(paths) > maxLoggedPaths {
		return &writeLog{}
	}
	return &writeLog{paths: paths, n: l.n + len(paths), older: l}
}

// since returns the paths written after from, an older entry of l, and
// false when from is not one (the log started afresh since).
func (l *writeLog) since(from *writeLog) ([][]string, bool) {
	var out [][]string
	for ; l != nil; l = l.older {
		if l == from {
			return out, true
		}
		out = append(out, l.paths...)
	}
	return nil, false
}

// Pending reports whether s is partial: indexes its rules declare are
// still to be built (FSM.BuildIndexes), and their queries scan meanwhile.
func (s *IndexSet) Pending() bool { return s != nil && s.pending != nil }

// carryIndexSet is the partial set of the rules set over the tree prev
// indexes: prev's indexes that set still declares, nothing built (nil when
// set declares none).
func carryIndexSet(set *rules.Ruleset, prev *IndexSet) *IndexSet {
	decls := declsOf(set)
	if len(decls) == 0 {
		return nil
	}
	s := &IndexSet{rules: set, decls: decls, locs: newIndexLocs(), pending: &writeLog{}}
	if prev != nil {
		prev.locs.Scan(func(li *locIndex) bool {
			if s.declares(li.loc, li.ix.Order().Child()) {
				s.locs.Load(li)
			}
			return true
		})
	}
	return s
}

// IndexWork receives a value when a state whose index set is partial is
// published: BuildIndexes then has work.
func (f *FSM) IndexWork() <-chan struct{} { return f.indexWork }

// installAtMost is how many written paths a build catches up with
// outside Apply's lock (in rounds, while writes go on) before installing.
const installAtMost = 256

// BuildIndexes builds on the calling goroutine the indexes the current
// state's rules declare and Apply left out, and installs them; it returns
// once the current set is complete, or with ctx's error. Apply waits only
// while the indexes catch up with the last few writes of the build.
func (f *FSM) BuildIndexes(ctx context.Context) error {
	for {
		s := f.cur.Load()
		if !s.indexes.Pending() {
			return nil
		}
		built, err := buildIndexSet(ctx, s.indexes.rules, s.root, s.indexes)
		if err != nil {
			return err
		}
		f.installIndexes(f.catchUp(s.indexes, s.root, built))
	}
}

// catchUp brings built, the complete set of from's rules over root, up to
// date with the writes applied since, in a few rounds outside Apply's
// lock, while there are more than installAtMost paths to catch up with.
// It returns the partial set and tree built is now of.
func (f *FSM) catchUp(from *IndexSet, root *tree.Node, built *IndexSet) (*IndexSet, *tree.Node, *IndexSet) {
	for range 8 {
		cur := f.cur.Load()
		paths, ok := cur.indexes.since(from)
		if !ok || len(paths) <= installAtMost {
			break
		}
		from, root, built = cur.indexes, cur.root, built.afterWrite(root, cur.root, paths)
	}
	return from, root, built
}

// since returns the paths written between the partial set from and s, a
// later one, and false when s is not one: new rules, a complete set, or
// more writes than the log keeps.
func (s *IndexSet) since(from *IndexSet) ([][]string, bool) {
	if !s.Pending() {
		return nil, false
	}
	return s.pending.since(from.pending)
}

// installIndexes makes built, the complete set of from's rules over root
// (the tree of the state whose partial set was from), the current state's
// set, brought up to date with the writes applied since. It reports false,
// changing nothing, when the current set is not a later one than from.
func (f *FSM) installIndexes(from *IndexSet, root *tree.Node, built *IndexSet) bool {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	cur := f.cur.Load()
	paths, ok := cur.indexes.since(from)
	if !ok {
		return false
	}
	next := *cur
	next.indexes = built.afterWrite(root, cur.root, paths)
	f.cur.Store(&next)
	return true
}

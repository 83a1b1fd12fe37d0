package fsm

import (
	"slices"

	"github.com/arbordb/arbor/fsm/tree"
)

// A PATCH prepared across its chunks is built on the node it writes as
// the first batch saw it (its base). Other writes may land between the
// chunks; a client could even write there on purpose to force the
// one-step apply at the last chunk. For the common shape — one-key
// fields, none null, no increments — the PATCH's outcome on the node as
// it is at the last chunk (cur) follows from the prepared value and what
// those writes changed, without the one-step merge of every field:
//
//   - each field sets its key's child, whatever was there before, so
//     cur's other children are the result's other children;
//   - writes below the node are noted by the first key below it (dirty):
//     a dirty key a field sets stays the field's value; any other dirty
//     key takes cur's child;
//   - a write at or above the node (it was replaced) makes the result the
//     fields' object (the echo) with cur's other children added, when cur
//     is a small object without a priority, or the echo itself when cur
//     is absent.
//
// The write limit counts what the fields replaced in cur. Anything else
// falls back to the one-step apply (TestChunkPrepMatchesOneStep has the
// cases).

// rebaseDirtyMax bounds the keys noted below the node: past it the
// one-step apply decides.
const rebaseDirtyMax = 100_000

// rebaseCurMax bounds the children of a replaced node taken over.
const rebaseCurMax = 100_000

// noteWrite records that a write at paths (absolute) was applied between
// the chunks.
func (pr *chunkPrep) noteWrite(paths [][]string) {
	if pr.off || !pr.based || pr.unrebasable {
		return
	}
	for _, p := range paths {
		switch {
		case len(p) <= len(pr.path) && slices.Equal(p, pr.path[:len(p)]):
			pr.replaced = true // at or above the node
		case len(p) > len(pr.path) && slices.Equal(p[:len(pr.path)], pr.path):
			k := p[len(pr.path)]
			if k == ".priority" || len(pr.dirty) >= rebaseDirtyMax {
				pr.unrebasable = true
				return
			}
			if pr.dirty == nil {
				pr.dirty = map[string]struct{}{}
			}
			pr.dirty[k] = struct{}{}
		}
	}
}

// rebase is the prepared value on cur, the node as it is now, and what
// the fields replaced there; false leaves the PATCH to the one-step
// apply.
func (pr *chunkPrep) rebase(cur *tree.Node) (*tree.Node, int64, bool) {
	if pr.unrebasable || pr.nonFlat || pr.deletes || pr.incs || pr.err != nil || pr.echo == nil {
		return nil, 0, false
	}
	fieldsObj := pr.echo // one-key fields, none null: the echo is their object
	if pr.replaced || pr.base == nil {
		if cur == nil {
			return fieldsObj, 0, true
		}
		if cur.Kind() != tree.KindObject || cur.Priority() != nil || cur.Len() > rebaseCurMax {
			return nil, 0, false
		}
		var others []tree.Field
		var removed int64
		cur.Each(func(k string, c *tree.Node) bool {
			if fieldsObj.Child(k) == nil {
				others = append(others, tree.Field{Path: tree.Path{k}, Value: c})
			} else {
				removed += c.Size()
			}
			return true
		})
		if len(others) == 0 {
			return fieldsObj, removed, true
		}
		u, err := tree.UpdateCounted(fieldsObj, tree.Write{}, others)
		if err != nil {
			return nil, 0, false
		}
		return u.Root, removed, true
	}
	// Writes below the node only: the dirty keys are what changed.
	if cur.Kind() != tree.KindObject {
		return nil, 0, false
	}
	removed := pr.removed
	var others []tree.Field
	for k := range pr.dirty {
		now := cur.Child(k)
		if fieldsObj.Child(k) != nil {
			removed += now.Size() - pr.base.Child(k).Size()
			continue
		}
		others = append(others, tree.Field{Path: tree.Path{k}, Value: now})
	}
	if len(others) == 0 {
		return pr.value, removed, true
	}
	// Map order does not matter: the keys differ, and none is the last
	// child of the value (the fields' are there).
	slices.SortFunc(others, func(a, b tree.Field) int { return tree.CompareKeys(a.Path[0], b.Path[0]) })
	u, err := tree.UpdateCounted(pr.value, tree.Write{}, others)
	if err != nil {
		return nil, 0, false
	}
	return u.Root, removed, true
}

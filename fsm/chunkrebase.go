package fsm

import (
	"slices"
	"strings"

	"github.com/arbordb/arbor/fsm/tree"
)

// A PATCH prepared across its chunks is built on the node it writes as
// the first batch saw it (its base). Other writes may land between the
// chunks; a client could even write there on purpose to force the
// one-step apply at the last chunk. The PATCH's outcome on the node as
// it is at the last chunk (cur) follows from the prepared value and what
// those writes changed, without the one-step merge of every field:
//
//   - writes below the node are noted by the first key below it (dirty);
//     every other child of cur is base's, and the prepared value's child
//     there is what the fields make of it on cur too;
//   - for one-key fields, none null, no increments: a dirty key a field
//     sets stays the field's value; any other dirty key takes cur's
//     child (rebaseFlat);
//   - otherwise (deep paths, increments, nulls) the fields under each
//     dirty key are applied again to cur's child (rebaseFields); with
//     nulls, whether the node itself died on the way on cur is decided
//     apart (diedOnCur), as it decides its priority and its ancestors';
//   - a write at or above the node (it was replaced) makes the result,
//     for one-key fields none null, the fields' object (the echo) with
//     cur's other children added, when cur is a small object without a
//     priority, or the echo itself when cur is absent.
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
func (pr *chunkPrep) rebase(root *tree.Node, path tree.Path, cur *tree.Node) (value *tree.Node, removed int64, died, ok bool) {
	if pr.unrebasable || pr.err != nil || pr.echo == nil && !pr.deletes {
		return nil, 0, false, false
	}
	if !pr.replaced && pr.base != nil && cur.Kind() == tree.KindObject && (pr.nonFlat || pr.incs || pr.deletes) {
		value, removed, survivor, ok := pr.rebaseFields(cur)
		if !ok || !pr.deletes {
			return value, removed, false, ok
		}
		return pr.diedOnCur(root, path, cur, value, removed, survivor)
	}
	value, removed, ok = pr.rebaseFlat(cur)
	return value, removed, false, ok // no field is null: nothing died
}

// rebaseFlat is rebase for one-key fields, none null and no increments.
func (pr *chunkPrep) rebaseFlat(cur *tree.Node) (*tree.Node, int64, bool) {
	if pr.deletes || pr.nonFlat || pr.incs {
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

// rebaseFields rebases a PATCH of deep paths, increments or nulls on
// cur, whose dirty children were written between the chunks: the fields
// under a dirty key are applied again to cur's child (increments
// resolved anew, from the values decoded), and their resolved values,
// echo members and byte counts follow. One pass over the fields finds
// them. survivor says a dirty key no field touches has a child in cur:
// the node cannot die on the way (diedOnCur).
func (pr *chunkPrep) rebaseFields(cur *tree.Node) (value *tree.Node, removed int64, survivor, ok bool) {
	groups := make(map[string][]int, len(pr.dirty))
	for i, f := range pr.fields {
		if _, ok := pr.dirty[f.Path[0]]; ok {
			groups[f.Path[0]] = append(groups[f.Path[0]], i)
		}
	}
	written := pr.written
	removed = pr.removed
	children := make([]tree.Field, 0, len(pr.dirty))
	var echoFix []tree.Field
	for k := range pr.dirty {
		idx := groups[k]
		if len(idx) == 0 {
			children = append(children, tree.Field{Path: tree.Path{k}, Value: cur.Child(k)})
			survivor = survivor || cur.Child(k) != nil
			continue
		}
		rel := make([]tree.Field, len(idx))
		for j, i := range idx {
			f := pr.fields[i]
			v := f.Value
			if o, ok := pr.orig[i]; ok {
				v = o
			}
			rel[j] = tree.Field{Path: f.Path[1:], Value: v}
			written -= f.Value.Size()
			removed -= valueAt(pr.base, f.Path).Size()
		}
		var child *tree.Node
		resolved := make([]*tree.Node, len(idx))
		if len(idx) == 1 && len(rel[0].Path) == 0 {
			// A one-key field: its value over cur's child.
			was := cur.Child(k)
			if err := tree.CheckIncrements(rel[0].Value, was); err != nil {
				return nil, 0, false, false
			}
			child = tree.Resolve(rel[0].Value, was, 0) // no timestamps here (merge)
			resolved[0] = child
			written += child.Size()
			removed += was.Size()
		} else {
			for _, r := range rel {
				if len(r.Path) == 0 {
					return nil, 0, false, false // a field and one below it: crafted
				}
			}
			u, err := tree.UpdateCounted(cur.Child(k), tree.Write{CheckIncrements: true}, rel)
			if err != nil {
				return nil, 0, false, false
			}
			child = u.Root
			written += u.Written
			removed += u.Removed
			for j := range idx {
				resolved[j] = u.Resolved[j].Value
			}
		}
		for j, i := range idx {
			if resolved[j] != pr.fields[i].Value {
				name := strings.Join(pr.fields[i].Path, "/")
				if name == ".priority" {
					return nil, 0, false, false
				}
				pr.fields[i].Value = resolved[j]
				echoFix = append(echoFix, tree.Field{Path: tree.Path{name}, Value: resolved[j]})
			}
		}
		children = append(children, tree.Field{Path: tree.Path{k}, Value: child})
	}
	// Children set before children deleted: the node keeps being the
	// same object (were the deletes first and took its last child, the
	// merge would make it anew, without its priority).
	slices.SortFunc(children, func(a, b tree.Field) int {
		if (a.Value == nil) != (b.Value == nil) {
			if a.Value == nil {
				return 1
			}
			return -1
		}
		return tree.CompareKeys(a.Path[0], b.Path[0])
	})
	u, err := tree.UpdateCounted(pr.value, tree.Write{}, children)
	if err != nil {
		return nil, 0, false, false
	}
	if len(echoFix) > 0 {
		e, err := tree.UpdateCounted(pr.echo, tree.Write{}, echoFix)
		if err != nil {
			return nil, 0, false, false
		}
		pr.echo = e.Root
	}
	pr.written = written
	return u.Root, removed, survivor, true
}

// rebaseScan bounds the children of the rebased value looked at for one
// no field touched (diedOnCur).
const rebaseScan = 4096

// diedOnCur finishes the rebase of a PATCH with nulls: value is right
// child by child, and what is left is whether the node died on the way
// on cur — which only matters for its priority (set on it or by a field)
// and for ancestors it is the only child of (rebornAt). A child of cur no
// null field goes through (survivor: a dirty key no field touches; or
// found among cur's first children, or, for one-key fields, among
// value's) means it never died; the prepared value must then not have died on base
// either, unless that took nothing away. Otherwise, when it matters, the
// one-step apply decides.
func (pr *chunkPrep) diedOnCur(root *tree.Node, path tree.Path, cur, value *tree.Node, removed int64, survivor bool) (*tree.Node, int64, bool, bool) {
	if !survivor && !pr.nullKeysMany {
		// A child of cur no null field goes through stays non-null.
		seen := 0
		cur.Each(func(k string, _ *tree.Node) bool {
			_, nulled := pr.nullKeys[k]
			survivor = !nulled
			seen++
			return !survivor && seen < rebaseScan
		})
	}
	if !survivor && !pr.nonFlat {
		// One-key fields: a child of value no field touched is not in the
		// echo (a touched one left non-null is).
		seen := 0
		value.Each(func(k string, _ *tree.Node) bool {
			if _, dirty := pr.dirty[k]; !dirty && pr.echo.Child(k) == nil {
				survivor = true
			}
			seen++
			return !survivor && seen < rebaseScan
		})
	}
	prio := cur.Priority() != nil || pr.prioField
	if survivor {
		if pr.died && prio {
			return nil, 0, false, false
		}
		return value, removed, false, true
	}
	if prio || onlyChild(root, path) {
		return nil, 0, false, false
	}
	return value, removed, false, true // dying or not leaves the same tree
}

// nullKeysMax bounds the keys of null fields a chunkPrep keeps.
const nullKeysMax = 1 << 16

// noteNull notes that a null field goes through the child at key.
func (pr *chunkPrep) noteNull(key string) {
	if pr.nullKeysMany {
		return
	}
	if len(pr.nullKeys) >= nullKeysMax {
		pr.nullKeys, pr.nullKeysMany = nil, true
		return
	}
	if pr.nullKeys == nil {
		pr.nullKeys = map[string]struct{}{}
	}
	pr.nullKeys[key] = struct{}{}
}

// onlyChild reports whether the node at p is the only child its parent
// has (or would have): its death would be its parent's.
func onlyChild(root *tree.Node, p tree.Path) bool {
	if len(p) == 0 {
		return false
	}
	parent := root.Get(p[:len(p)-1])
	others := parent.Len()
	if parent.Child(p[len(p)-1]) != nil {
		others--
	}
	return others == 0
}

// valueAt is what a field at path p replaces in n: the value there, or
// the priority of the node above a ".priority".
func valueAt(n *tree.Node, p tree.Path) *tree.Node {
	if p.IsPriority() {
		return n.Get(p.NodePath()).Priority()
	}
	return n.Get(p)
}

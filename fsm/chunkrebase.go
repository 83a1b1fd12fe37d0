package fsm

import (
	"slices"
	"strings"

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
	if pr.unrebasable || pr.deletes || pr.err != nil || pr.echo == nil {
		return nil, 0, false
	}
	fieldsObj := pr.echo // one-key fields, none null: the echo is their object
	if pr.replaced || pr.base == nil {
		if pr.nonFlat || pr.incs {
			return nil, 0, false
		}
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
	if pr.nonFlat || pr.incs {
		return pr.rebaseFields(cur)
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

// rebaseFields rebases a PATCH of deep paths or increments (none null) on
// cur, whose dirty children were written between the chunks: the fields
// under a dirty key are applied again to cur's child (increments
// resolved anew, from the values decoded), and their resolved values,
// echo members and byte counts follow. One pass over the fields finds
// them.
func (pr *chunkPrep) rebaseFields(cur *tree.Node) (*tree.Node, int64, bool) {
	groups := make(map[string][]int, len(pr.dirty))
	for i, f := range pr.fields {
		if _, ok := pr.dirty[f.Path[0]]; ok {
			groups[f.Path[0]] = append(groups[f.Path[0]], i)
		}
	}
	written, removed := pr.written, pr.removed
	children := make([]tree.Field, 0, len(pr.dirty))
	var echoFix []tree.Field
	for k := range pr.dirty {
		idx := groups[k]
		if len(idx) == 0 {
			children = append(children, tree.Field{Path: tree.Path{k}, Value: cur.Child(k)})
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
				return nil, 0, false
			}
			child = tree.Resolve(rel[0].Value, was, 0) // no timestamps here (merge)
			resolved[0] = child
			written += child.Size()
			removed += was.Size()
		} else {
			for _, r := range rel {
				if len(r.Path) == 0 {
					return nil, 0, false // a field and one below it: crafted
				}
			}
			u, err := tree.UpdateCounted(cur.Child(k), tree.Write{CheckIncrements: true}, rel)
			if err != nil {
				return nil, 0, false
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
					return nil, 0, false
				}
				pr.fields[i].Value = resolved[j]
				echoFix = append(echoFix, tree.Field{Path: tree.Path{name}, Value: resolved[j]})
			}
		}
		children = append(children, tree.Field{Path: tree.Path{k}, Value: child})
	}
	slices.SortFunc(children, func(a, b tree.Field) int { return tree.CompareKeys(a.Path[0], b.Path[0]) })
	u, err := tree.UpdateCounted(pr.value, tree.Write{}, children)
	if err != nil {
		return nil, 0, false
	}
	if len(echoFix) > 0 {
		e, err := tree.UpdateCounted(pr.echo, tree.Write{}, echoFix)
		if err != nil {
			return nil, 0, false
		}
		pr.echo = e.Root
	}
	pr.written = written
	return u.Root, removed, true
}

// valueAt is what a field at path p replaces in n: the value there, or
// the priority of the node above a ".priority".
func valueAt(n *tree.Node, p tree.Path) *tree.Node {
	if p.IsPriority() {
		return n.Get(p.NodePath()).Priority()
	}
	return n.Get(p)
}

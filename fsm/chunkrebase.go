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
var rebaseDirtyMax = 1 << 18 // a variable for tests

// rebaseCurMax bounds the children of a replaced node taken over.
var rebaseCurMax = 100_000 // a variable for tests

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
			if k == ".priority" {
				pr.prioWritten = true
				continue
			}
			if !pr.markDirty(k) {
				return
			}
		}
	}
}

// markDirty notes that the node's child at k may have changed; false
// (and unrebasable) past rebaseDirtyMax keys.
func (pr *chunkPrep) markDirty(k string) bool {
	if len(pr.dirty) >= rebaseDirtyMax {
		pr.unrebasable = true
		return false
	}
	if pr.dirty == nil {
		pr.dirty = map[string]struct{}{}
	}
	pr.dirty[k] = struct{}{}
	return true
}

// rebase is the prepared value on cur, the node as it is now, and what
// the fields replaced there; false leaves the PATCH to the one-step
// apply.
func (pr *chunkPrep) rebase(root *tree.Node, path tree.Path, cur *tree.Node) (value *tree.Node, removed int64, died, ok bool) {
	if pr.unrebasable || pr.err != nil || pr.echo == nil && !pr.deletes {
		return nil, 0, false, false
	}
	fresh := pr.replaced || pr.base == nil
	if !fresh && !pr.sameObject(cur) {
		return nil, 0, false, false
	}
	if !pr.nonFlat && !pr.incs && !pr.deletes && !pr.prioWritten {
		if value, removed, ok := pr.rebaseFlat(cur); ok {
			return value, removed, false, true // no field is null: nothing died
		}
	}
	if fresh && pr.base.Len() > rebaseCurMax {
		return pr.rebaseLargeReplaced(root, path, cur)
	}
	if fresh {
		// Any child of base or cur may differ: all are dirty.
		// A leaf is as good as nothing unless it has a priority.
		if cur.Kind() != tree.KindObject && cur.Priority() != nil || pr.base.Len() > rebaseCurMax || cur.Len() > rebaseCurMax {
			return nil, 0, false, false
		}
		for _, n := range []*tree.Node{pr.base, cur} {
			n.Each(func(k string, _ *tree.Node) bool { return pr.markDirty(k) })
		}
		if pr.unrebasable {
			return nil, 0, false, false
		}
	}
	value, removed, survivor, ok := pr.rebaseFields(cur)
	if !ok {
		return nil, 0, false, false
	}
	value, ok = pr.settle(root, path, cur, value, survivor)
	return value, removed, false, ok
}

// rebaseLargeReplaced is rebase for a node of more than rebaseCurMax
// children replaced between the chunks: its children no field touched are
// taken out of the prepared value in one pass (tree.Node.WithoutShared,
// not one by one: a million of them cost the one-step apply's seconds),
// and the keys of its children the fields changed or deleted become dirty
// keys of cur, with cur's own: the fields under them are applied again to
// what cur has there.
func (pr *chunkPrep) rebaseLargeReplaced(root *tree.Node, path tree.Path, cur *tree.Node) (*tree.Node, int64, bool, bool) {
	if cur.Kind() != tree.KindObject && cur.Priority() != nil || cur.Len() > rebaseCurMax {
		return nil, 0, false, false
	}
	kept, changed := pr.value.WithoutShared(pr.base, rebaseDirtyMax)
	if kept == nil && changed == nil {
		return nil, 0, false, false // not objects, or too much to apply again
	}
	v := *pr
	v.value, v.valueFresh, v.died = kept, true, false
	v.dirty = make(map[string]struct{}, len(changed)+cur.Len()+len(pr.dirty))
	for _, k := range changed {
		v.dirty[k] = struct{}{}
	}
	cur.Each(func(k string, _ *tree.Node) bool { return v.markDirty(k) })
	if v.unrebasable {
		return nil, 0, false, false
	}
	value, removed, survivor, ok := v.rebaseFields(cur)
	if !ok {
		return nil, 0, false, false
	}
	value, ok = v.settle(root, path, cur, value, survivor)
	if ok {
		pr.written, pr.echo = v.written, v.echo // cur's values counted and echoed
	}
	return value, removed, false, ok
}

// sameObject reports whether the writes between the chunks, all below
// the node or to its priority, changed it in place: it is an object, as
// base is; its size moved by its dirty children's entries alone (had it
// died and come back, it would have lost what its size held beyond its
// children: tree.Node.SizeBeyondChildren); and its priority is base's,
// unless one was written. The prepared value, changed in place from base,
// then carries what cur's size carries.
func (pr *chunkPrep) sameObject(cur *tree.Node) bool {
	if cur.Kind() != tree.KindObject || pr.base.Kind() != tree.KindObject {
		return false
	}
	if !pr.prioWritten && cur.Priority() != pr.base.Priority() {
		return false
	}
	d := cur.Size() - pr.base.Size()
	for k := range pr.dirty {
		d -= tree.EntrySize(k, cur.Child(k)) - tree.EntrySize(k, pr.base.Child(k))
	}
	return d == 0
}

// rebaseFlat is rebase for one-key fields, none null and no increments.
func (pr *chunkPrep) rebaseFlat(cur *tree.Node) (*tree.Node, int64, bool) {
	if pr.deletes || pr.nonFlat || pr.incs {
		return nil, 0, false
	}
	fieldsObj := pr.echo // one-key fields, none null: the echo is their object
	if pr.replaced || pr.base == nil {
		// Each field replaced nothing but the child of cur at its key.
		// (A key twice, which the parser never makes, would replace the
		// first value: not counted here.)
		if fieldsObj.Len() != len(pr.fields) {
			return nil, 0, false
		}
		removed := int64(len(pr.fields)) * nilSize
		if cur == nil {
			return fieldsObj, removed, true
		}
		if cur.Kind() != tree.KindObject || cur.Priority() != nil || cur.Len() > rebaseCurMax {
			return nil, 0, false
		}
		var others []tree.Field
		beyond := cur.Size() - 2 // the result is built anew: cur's size must hold nothing more
		cur.Each(func(k string, c *tree.Node) bool {
			beyond -= tree.EntrySize(k, c)
			if fieldsObj.Child(k) == nil {
				others = append(others, tree.Field{Path: tree.Path{k}, Value: c})
			} else {
				removed += c.Size() - nilSize
			}
			return true
		})
		if beyond != 0 {
			return nil, 0, false
		}
		if len(others) == 0 {
			return fieldsObj, removed, true
		}
		u, err := tree.UpdateCounted(fieldsObj, tree.Write{}, others)
		if err != nil {
			return nil, 0, false
		}
		return u.Root, removed, true
	}
	// Writes below the node only, in place (sameObject): the dirty keys
	// are what changed.
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
var rebaseScan = 4096 // a variable for tests

// settle finishes a rebase: value is right child by child, and what is
// left is the node itself on cur — whether it died on the way (only with
// nulls), which decides its priority, its ancestors' (rebornAt) and what
// its size holds beyond its children (tree.Node.SizeBeyondChildren), and
// which priority it keeps. A child of cur no null field goes through
// (survivor: a dirty key no field touches; or found among cur's first
// children, or, for one-key fields, among value's) means it lived. Where
// that is not known and matters, or a priority field makes the moments
// matter, the one-step apply decides (false).
func (pr *chunkPrep) settle(root *tree.Node, path tree.Path, cur, value *tree.Node, survivor bool) (*tree.Node, bool) {
	if value != nil && value.Kind() != tree.KindObject {
		return nil, false
	}
	lived := !pr.deletes || survivor || pr.findSurvivor(cur, value)
	// beyond is what value's size holds beyond its children: base's, or
	// nothing if it died on the way.
	// A leaf without a priority turns into an object made of its
	// children alone.
	beyond, known := int64(0), true
	switch {
	case pr.died || pr.valueFresh:
	case pr.base.Kind() == tree.KindObject:
		known = pr.base.Len() <= rebaseCurMax
		if known {
			beyond = pr.base.SizeBeyondChildren()
		}
	default:
		known = pr.base.Priority() == nil
	}
	switch {
	case cur.Kind() != tree.KindObject:
		// Replaced by nothing or a leaf without a priority (rebase): the
		// node came into being with the fields, new, without a priority
		// unless a field set one after that. A leaf no field turned into
		// an object stays.
		if pr.prioField || !known {
			return nil, false
		}
		if value == nil && cur != nil {
			return cur, true
		}
		return value.CarryOver(nil, beyond), true
	case pr.replaced || pr.base == nil:
		// Replaced by another object: the node is cur, changed in place,
		// if it lived.
		if pr.prioField || !known {
			return nil, false
		}
		if lived {
			return value.CarryOver(cur, beyond), true
		}
		ok := cur.Priority() == nil && !onlyChild(root, path) && cur.SizeBeyondChildren() == 0
		return value.CarryOver(nil, beyond), ok // dying or not, the same tree
	case lived && !pr.died:
		// Changed in place on base and on cur alike (sameObject).
		if pr.prioWritten {
			return value.WithPriority(cur.Priority()), !pr.prioField
		}
		return value, true
	case lived:
		// It came back on base (value is new) and lived on cur.
		return value.CarryOver(cur, 0), !pr.prioField && cur.Len() <= rebaseCurMax
	}
	// It may have died on cur: the same tree either way only if nothing
	// tells a new object from the old one.
	ok := !pr.prioField && cur.Priority() == nil && !onlyChild(root, path) &&
		cur.Len() <= rebaseCurMax && cur.SizeBeyondChildren() == 0
	return value.CarryOver(nil, beyond), ok && known
}

// findSurvivor looks for a child of cur that no null field goes through,
// among cur's first children, or, for one-key fields, among value's
// (one not in the echo was not touched: a touched one left non-null is).
func (pr *chunkPrep) findSurvivor(cur, value *tree.Node) bool {
	found := false
	if !pr.nullKeysMany {
		seen := 0
		cur.Each(func(k string, _ *tree.Node) bool {
			_, nulled := pr.nullKeys[k]
			found = !nulled
			seen++
			return !found && seen < rebaseScan
		})
	}
	if !found && !pr.nonFlat && !pr.replaced {
		seen := 0
		value.Each(func(k string, _ *tree.Node) bool {
			if _, dirty := pr.dirty[k]; !dirty && pr.echo.Child(k) == nil {
				found = true
			}
			seen++
			return !found && seen < rebaseScan
		})
	}
	return found
}

// nullKeysMax bounds the keys of null fields a chunkPrep keeps.
var nullKeysMax = 1 << 16 // a variable for tests

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

package fsm

import "github.com/arbordb/arbor/fsm/tree"

// A PATCH of deep paths into a node of many children is prepared on that
// node. Should another write replace the node between the chunks, the
// PATCH's outcome is its fields applied to what replaced it, and the
// prepared value does not help: the node's old children would have to be
// taken out of it one by one, and the fields under them applied again —
// the one-step apply's cost, 3 s of stall for a million two-key paths on
// two cores. So such a PATCH also builds its fields into nothing as its
// chunks come (a shadow), from which the outcome on any small replacement
// follows as for a PATCH whose node was absent at its first batch
// (chunkrebase.go). One-key fields need none (their echo is their object:
// rebaseFlat); the shadow starts with the first field of several keys,
// from the echo of the one-key fields before it, and is dropped by
// increments (resolved against the node, they differ on nothing) and by
// one-key fields that were null before it (the echo leaves them out).

// shadowPrep is the fields so far applied to nothing.
type shadowPrep struct {
	off              bool
	value            *tree.Node
	written, removed int64
}

// shadowMerge adds batch to the shadow, starting it when batch brings the
// first field of several keys into a node of many children. clean says
// the fields before batch were one-key fields, none null, no increments.
func (pr *chunkPrep) shadowMerge(batch []tree.Field, clean bool) {
	sh := pr.shadow
	if sh == nil {
		if !clean || !pr.nonFlat || pr.base.Kind() != tree.KindObject || pr.base.Len() <= rebaseCurMax {
			return
		}
		if pr.echoApp != nil {
			pr.echo, pr.echoApp = pr.echoApp.Build(), nil // merged from now on
		}
		before := int64(len(pr.fields) - len(batch))
		// One-key fields, none null, on nothing: their object is their
		// echo; each replaced nothing (tree.Node.Size of nil).
		sh = &shadowPrep{value: pr.echo, written: pr.written, removed: before * nilSize}
		pr.shadow = sh
	}
	if sh.off {
		return
	}
	if pr.incs {
		sh.off = true
		return
	}
	u, err := tree.UpdateCounted(sh.value, tree.Write{}, batch)
	if err != nil || u.Died {
		sh.off = true // the one-step apply decides
		return
	}
	sh.value = u.Root
	sh.written += u.Written
	sh.removed += u.Removed
}

// shadowRebase is rebase for a node of many children replaced between
// the chunks, from the shadow; false when there is none to use.
func (pr *chunkPrep) shadowRebase(root *tree.Node, path tree.Path, cur *tree.Node) (value *tree.Node, removed int64, died, ok bool) {
	sh := pr.shadow
	if sh == nil || sh.off || pr.incs {
		return nil, 0, false, false
	}
	v := *pr
	v.base, v.value, v.written, v.removed, v.died, v.shadow = nil, sh.value, sh.written, sh.removed, false, nil
	value, removed, died, ok = v.rebase(root, path, cur)
	if ok {
		pr.written = v.written // with cur's children counted
	}
	return value, removed, died, ok
}

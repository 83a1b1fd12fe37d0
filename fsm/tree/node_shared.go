package tree

// WithoutShared returns object n without the children it shares with
// object base — the same node under the same key, which is what a merge
// leaves of a child no field touched — as a new object (no priority, its
// size that of its children alone), and the keys of base's other
// children: changed in n, or gone from it. A caller that prepared n from
// base and must now apply the same fields to another node (fsm's large
// PATCH whose node was replaced between its chunks) keeps what the fields
// made without taking base's children out one by one. One pass over both
// objects; only base's changed children are hashed. A nil n shares
// nothing (every child of base is gone); nil, nil when n is a leaf, base
// is not an object, or more than maxChanged of base's children changed
// (the pass stops there).
func (n *Node) WithoutShared(base *Node, maxChanged int) (*Node, []string) {
	if n != nil && n.Kind() != KindObject || base.Kind() != KindObject || n == nil && base.Len() > maxChanged {
		return nil, nil
	}
	if n == nil {
		changed := make([]string, 0, base.Len())
		base.Each(func(k string, _ *Node) bool {
			changed = append(changed, k)
			return true
		})
		return nil, changed
	}
	// The children kept are loaded once the changed ones are known to be
	// few enough: a refusal costs only the comparisons.
	var changed, kept []entry // changed: base's
	ni, bi := n.children.Iter(), base.children.Iter()
	defer ni.Release()
	defer bi.Release()
	nOK, bOK := ni.First(), bi.First()
	for nOK || bOK {
		c := 0
		switch {
		case !nOK:
			c = 1
		case !bOK:
			c = -1
		default:
			ne, be := ni.Item(), bi.Item()
			c = compareKeyInfo(&ne.keyInfo, &be.keyInfo)
		}
		switch {
		case c < 0: // only in n: made by the fields
			kept = append(kept, ni.Item())
			nOK = ni.Next()
		case c > 0: // only in base: gone
			changed = append(changed, bi.Item())
			bOK = bi.Next()
		default:
			ne, be := ni.Item(), bi.Item()
			if ne.node != be.node {
				kept = append(kept, ne)
				changed = append(changed, be)
			}
			nOK, bOK = ni.Next(), bi.Next()
		}
		if len(changed) > maxChanged {
			return nil, nil
		}
	}
	children := newChildren()
	size := int64(2)
	hasSV := false
	for _, e := range kept {
		children.Load(e)
		size += entrySize(e.key, e.node)
		hasSV = hasSV || e.node.hasSV
	}
	keys := make([]string, len(changed))
	for i, e := range changed {
		keys[i] = e.key
	}
	if children.Len() == 0 {
		return nil, keys
	}
	// The shared children's lanes are base's, less its changed ones'.
	shared := subLanes(base.sumLanes(), sumDigests(changed))
	return newObject(children, subLanes(n.sumLanes(), shared), size, nil, hasSV), keys
}

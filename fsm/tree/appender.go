package tree

// Appender builds a new object batch by batch from children whose keys
// come in increasing key order — as a large PUT's or PATCH's members
// usually do — keeping the object's lane sum and size as it goes, so
// that Build costs nothing however many children there are. fsm builds a
// chunked command's value with it while the chunks are applied, leaving
// the last chunk's apply little to do (issue 19). ObjectBuilder, which
// takes keys in any order, sums a large object's digests in Build.
type Appender struct {
	children *btreeChildren
	last     keyInfo
	sum      [4]uint64
	size     int64
	hasSV    bool
	built    bool
}

// NewAppender returns an empty Appender.
func NewAppender() *Appender { return &Appender{children: newChildren(), size: 2} }

// Len is the number of children so far.
func (a *Appender) Len() int { return a.children.Len() }

// Append adds fields as children, each field's one key its key and its
// value (not null) the child. It reports false, adding nothing, when a
// field is not of that shape or the keys do not follow the last one's in
// strictly increasing key order; and after Build.
func (a *Appender) Append(fields []Field) bool {
	if a.built {
		return false
	}
	keys := make([]keyInfo, len(fields))
	prev, havePrev := a.last, a.children.Len() > 0
	for i, f := range fields {
		if len(f.Path) != 1 || f.Path[0] == ".priority" || f.Value == nil {
			return false
		}
		keys[i] = newKeyInfo(f.Path[0])
		if havePrev && compareKeyInfo(&prev, &keys[i]) >= 0 {
			return false
		}
		prev, havePrev = keys[i], true
	}
	sum := parallelLanes(len(fields), func(lo, hi int) [4]uint64 {
		var s [4]uint64
		for i := lo; i < hi; i++ {
			s = addLanes(s, entryDigest(keys[i].key, fields[i].Value))
		}
		return s
	})
	a.sum = addLanes(a.sum, sum)
	for i, f := range fields {
		a.children.Load(entry{keyInfo: keys[i], node: f.Value})
		a.size += entrySize(keys[i].key, f.Value)
		a.hasSV = a.hasSV || f.Value.hasSV
	}
	if len(fields) > 0 {
		a.last = keys[len(fields)-1]
	}
	return true
}

// Build returns the object (nil when it has no children), which takes
// the children over: the Appender takes no more after it.
func (a *Appender) Build() *Node {
	a.built = true
	if a.children.Len() == 0 {
		return nil
	}
	return newObject(a.children, a.sum, a.size, nil, a.hasSV)
}

// AppendOne adds child v under key, as Append does one field; false,
// adding nothing, when key does not follow the last one's in strictly
// increasing key order, v is null, or after Build.
func (a *Appender) AppendOne(key string, v *Node) bool {
	if a.built || v == nil || key == ".priority" {
		return false
	}
	ki := newKeyInfo(key)
	if a.children.Len() > 0 && compareKeyInfo(&a.last, &ki) >= 0 {
		return false
	}
	a.sum = addLanes(a.sum, entryDigest(key, v))
	a.children.Load(entry{keyInfo: ki, node: v})
	a.size += entrySize(key, v)
	a.hasSV = a.hasSV || v.hasSV
	a.last = ki
	return true
}

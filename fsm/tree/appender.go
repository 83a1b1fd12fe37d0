package tree

// Appender builds a new object child by child from children whose keys
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

// Build returns the object (nil when it has no children), which takes
// the children over: the Appender takes no more after it.
func (a *Appender) Build() *Node {
	a.built = true
	if a.children.Len() == 0 {
		return nil
	}
	return newObject(a.children, a.sum, a.size, nil, a.hasSV)
}

// AppendOne adds child v under key (as ObjectBuilder.Set would, any key);
// false, adding nothing, when key does not follow the last one's in
// strictly increasing key order, v is null, or after Build.
func (a *Appender) AppendOne(key string, v *Node) bool {
	if a.built || v == nil {
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

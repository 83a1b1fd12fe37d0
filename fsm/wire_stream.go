package fsm

import "github.com/arbordb/arbor/fsm/tree"

// wireStream decodes one value in appendWire's form from bytes that come
// piece by piece (a chunked command's chunks, chunkprep.go), building
// each object as its members come: a member is appended to its object
// (tree.Appender) as soon as it is whole, so the object is ready — digests
// summed, B-tree loaded — the moment its last member is. The value is
// the one wireNode decodes from the same bytes; anything wireNode would
// read differently (members out of key order, which appendWire never
// writes, or bytes it refuses) makes the stream bad, and the caller
// leaves the command to the one-step apply.
type wireStream struct {
	depth int // the value's nesting level, as wireNode's
	stack []wireFrame
	done  bool
	bad   bool
	value *tree.Node
}

// wireFrame is an object being decoded.
type wireFrame struct {
	app    *tree.Appender
	left   uint64 // members not read yet
	tag    byte
	depth  int
	key    string // its key in the object above
	hasKey bool   // the next member's key is read (memberKey)
	member string
}

// reset makes s ready for a new value at depth.
func (s *wireStream) reset(depth int) {
	*s = wireStream{depth: depth, stack: s.stack[:0]}
}

// feed decodes what d holds, leaving d at the end of the last whole
// piece read: the rest waits for more bytes.
func (s *wireStream) feed(d *decoder) {
	for !s.done && !s.bad {
		if len(s.stack) == 0 {
			if !s.startValue(d, s.depth, "") {
				return
			}
			continue
		}
		f := &s.stack[len(s.stack)-1]
		switch {
		case f.left == 0:
			if !s.finish(d) {
				return
			}
		case !f.hasKey:
			probe := *d
			probe.bytes()
			if probe.err != nil {
				return
			}
			f.member, f.hasKey = string(d.bytes()), true
		default:
			if !s.startValue(d, f.depth+1, f.member) {
				return
			}
		}
	}
}

// startValue reads a value at depth, to go under key in the object being
// decoded (or to be the value): a leaf whole, an object's header (pushed);
// false when d does not hold it yet.
func (s *wireStream) startValue(d *decoder, depth int, key string) bool {
	if len(d.b) == 0 {
		return false
	}
	tag := d.b[0]
	if tag&^wireFlags != wireObject {
		probe := *d
		probe.skipWire(depth)
		if probe.err != nil {
			return false // not all here yet (or malformed: the one-step apply says which)
		}
		v := d.wireNode(depth)
		if d.err != nil {
			s.bad = true
			return false
		}
		s.deliver(v)
		return true
	}
	if depth > wireDepth {
		s.bad = true
		return false
	}
	probe := *d
	probe.take(1)
	count := probe.uvarint()
	if probe.err != nil {
		return false
	}
	*d = probe
	if count == 0 {
		s.bad = true // an empty object: wireNode refuses it
		return false
	}
	s.stack = append(s.stack, wireFrame{app: tree.NewAppender(), left: count, tag: tag, depth: depth, key: key})
	return true
}

// finish closes the innermost object once its priority (if any) is here.
func (s *wireStream) finish(d *decoder) bool {
	f := s.stack[len(s.stack)-1]
	var prio *tree.Node
	if f.tag&wirePriority != 0 {
		probe := *d
		probe.skipWire(f.depth + 1)
		if probe.err != nil {
			return false
		}
		if prio = d.wireNode(f.depth + 1); d.err != nil {
			s.bad = true
			return false
		}
	}
	n := f.app.Build()
	if n == nil {
		s.bad = true // every member null: wireNode refuses the empty object
		return false
	}
	if f.tag&wirePriority != 0 {
		if f.tag&wireValuePriority == 0 {
			n = n.WithMemberPriority(prio)
		} else {
			n = n.WithPriority(prio)
		}
	}
	s.stack = s.stack[:len(s.stack)-1]
	s.deliver(n)
	return true
}

// deliver hands a whole value to the object being decoded, or makes it
// the stream's value.
func (s *wireStream) deliver(v *tree.Node) {
	if len(s.stack) == 0 {
		s.value, s.done = v, true
		return
	}
	f := &s.stack[len(s.stack)-1]
	// A null member is left out, as wireObject leaves it.
	if v != nil && !f.app.AppendOne(f.member, v) {
		s.bad = true
		return
	}
	f.left--
	f.hasKey = false
}

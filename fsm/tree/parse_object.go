package tree

import "strconv"

// objectState collects what an object's members say before the object can
// be built: its pseudo-children decide what kind of node it becomes.
type objectState struct {
	b        *ObjectBuilder
	prio     *Node
	val      *Node
	sv       *Node
	hasPrio  bool
	hasValue bool
	hasSV    bool
	others   int // members other than .sv, null ones included
}

// object parses an object at depth: an ordinary object, a primitive with a
// priority ({".value": v, ".priority": p}) or a server value ({".sv": …}).
func (p *parser) object(depth int) (*Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	var st objectState
	p.skipWS()
	if p.peek() == '}' {
		p.pos++
		p.nest--
		return nil, nil
	}
	for {
		if err := p.member(depth, &st); err != nil {
			return nil, err
		}
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case '}':
			p.pos++
			p.nest--
			return st.build()
		}
		return nil, errSyntax()
	}
}

// member parses one "key": value of an object at depth into st.
func (p *parser) member(depth int, st *objectState) error {
	p.skipWS()
	if p.peek() != '"' {
		return errSyntax()
	}
	at := p.pos
	key, err := p.str()
	if err != nil {
		return err
	}
	if err := p.expect(':'); err != nil {
		return err
	}
	switch key {
	case ".priority":
		st.prio, err = p.priority(depth)
		st.hasPrio = true
		st.others++
	case ".value":
		st.val, err = p.value(depth)
		st.hasValue = true
		st.others++
	case ".sv":
		st.sv, err = p.serverValue()
		st.hasSV = true
	default:
		if err := p.checkKey(key, at); err != nil {
			return err
		}
		var child *Node
		if child, err = p.value(depth + 1); err != nil {
			return err
		}
		switch {
		case child != nil:
			if st.b == nil {
				st.b = NewObjectBuilder()
			}
			st.b.Set(key, child)
		case st.b != nil:
			// The last of duplicate keys wins, even when it is null.
			st.b.remove(key)
		}
		st.others++
	}
	return err
}

func (st *objectState) build() (*Node, error) {
	switch {
	case st.hasSV:
		if st.others > 0 {
			return nil, errUnknownSV()
		}
		return st.sv, nil
	case st.hasValue:
		if st.b != nil && st.b.children.Len() > 0 {
			return nil, Public(ErrInvalidData, msgValueSiblings)
		}
		if st.hasPrio {
			return st.val.WithPriority(st.prio), nil
		}
		return st.val, nil
	case st.b == nil:
		return nil, nil
	}
	return st.b.Build(st.prio), nil
}

// remove deletes key from b, if present. It leaves hasSV as it was: a
// stale true only costs the resolver a walk.
func (b *ObjectBuilder) remove(key string) {
	if old, ok := b.children.Delete(entry{key: key}); ok {
		b.sum = subLanes(b.sum, entryDigest(key, old.node))
		b.size -= entrySize(key, old.node)
	}
}

// checkKey validates a member name whose opening quote is at offset at.
func (p *parser) checkKey(key string, at int) error {
	if key == "" || hasBadKeyChar(key) {
		return p.errBadKey(at)
	}
	if len(key) > MaxKeyBytes {
		return errTooDeep()
	}
	return nil
}

// hasBadKeyChar reports whether k holds one of . $ # [ ] / or a control
// character (ValidKey without the length rule, which has its own message).
func hasBadKeyChar(k string) bool {
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '.', '$', '#', '[', ']', '/', 0x7f:
			return true
		default:
			if c < 0x20 {
				return true
			}
		}
	}
	return false
}

// array parses an array at depth into an object keyed by element index;
// null elements are dropped but keep their index.
func (p *parser) array(depth int) (*Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	p.skipWS()
	if p.peek() == ']' {
		p.pos++
		p.nest--
		return nil, nil
	}
	var b *ObjectBuilder
	for i := 0; ; i++ {
		child, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if child != nil {
			if b == nil {
				b = NewObjectBuilder()
			}
			b.Set(strconv.Itoa(i), child)
		}
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case ']':
			p.pos++
			p.nest--
			if b == nil {
				return nil, nil
			}
			return b.Build(nil), nil
		}
		return nil, errSyntax()
	}
}

// priority parses the value of a .priority member of an object at depth.
func (p *parser) priority(depth int) (*Node, error) {
	p.skipWS()
	switch c := p.peek(); {
	case c == '"':
		return p.stringValue()
	case c == '-' || isDigit(c):
		return p.number()
	case c == 'n':
		return nil, p.literal("null")
	case c == '{':
		n, err := p.object(depth)
		if err != nil {
			return nil, err
		}
		if n.Kind() != KindTimestamp || n.Priority() != nil {
			return nil, Public(ErrInvalidData, msgBadPriority)
		}
		return n, nil
	case c == 't' || c == 'f' || c == '[':
		if err := p.skipValue(); err != nil {
			return nil, err
		}
		return nil, Public(ErrInvalidData, msgBadPriority)
	}
	return nil, errSyntax()
}

// serverValue parses the value of a .sv member: "timestamp" or
// {"increment": number}. Anything else that is valid JSON is an unknown
// server value.
func (p *parser) serverValue() (*Node, error) {
	p.skipWS()
	start, nest := p.pos, p.nest
	n, err := p.knownServerValue()
	if err != nil || n != nil {
		return n, err
	}
	// Not one we know: rewind and read it again for syntax only, so that
	// malformed JSON still gets the JSON message.
	p.pos, p.nest = start, nest
	if err := p.skipValue(); err != nil {
		return nil, err
	}
	return nil, errUnknownSV()
}

// knownServerValue returns the placeholder for a recognised server value,
// (nil, nil) for anything else (leaving pos anywhere), or the error of an
// out-of-range increment.
func (p *parser) knownServerValue() (*Node, error) {
	switch p.peek() {
	case '"':
		s, err := p.str()
		if err != nil || s != "timestamp" {
			return nil, nil
		}
		return ServerTimestamp(), nil
	case '{':
		if err := p.enter(); err != nil {
			return nil, nil
		}
		p.pos++
		var delta *Node
		for {
			p.skipWS()
			if p.peek() != '"' {
				return nil, nil
			}
			if k, err := p.str(); err != nil || k != "increment" {
				return nil, nil
			}
			if p.expect(':') != nil {
				return nil, nil
			}
			p.skipWS()
			if c := p.peek(); c != '-' && !isDigit(c) {
				return nil, nil
			}
			var err error
			if delta, err = p.number(); err != nil {
				return nil, err
			}
			p.skipWS()
			switch p.peek() {
			case ',':
				p.pos++
				continue
			case '}':
				p.pos++
				p.nest--
				return ServerIncrement(delta), nil
			}
			return nil, nil
		}
	}
	return nil, nil
}

package tree

// Rendering a large answer into one buffer costs its whole size in memory
// for every reader at once, and as much garbage afterwards: 32 parallel
// reads of a large node would double a node's memory. The Spilling
// renderers hand the buffer to a writer whenever it holds at least a
// chosen number of bytes, between two values, so an answer of any size
// is rendered through one small buffer.

// Spill takes a buffer a renderer filled and returns the buffer to go on
// with (typically full[:0] once full is written). An error stops the
// rendering and is returned by the renderer.
type Spill func(full []byte) ([]byte, error)

// spiller is what RenderOptions carries through the recursive renderers.
// A nil *spiller (every other renderer) spills nothing.
type spiller struct {
	limit int
	spill Spill
	err   error
}

// check spills dst when it has reached the limit. It is small enough to
// be inlined: the renderers call it after every child.
func (s *spiller) check(dst []byte) []byte {
	if s == nil || len(dst) < s.limit {
		return dst
	}
	return s.flush(dst)
}

// flush hands dst to the spill, unless an earlier spill failed.
func (s *spiller) flush(dst []byte) []byte {
	if s.err != nil {
		return dst[:0]
	}
	next, err := s.spill(dst)
	if err != nil {
		s.err = err
		return dst[:0]
	}
	return next
}

// ok reports whether rendering may go on.
func (s *spiller) ok() bool { return s == nil || s.err == nil }

// AppendJSONSpilling renders n as AppendJSON does into dst, calling spill
// whenever dst holds limit bytes or more between two values. It returns
// what is left to write after the last spill. With a nil spill it is
// AppendJSON. A single leaf is never split (a string may hold 10 MiB).
func AppendJSONSpilling(dst []byte, n *Node, o RenderOptions, limit int, spill Spill) ([]byte, error) {
	if spill == nil { // the common small answer: no closure to allocate
		return AppendJSON(dst, n, o), nil
	}
	return spilling(dst, o, limit, spill, func(dst []byte, o RenderOptions) []byte { return AppendJSON(dst, n, o) })
}

// AppendQueryResultSpilling renders r as AppendQueryResult does, spilling
// like AppendJSONSpilling.
func AppendQueryResultSpilling(dst []byte, r QueryResult, o RenderOptions, limit int, spill Spill) ([]byte, error) {
	if spill == nil {
		return AppendQueryResult(dst, r, o), nil
	}
	return spilling(dst, o, limit, spill, func(dst []byte, o RenderOptions) []byte { return AppendQueryResult(dst, r, o) })
}

// spilling runs render with o carrying the spill.
func spilling(dst []byte, o RenderOptions, limit int, spill Spill, render func([]byte, RenderOptions) []byte) ([]byte, error) {
	s := &spiller{limit: limit, spill: spill}
	o.spill = s
	dst = render(dst, o)
	return dst, s.err
}

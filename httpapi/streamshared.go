package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/arbordb/arbor/fsm/tree"
)

// The first put of the streams that open on one location at one log index
// is rendered once, for all of them: many clients reconnecting at once
// would otherwise render it once each. The rendering runs on a goroutine
// of its own, a piece of answerChunk at a time in a render slot, and only
// as fast as the fastest of its readers asks for pieces. A piece is
// dropped once every reader has taken it, and at most sharedPutWindow
// bytes of pieces are kept: a reader that falls further behind than that
// is let go, and renders the rest of the frame on its own (streamput.go).
// So streams that keep pace share one rendering, and a stream that never
// reads costs the node one piece, not the whole value.

// sharedPutWindow is how many bytes of a shared first put are kept for
// its slower readers.
var sharedPutWindow = 4 << 20

var (
	// errPutAbandoned ends a shared render nobody reads any more.
	errPutAbandoned = errors.New("every stream left before its first put was rendered")
	// errFellBehind tells a reader it was let go of a shared render.
	errFellBehind = errors.New("a stream fell too far behind the others reading its first put")
)

// firstPutKey names a first put: a location at a log index.
type firstPutKey struct {
	path  string
	index uint64
}

// firstPuts are the first puts being rendered, by location and index.
type firstPuts struct {
	mu sync.Mutex
	m  map[firstPutKey]*sharedPut
}

// sharedPut is one first put's frame (without an id line), in pieces as
// they are rendered.
type sharedPut struct {
	mu       sync.Mutex
	pieces   [][]byte // pieces[k] is piece number base+k
	base     int
	kept     int // bytes in pieces
	readers  map[*putReader]struct{}
	done     bool
	err      error
	progress chan struct{} // closed when a piece is added or the render ends
	demand   chan struct{} // a reader wants the next piece, or left
}

// putReader is one stream's place in a shared put.
type putReader struct {
	next   int  // the number of the piece it reads next
	behind bool // let go: it renders the rest itself
}

// join returns the shared put of v at key and this stream's place in it,
// starting a render if none can serve it from its first piece; fp.leave
// must follow.
func (fp *firstPuts) join(s *Server, key firstPutKey, v *tree.Node) (*sharedPut, *putReader) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.m == nil {
		fp.m = map[firstPutKey]*sharedPut{}
	}
	r := &putReader{}
	if p := fp.m[key]; p != nil && p.attach(r) {
		return p, r
	}
	p := &sharedPut{
		readers:  map[*putReader]struct{}{r: {}},
		progress: make(chan struct{}),
		demand:   make(chan struct{}, 1),
	}
	fp.m[key] = p
	go p.render(s, v)
	return p, r
}

// leave says r is done with p, the shared put at key: a put nobody reads
// is forgotten.
func (fp *firstPuts) leave(key firstPutKey, p *sharedPut, r *putReader) {
	if !p.leave(r) {
		return
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.m[key] == p && p.unread() {
		delete(fp.m, key)
	}
}

// attach adds r to p if p still holds its first piece.
func (p *sharedPut) attach(r *putReader) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.base > 0 || len(p.readers) == 0 {
		return false
	}
	p.readers[r] = struct{}{}
	return true
}

// leave takes r out of p's readers and reports whether none is left.
func (p *sharedPut) leave(r *putReader) bool {
	p.mu.Lock()
	delete(p.readers, r)
	p.trim()
	none := len(p.readers) == 0
	p.mu.Unlock()
	p.wake()
	return none
}

func (p *sharedPut) unread() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.readers) == 0
}

func (p *sharedPut) wake() {
	select {
	case p.demand <- struct{}{}:
	default:
	}
}

// render renders the put frame of v into pieces, each when a reader asks.
func (p *sharedPut) render(s *Server, v *tree.Node) {
	cpu := s.render.cpu
	ctx := context.Background()
	if err := cpu.Acquire(ctx, 1); err != nil {
		p.finish(err)
		return
	}
	buf := append(make([]byte, 0, answerChunk+answerChunk/4), `event: put`+"\n"+`data: {"path":"/","data":`...)
	spill := func(full []byte) ([]byte, error) {
		cpu.Release(1)
		if !p.add(full) {
			return nil, errPutAbandoned
		}
		if err := cpu.Acquire(ctx, 1); err != nil {
			return nil, err
		}
		return make([]byte, 0, cap(full)), nil
	}
	limit := answerChunk
	if v.Size() < s.render.streamFrom {
		spill, limit = nil, 0 // small: rendered at once
	}
	rest, err := tree.AppendJSONSpilling(buf, v, tree.RenderOptions{}, limit, spill)
	if errors.Is(err, errPutAbandoned) {
		p.finish(err)
		return
	}
	cpu.Release(1)
	if err == nil {
		p.add(append(rest, "}\n\n"...))
	}
	p.finish(err)
}

// add appends piece and waits until a reader wants the one after it,
// letting go of readers that fell more than sharedPutWindow behind. It
// reports false when no reader is left.
func (p *sharedPut) add(piece []byte) bool {
	p.mu.Lock()
	p.pieces = append(p.pieces, piece)
	p.kept += len(piece)
	close(p.progress)
	p.progress = make(chan struct{})
	for {
		p.trim()
		next := p.base + len(p.pieces)
		ahead := false
		for r := range p.readers {
			ahead = ahead || r.next >= next
		}
		if len(p.readers) == 0 {
			p.mu.Unlock()
			return false
		}
		if ahead {
			for p.kept > sharedPutWindow {
				p.dropSlowest()
			}
			p.mu.Unlock()
			return true
		}
		p.mu.Unlock()
		<-p.demand
		p.mu.Lock()
	}
}

// trim drops the pieces every reader has taken.
func (p *sharedPut) trim() {
	low := p.base + len(p.pieces)
	for r := range p.readers {
		low = min(low, r.next)
	}
	for p.base < low {
		p.kept -= len(p.pieces[0])
		p.pieces[0] = nil
		p.pieces = p.pieces[1:]
		p.base++
	}
}

// dropSlowest lets go of the readers furthest behind and of the pieces
// only they still needed.
func (p *sharedPut) dropSlowest() {
	for r := range p.readers {
		if r.next == p.base {
			r.behind = true
			delete(p.readers, r)
		}
	}
	close(p.progress)
	p.progress = make(chan struct{})
	p.trim()
}

func (p *sharedPut) finish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.err = true, err
	close(p.progress)
	p.progress = make(chan struct{})
}

// piece waits for r's next piece: it returns it, or nil when the frame is
// whole (err tells a failed render), errFellBehind when r was let go, or
// ctx's error.
func (p *sharedPut) piece(ctx context.Context, r *putReader) ([]byte, error) {
	for {
		p.mu.Lock()
		if r.behind {
			p.mu.Unlock()
			return nil, errFellBehind
		}
		if k := r.next - p.base; k < len(p.pieces) {
			b := p.pieces[k]
			r.next++
			p.trim()
			p.mu.Unlock()
			p.wake()
			return b, nil
		}
		if p.done {
			err := p.err
			p.mu.Unlock()
			if err != nil {
				return nil, fmt.Errorf("render a stream's first put: %w", err)
			}
			return nil, nil
		}
		progress := p.progress
		p.mu.Unlock()
		p.wake()
		select {
		case <-progress:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/arbordb/arbor/fsm/tree"
)

// The first put of the streams that open on one location at one log index
// is rendered once, for all of them, when it is small (under renderSmall):
// many clients reconnecting at once would otherwise render it once each.
// The rendering runs on a goroutine of its own in a render slot and is
// kept until the last stream that uses it has written it (or was cut
// off). A large first put is rendered per stream, in pieces (streamput.go):
// kept whole, it would cost the node its JSON for as long as the slowest
// reader takes. The pieces of a shared render are kept in order, so the
// same code serves a render cut in pieces.

// errPutAbandoned ends a shared render nobody reads any more.
var errPutAbandoned = errors.New("every stream left before its first put was rendered")

// firstPutKey names a first put: a location at a log index.
type firstPutKey struct {
	path  string
	index uint64
}

// firstPuts are the first puts being rendered or written.
type firstPuts struct {
	mu sync.Mutex
	m  map[firstPutKey]*sharedPut
}

// sharedPut is one first put's frame, in pieces as they are rendered.
type sharedPut struct {
	mu     sync.Mutex
	pieces [][]byte
	more   chan struct{} // closed when a piece is added or the render ends
	done   bool
	err    error
	users  int // guarded by firstPuts.mu
}

// join returns the shared put of v at key, starting its render if this
// stream is the first to ask; leave must follow.
func (fp *firstPuts) join(s *Server, key firstPutKey, v *tree.Node) *sharedPut {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.m == nil {
		fp.m = map[firstPutKey]*sharedPut{}
	}
	p := fp.m[key]
	if p == nil {
		p = &sharedPut{more: make(chan struct{})}
		fp.m[key] = p
		go p.render(s, func() bool { return fp.abandoned(p) }, v)
	}
	p.users++
	return p
}

// leave says a stream is done with p.
func (fp *firstPuts) leave(key firstPutKey, p *sharedPut) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if p.users--; p.users == 0 && fp.m[key] == p {
		delete(fp.m, key)
	}
}

func (fp *firstPuts) abandoned(p *sharedPut) bool {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return p.users == 0
}

// render renders the put frame of v (without an id line) into pieces.
func (p *sharedPut) render(s *Server, abandoned func() bool, v *tree.Node) {
	cpu := s.render.cpu
	ctx := context.Background()
	if err := cpu.Acquire(ctx, 1); err != nil {
		p.finish(err)
		return
	}
	buf := append(make([]byte, 0, answerChunk+answerChunk/4), `event: put`+"\n"+`data: {"path":"/","data":`...)
	spill := func(full []byte) ([]byte, error) {
		cpu.Release(1)
		p.add(full)
		if abandoned() {
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

func (p *sharedPut) add(piece []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pieces = append(p.pieces, piece)
	close(p.more)
	p.more = make(chan struct{})
}

func (p *sharedPut) finish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.err = true, err
	close(p.more)
	p.more = make(chan struct{})
}

// piece waits for piece i: it returns it, or nil when the frame is whole
// before i (err tells a failed render), or ctx's error.
func (p *sharedPut) piece(ctx context.Context, i int) ([]byte, error) {
	for {
		p.mu.Lock()
		if i < len(p.pieces) {
			b := p.pieces[i]
			p.mu.Unlock()
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
		more := p.more
		p.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

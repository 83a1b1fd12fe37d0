package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// A stream's first put of a large value is sent as a large GET answer is
// (renderbudget.go): rendered in pieces of answerChunk, each in a render
// slot, holding a share of the node's render budget while it is written,
// and written within the GET's deadline; streams that open on the same
// location at the same index share one rendering (streamshared.go). Every
// later frame is written within a deadline of its own size too.

// reserveRender takes a large answer's share of the render budget for a
// value of size bytes, waiting at most the write timeout (then a 503).
func (s *Server) reserveRender(ctx context.Context, size int64) (release func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	if err := s.render.sem.Acquire(ctx, answerChunk); err != nil {
		return nil, fmt.Errorf("waiting to send %d bytes (other large answers are being sent): %w", size, err)
	}
	return func() { s.render.sem.Release(answerChunk) }, nil
}

// sendPut writes the put at "/" of v, rendered once for every stream
// that opens on the same location at the same index (streamshared.go),
// within the deadline of its size (the caller holds its share of the
// render budget when it is large).
func (l *streamLoop) sendPut(index uint64, v *tree.Node) error {
	l.armDeadline(int(v.Size()) + 64)
	key := firstPutKey{path: l.rq.nodePath().String(), index: index}
	p := l.s.firstPuts.join(l.s, key, v)
	defer l.s.firstPuts.leave(key, p)
	if l.ids {
		if err := l.writeRaw(fmt.Appendf(nil, "id: %d\n", index)); err != nil {
			return err
		}
	}
	for i := 0; ; i++ {
		b, err := p.piece(l.ctx, i)
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		if err := l.writeRaw(b); err != nil {
			return fmt.Errorf("send a stream's first put: %w", err)
		}
	}
	if l.conn == nil {
		return l.rc.Flush()
	}
	return nil
}

// armDeadline bounds the writing of the next size bytes as a large GET
// answer's: answerGrace plus the bytes at minAnswerRate. A client that
// stops reading is cut off then, which frees what its stream holds.
func (l *streamLoop) armDeadline(size int) {
	d := time.Now().Add(answerGrace + time.Duration(size)*time.Second/minAnswerRate)
	if l.conn != nil {
		_ = l.conn.SetWriteDeadline(d)
		return
	}
	_ = l.rc.SetWriteDeadline(d) // unsupported writers keep no deadline
}

// writeRaw sends b as it is, without an id line or a flush.
func (l *streamLoop) writeRaw(b []byte) error {
	if l.conn != nil {
		return l.writeChunk(b)
	}
	_, err := l.w.Write(b)
	return err
}

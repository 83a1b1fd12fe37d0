package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// A stream's first put of a large value is sent as a large GET answer is
// (renderbudget.go): rendered in pieces of answerChunk through one pooled
// buffer, each piece in a render slot and written outside it, holding a
// share of the node's render budget, and written within the GET's
// deadline. So a stream that never reads holds one piece, not the whole
// value, and gives up its share when the deadline cuts it off. A small
// first put is rendered once for every stream that opens on the same
// location at the same index (streamshared.go). Every later frame is
// written within a deadline of its own size too.

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

// sendPut writes the put at "/" of v within the deadline of its size: a
// small value rendered once for every stream that opens on the same
// location at the same index (streamshared.go), a large one in pieces.
func (l *streamLoop) sendPut(index uint64, v *tree.Node) error {
	if v.Size() >= l.s.render.streamFrom {
		return l.sendLargePut(index, v)
	}
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

// sendLargePut writes the put at "/" of v, a large value, rendered for
// this stream alone in pieces of answerChunk through one pooled buffer
// (the caller holds its share of the render budget): a stream that never
// reads holds one piece. Sharing a large rendering between streams would
// keep all of it for as long as the slowest of them takes to read it.
func (l *streamLoop) sendLargePut(index uint64, v *tree.Node) error {
	l.armDeadline(int(v.Size()))
	pooled := chunkBuffers.Get().(*[]byte)
	buf := (*pooled)[:0]
	if l.ids {
		buf = fmt.Appendf(buf, "id: %d\n", index)
	}
	buf = append(buf, `event: put`+"\n"+`data: {"path":"/","data":`...)
	cpu := l.s.render.cpu
	if err := cpu.Acquire(l.ctx, 1); err != nil {
		return fmt.Errorf("render a stream's first put: %w", err)
	}
	held := true
	spill := func(full []byte) ([]byte, error) {
		cpu.Release(1)
		held = false
		if err := l.writeRaw(full); err != nil {
			return nil, fmt.Errorf("send a stream's first put: %w", err)
		}
		if err := cpu.Acquire(l.ctx, 1); err != nil {
			return nil, fmt.Errorf("render a stream's first put: %w", err)
		}
		held = true
		return full[:0], nil
	}
	rest, err := tree.AppendJSONSpilling(buf, v, tree.RenderOptions{}, answerChunk, spill)
	if held {
		cpu.Release(1)
	}
	if err != nil {
		return err
	}
	rest = append(rest, "}\n\n"...)
	err = l.writeRaw(rest)
	if cap(rest) <= 4*answerChunk {
		*pooled = rest[:0]
		chunkBuffers.Put(pooled)
	}
	if err == nil && l.conn == nil {
		err = l.rc.Flush()
	}
	return err
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

package httpapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// A stream's first put is rendered once for every stream that opens on
// the same location at the same index, a piece of answerChunk at a time
// (streamshared.go). A large one is sent as a large GET answer is
// (renderbudget.go): each stream holds a share of the node's render
// budget, and writes within the GET's deadline, so a stream that never
// reads holds one piece, not the whole value, and gives up its share when
// the deadline cuts it off. Every later frame is written within a
// deadline of its own size too.

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

// sendPut writes the put at "/" of v within the deadline of its size,
// from the rendering shared by the streams at this location and index; a
// stream let go for falling behind the others renders the rest itself.
func (l *streamLoop) sendPut(index uint64, v *tree.Node) error {
	l.armDeadline(int(v.Size()) + 64)
	if l.ids {
		if err := l.writeRaw(fmt.Appendf(nil, "id: %d\n", index)); err != nil {
			return fmt.Errorf("send a stream's first put: %w", err)
		}
	}
	key := firstPutKey{path: l.rq.nodePath().String(), index: index}
	p, r := l.s.firstPuts.join(l.s, key, v)
	defer l.s.firstPuts.leave(key, p, r)
	sent := 0
	for {
		b, err := p.piece(l.ctx, r)
		if errors.Is(err, errFellBehind) {
			l.s.firstPuts.leave(key, p, r)
			return l.renderPut(v, sent)
		}
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		if err := l.writeRaw(b); err != nil {
			return fmt.Errorf("send a stream's first put: %w", err)
		}
		sent += len(b)
	}
	if l.conn == nil {
		return l.rc.Flush()
	}
	return nil
}

// renderPut writes the put frame of v (without an id line) but its first
// skip bytes, rendered for this stream alone in pieces of answerChunk
// through one pooled buffer, each in a render slot and written outside
// it: a stream that never reads holds one piece.
func (l *streamLoop) renderPut(v *tree.Node, skip int) error {
	pooled := chunkBuffers.Get().(*[]byte)
	buf := append((*pooled)[:0], `event: put`+"\n"+`data: {"path":"/","data":`...)
	send := func(b []byte) error {
		if skip >= len(b) {
			skip -= len(b)
			return nil
		}
		b, skip = b[skip:], 0
		if err := l.writeRaw(b); err != nil {
			return fmt.Errorf("send a stream's first put: %w", err)
		}
		return nil
	}
	cpu := l.s.render.cpu
	if err := cpu.Acquire(l.ctx, 1); err != nil {
		return fmt.Errorf("render a stream's first put: %w", err)
	}
	held := true
	spill := func(full []byte) ([]byte, error) {
		cpu.Release(1)
		held = false
		if err := send(full); err != nil {
			return nil, err
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
	err = send(rest)
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

// disarm lifts the write deadline once the writes it bounded are done.
// Over HTTP/2 a stream whose deadline passes is reset then, even with
// nothing being written (x/net/http2 answers the timer with RST_STREAM),
// so an idle stream must hold none: every write arms its own.
func (l *streamLoop) disarm() {
	if l.conn != nil {
		_ = l.conn.SetWriteDeadline(time.Time{})
		return
	}
	_ = l.rc.SetWriteDeadline(time.Time{})
}

// writeRaw sends b as it is, without an id line or a flush.
func (l *streamLoop) writeRaw(b []byte) error {
	if l.conn != nil {
		return l.writeChunk(b)
	}
	_, err := l.w.Write(b)
	return err
}

package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"golang.org/x/sync/semaphore"

	"github.com/arbordb/arbor/fsm/tree"
)

// Large answers are rendered straight to the client in pieces of
// answerChunk bytes through one pooled buffer (fsm's Spilling renderers):
// rendering a whole answer in memory first would nearly double a node's
// memory under parallel full reads of a large node, and a whole-answer
// budget instead would make many such readers wait for a 503. Answers
// under renderSmall bytes are rendered at once.
const (
	renderSmall = 1 << 20
	answerChunk = 256 << 10
)

// renderBudget bounds what large answers take while they are written.
type renderBudget struct {
	// sem holds the bytes of the chunk buffers in use: each large answer
	// takes answerChunk of Config.RenderBudgetBytes while it is written,
	// and one that finds the budget spent waits, within the write timeout,
	// and then gets a 503.
	sem *semaphore.Weighted
	// cpu admits at most half the cores (at least one) to render pieces
	// of large answers at once. Rendering is CPU-bound (about 0.1 s per
	// 30 MB): two renders at once on a two-core node would leave Raft and
	// every other client waiting. A slot is
	// held while a piece is rendered, never while it is written, so slow
	// readers hold no core's slot, and readers take turns piece by piece.
	cpu *semaphore.Weighted
	// streamFrom is the size from which answers are streamed
	// (renderSmall; tests raise it to render a reference at once).
	streamFrom int64
}

func newRenderBudget(total int64) renderBudget {
	return renderBudget{
		sem:        semaphore.NewWeighted(max(total, answerChunk)),
		cpu:        semaphore.NewWeighted(int64(max(1, runtime.GOMAXPROCS(0)/2))),
		streamFrom: renderSmall,
	}
}

// answerRenderer renders an answer into dst, calling spill whenever dst
// holds limit bytes or more (tree.AppendJSONSpilling's contract); with a
// nil spill it renders everything into dst.
type answerRenderer func(dst []byte, limit int, spill tree.Spill) ([]byte, error)

// chunkBuffers are the buffers large answers are rendered through.
var chunkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, answerChunk+answerChunk/4); return &b }}

// sendAnswer writes a successful data answer of about size bytes, as
// sendData does: rendered at once when small, streamed in pieces of
// answerChunk when large (within the render budget and the core slots).
func (s *Server) sendAnswer(c *gin.Context, o *options, size int64, render answerRenderer) {
	if size < s.render.streamFrom || o.silent {
		var body []byte
		if !o.silent {
			body, _ = render(nil, 0, nil) // without a spill nothing fails
		}
		sendData(c, o, http.StatusOK, body)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.WriteTimeout)
	defer cancel()
	if err := s.render.sem.Acquire(ctx, answerChunk); err != nil {
		s.writeError(c, fmt.Errorf("waiting to send %d bytes (other large answers are being sent): %w", size, err))
		return
	}
	defer s.render.sem.Release(answerChunk)
	if err := s.render.cpu.Acquire(ctx, 1); err != nil {
		s.writeError(c, fmt.Errorf("waiting to render %d bytes (other large answers are being rendered): %w", size, err))
		return
	}
	held := true
	defer func() {
		if held {
			s.render.cpu.Release(1)
		}
	}()
	answerDeadline(c.Writer, size, time.Now())
	ctype := jsonContentType
	if o.callback != "" {
		ctype = jsContentType
	}
	if o.download != "" {
		c.Header("Content-Disposition", `attachment; filename="`+o.download+`"`)
	}
	c.Header("Content-Type", ctype)
	c.Status(http.StatusOK)
	pooled := chunkBuffers.Get().(*[]byte)
	buf := (*pooled)[:0]
	if o.callback != "" {
		buf = append(append(buf, o.callback...), '(')
	}
	w := c.Writer
	reqCtx := c.Request.Context()
	spill := func(full []byte) ([]byte, error) {
		s.render.cpu.Release(1)
		held = false
		if _, err := w.Write(full); err != nil {
			return nil, fmt.Errorf("send a large answer: %w", err)
		}
		// Bounded by the client: the answer's write deadline closes the
		// connection of one that stops reading, which cancels reqCtx.
		if err := s.render.cpu.Acquire(reqCtx, 1); err != nil {
			return nil, fmt.Errorf("render a large answer: %w", err)
		}
		held = true
		return full[:0], nil
	}
	rest, err := render(buf, answerChunk, spill)
	if held {
		s.render.cpu.Release(1)
		held = false
	}
	if err != nil {
		// Part of the answer is out: only cutting the connection (HTTP/1)
		// or resetting the stream (HTTP/2) tells the client it is incomplete.
		panic(http.ErrAbortHandler)
	}
	if o.callback != "" {
		rest = append(rest, ");"...)
	}
	_, _ = w.Write(rest) // a failed write means the client is gone
	if cap(rest) <= 4*answerChunk {
		*pooled = rest[:0]
		chunkBuffers.Put(pooled)
	}
}

// renderSize estimates the bytes of n's answer.
func renderSize(n *tree.Node, pretty bool) int64 {
	size := n.Size()
	if pretty {
		size *= 2 // indentation
	}
	return size
}

// A large answer keeps its share of the budget until it is written, so a
// client that reads it slowly (or not at all) would hold that share for as
// long as it liked: 40 such readers of a 3 MB node once starved every other
// large read of a node. A large answer must therefore be written within
// answerGrace plus its size at minAnswerRate, or its connection is closed.
const (
	answerGrace   = 10 * time.Second
	minAnswerRate = 256 << 10 // bytes per second
)

// answerDeadline bounds how long writing an answer of size bytes to w
// may take (nothing for a small one).
func answerDeadline(w http.ResponseWriter, size int64, now time.Time) {
	if size < renderSmall {
		return
	}
	d := answerGrace + time.Duration(size)*time.Second/minAnswerRate
	_ = http.NewResponseController(w).SetWriteDeadline(now.Add(d)) // unsupported writers keep no deadline
}

package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/arbordb/arbor/fsm/tree"
)

// Reads render the whole answer in memory before sending it, so 32
// parallel full reads of a 100,000-child node took a node from 1.3 to
// 2.4 GB (issue 19). Answers of renderSmall bytes or more therefore take
// their estimated size from a node-wide budget (Config.RenderBudgetBytes)
// while they are rendered and written; a read that finds the budget spent
// waits, within the write timeout, and then gets a 503. One answer larger
// than the whole budget takes all of it, so it is never refused for its
// size alone.
const renderSmall = 1 << 20

// renderBudget is the semaphore of the bytes being rendered, and that of
// the renders running.
type renderBudget struct {
	sem   *semaphore.Weighted
	total int64
	// cpu admits at most half the cores (at least one) to render large
	// answers at once. Rendering is CPU-bound (about 0.1 s per 30 MB): two
	// renders at once on a two-core node left Raft and every other client
	// waiting, and 32 parallel reads of a 30 MB node stalled small writes
	// for a second on a loaded machine (issue 19). Writing the answer to
	// the client is not counted: slow readers must not hold a core's slot.
	cpu *semaphore.Weighted
}

func newRenderBudget(total int64) renderBudget {
	return renderBudget{
		sem:   semaphore.NewWeighted(total),
		total: total,
		cpu:   semaphore.NewWeighted(int64(max(1, runtime.GOMAXPROCS(0)/2))),
	}
}

// renderLarge runs render, which makes an answer of about size bytes,
// within a render slot when the answer is large; the wait for the slot is
// bounded like the budget's.
func (s *Server) renderLarge(ctx context.Context, size int64, render func() []byte) ([]byte, error) {
	if size < renderSmall {
		return render(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	if err := s.render.cpu.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("waiting to render %d bytes (other large answers are being rendered): %w", size, err)
	}
	defer s.render.cpu.Release(1)
	return render(), nil
}

// acquire reserves room for an answer of about size bytes; release gives
// it back.
func (s *Server) acquireRender(ctx context.Context, size int64) (release func(), err error) {
	if size < renderSmall {
		return func() {}, nil
	}
	w := min(size, s.render.total)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	if err := s.render.sem.Acquire(ctx, w); err != nil {
		return nil, fmt.Errorf("waiting to render %d bytes (other large reads are in progress): %w", size, err)
	}
	return func() { s.render.sem.Release(w) }, nil
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

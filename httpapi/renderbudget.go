package httpapi

import (
	"context"
	"fmt"

	"golang.org/x/sync/semaphore"

	"github.com/arbordb/arbor/fsm"
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

// renderBudget is the semaphore of the bytes being rendered.
type renderBudget struct {
	sem   *semaphore.Weighted
	total int64
}

func newRenderBudget(total int64) renderBudget {
	return renderBudget{sem: semaphore.NewWeighted(total), total: total}
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
func renderSize(n *fsm.Node, pretty bool) int64 {
	size := n.Size()
	if pretty {
		size *= 2 // indentation
	}
	return size
}

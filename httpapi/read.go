package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// errReadTimeout is a read that did not finish within ?timeout= (SPEC §3).
var errReadTimeout = badRequest("The read did not finish within the requested timeout")

// get serves a read (SPEC §2–§4): the value at the path, its priority for a
// ".priority" path, shallow or export forms, conditional GETs, and queries
// (getQuery).
func (s *Server) get(c *gin.Context, rq *request) {
	if strings.Contains(strings.ToLower(c.GetHeader("Accept")), "text/event-stream") {
		s.stream(c, rq)
		return
	}
	if rq.hasIfMatch {
		s.writeError(c, badRequest("if-match is not supported on GET requests"))
		return
	}
	if rq.opts.query != nil {
		s.getQuery(c, rq)
		return
	}
	n, err := s.read(c.Request.Context(), rq)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if rq.path.IsPriority() {
		n = n.Priority()
	}
	etag := n.ETag()
	inm, conditional := c.Request.Header["If-None-Match"]
	if conditional {
		c.Header("ETag", etag)
		if len(inm) == 1 && strings.TrimSpace(inm[0]) == etag {
			send(c, http.StatusNotModified, jsonContentType, nil)
			return
		}
	} else if rq.wantETag {
		c.Header("ETag", etag)
	}
	o := tree.RenderOptions{Pretty: rq.opts.pretty, Export: rq.opts.export}
	if rq.opts.shallow {
		sendData(c, rq.opts, http.StatusOK, tree.AppendShallow(nil, n, o))
		return
	}
	s.sendAnswer(c, rq.opts, renderSize(n, o.Pretty), func(dst []byte, limit int, spill tree.Spill) ([]byte, error) {
		return tree.AppendJSONSpilling(dst, n, o, limit, spill)
	})
}

// read fetches the node at the request's path (readState).
func (s *Server) read(ctx context.Context, rq *request) (*tree.Node, error) {
	res, err := s.readState(ctx, rq)
	return res.Value, err
}

// readState reads the state at the request's path: the node, and the
// rules and indexes of the same state. Its wait is bounded by
// WriteTimeout (a linearizable read that cannot reach a quorum is a 503)
// and by ?timeout= (a read slower than the client allows is a 400).
func (s *Server) readState(ctx context.Context, rq *request) (fsm.ReadResult, error) {
	clusterCtx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	readCtx := clusterCtx
	if rq.opts.timeout > 0 {
		var cancelRead context.CancelFunc
		readCtx, cancelRead = context.WithTimeout(clusterCtx, rq.opts.timeout)
		defer cancelRead()
	}
	res, err := s.db.Read(readCtx, fsm.Read{Path: rq.nodePath(), Linearizable: rq.opts.linearizable, Access: s.readAccess(rq)})
	if err == nil {
		return res, nil
	}
	if rq.opts.timeout > 0 && clusterCtx.Err() == nil && errors.Is(readCtx.Err(), context.DeadlineExceeded) {
		return fsm.ReadResult{}, errReadTimeout
	}
	return fsm.ReadResult{}, fmt.Errorf("read %s: %w", rq.nodePath(), err)
}

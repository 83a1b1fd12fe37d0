package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm/tree"
)

// This file connects the query engine (the parameters' text parsed by
// queryparams.go, evaluated by tree.Query.EvalWith) to GET requests:
// orderBy, ranges, limits and shallow paging (SPEC §3).

// parseQuery parses the query parameters of v (already percent-decoded by
// parseQueryString, so a `5,"k"` tie-breaker arrives split-ready). It
// returns nil when v has no orderBy-family parameter. shallow is the
// checked shallow=true, under which limits and ranges page in key order.
func parseQuery(v url.Values, shallow bool) (*tree.Query, error) {
	params := make(map[string]string, len(v))
	for name, values := range v {
		params[name] = values[0] // parseOptions refused repeated names
	}
	delete(params, "shallow")
	if shallow {
		params["shallow"] = "true"
	}
	q, err := parseQueryParams(params)
	if err != nil {
		return nil, fmt.Errorf("query parameters: %w", err)
	}
	return q, nil
}

// getQuery answers a GET with a query: the children of the node at the
// path chosen and ordered by the query, read like any GET (local or after
// the read barrier), rendered in query order (or as an array by the array
// rule). ?timeout= bounds the read and the evaluation together: a scan of
// a large node that outlives it is a 400 like a slow read.
//
// The response has no ETag: an ETag names the value at the location, and a
// query answers with part of it.
//
// A query by a child or by value walks the `.indexOn` index of the state
// read when the rules declare one there (fsm.IndexSet.Lookup), and scans
// the children otherwise — unless StrictIndexes, under which it is
// Firebase's 400 `Index not defined, add ".indexOn": "<child>", for path
// "/<path>", to the rules`, after the read so that a reader the rules
// refuse learns nothing of them.
func (s *Server) getQuery(c *gin.Context, rq *request) {
	started := time.Now()
	ctx := c.Request.Context()
	st, err := s.readState(ctx, rq)
	if err != nil {
		s.writeError(c, err)
		return
	}
	q := rq.opts.query
	n, ix := st.Value, st.Indexes.Lookup(rq.path, q)
	if rq.path.IsPriority() {
		// A priority has no children: there is nothing to index.
		n = n.Priority()
	} else if s.cfg.StrictIndexes {
		if err := st.Rules.MissingIndex(rq.path, q); err != nil {
			s.writeError(c, err)
			return
		}
	}
	evalCtx := ctx
	if rq.opts.timeout > 0 {
		var cancel context.CancelFunc
		evalCtx, cancel = context.WithDeadline(ctx, started.Add(rq.opts.timeout))
		defer cancel()
	}
	res, err := q.EvalWith(evalCtx, n, ix)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = errReadTimeout
		}
		s.writeError(c, fmt.Errorf("query %s: %w", rq.path, err))
		return
	}
	var size int64
	res.Each(func(_ string, child *tree.Node) bool {
		size += renderSize(child, rq.opts.pretty)
		return true
	})
	o := tree.RenderOptions{Pretty: rq.opts.pretty, Export: rq.opts.export}
	s.sendAnswer(c, rq.opts, size, func(dst []byte, limit int, spill tree.Spill) ([]byte, error) {
		return tree.AppendQueryResultSpilling(dst, res, o, limit, spill)
	})
}

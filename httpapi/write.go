package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
)

var (
	errMissingData   = fsm.Public(fsm.ErrBadRequest, fsm.MsgMissingData)
	errWriteTooBig   = fsm.Public(fsm.ErrTooLarge, fsm.MsgWriteTooBig)
	errSilentIfMatch = badRequest("print=silent cannot be combined with if-match")
	// A priority is a leaf: only PUT and DELETE address it.
	errPriorityPath = fsm.Public(fsm.ErrInvalidPath, fsm.MsgInvalidToken)
	errPushTooDeep  = fsm.Public(fsm.ErrInvalidPath, fsm.MsgPathTooLong)
)

// write serves PUT, POST, PATCH and DELETE (SPEC §2, §4). The body is
// validated here, so bad input gets its 400 before anything is proposed;
// the command carries the raw body, the clock and the randomness, so every
// replica applies it identically.
func (s *Server) write(c *gin.Context, rq *request) {
	cmd, err := s.command(c, rq)
	if err != nil {
		s.writeError(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.WriteTimeout)
	defer cancel()
	res, err := s.db.Propose(ctx, cmd)
	if err != nil {
		s.writeError(c, fmt.Errorf("%s %s: %w", rq.method, rq.path, err))
		return
	}
	o := fsm.RenderOptions{Pretty: rq.opts.pretty}
	var body []byte
	etag := res.ETag
	switch rq.method {
	case http.MethodPost:
		body = pushName(res.Name, o)
	case http.MethodDelete:
		body, etag = fsm.AppendJSON(nil, nil, o), (*fsm.Node)(nil).ETag()
	case http.MethodPatch:
		if res.Fields != nil {
			body = fsm.AppendFields(nil, res.Fields, o)
		} else { // a null body deleted the node
			body = fsm.AppendJSON(nil, res.Value, o)
		}
	default: // PUT echoes what was written, server values resolved
		body = fsm.AppendJSON(nil, res.Value, o)
	}
	if rq.wantETag && rq.method != http.MethodPatch {
		c.Header("ETag", etag)
	}
	sendData(c, rq.opts, http.StatusOK, body)
}

// command checks a write request and builds its command.
func (s *Server) command(c *gin.Context, rq *request) (fsm.Command, error) {
	cmd := fsm.Command{
		Path:       rq.path,
		Now:        s.cfg.Now().UnixMilli(),
		WriteLimit: rq.opts.writeLimit,
	}
	if rq.hasIfMatch {
		if rq.method == http.MethodPost || rq.method == http.MethodPatch {
			return cmd, badRequest("if-match is not supported on %s requests", rq.method)
		}
		if rq.opts.silent {
			return cmd, errSilentIfMatch
		}
		cmd.IfMatch, cmd.HasIfMatch = rq.ifMatch, true
	}
	if rq.path.IsPriority() && (rq.method == http.MethodPost || rq.method == http.MethodPatch) {
		return cmd, errPriorityPath
	}
	if rq.method == http.MethodPost && len(rq.path) >= fsm.MaxDepth {
		return cmd, errPushTooDeep // the push key would be key MaxDepth+1
	}
	if rq.method == http.MethodDelete {
		cmd.Kind = fsm.CmdSet
		return cmd, nil
	}
	body, err := readBody(c, rq.opts.writeLimit)
	if err != nil {
		return cmd, err
	}
	// A body may nest at most MaxDepth levels below the root (SPEC §1).
	depth := fsm.MaxDepth - len(rq.nodePath())
	switch rq.method {
	case http.MethodPut:
		if _, err := fsm.ParseBody(body, depth); err != nil {
			return cmd, fmt.Errorf("PUT body: %w", err)
		}
		cmd.Kind, cmd.Body = fsm.CmdSet, body
	case http.MethodPost:
		if _, err := fsm.ParseBody(body, depth-1); err != nil { // the push key adds a level
			return cmd, fmt.Errorf("POST body: %w", err)
		}
		if cmd.Rand, err = s.pushRand(); err != nil {
			return cmd, err
		}
		cmd.Kind, cmd.Body = fsm.CmdPush, body
	case http.MethodPatch:
		fields, err := fsm.ParseUpdate(body, depth)
		if err != nil {
			return cmd, fmt.Errorf("PATCH body: %w", err)
		}
		if fields == nil && bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
			cmd.Kind = fsm.CmdSet // PATCH null deletes the node (firebase-tools relies on it)
			return cmd, nil
		}
		cmd.Kind, cmd.Body = fsm.CmdUpdate, body
	}
	return cmd, nil
}

// readBody reads a PUT/POST/PATCH body through the write size limit.
func readBody(c *gin.Context, limit int64) ([]byte, error) {
	if c.Request.Body == nil {
		return nil, errMissingData
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errWriteTooBig
		}
		return nil, badRequest("Could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errMissingData
	}
	return body, nil
}

// pushRand draws the 12 random base-64 digits of a push key.
func (s *Server) pushRand() ([12]byte, error) {
	var r [12]byte
	s.randMu.Lock()
	_, err := io.ReadFull(s.cfg.Rand, r[:])
	s.randMu.Unlock()
	if err != nil {
		return r, fmt.Errorf("push key randomness: %w", err)
	}
	for i := range r {
		r[i] &= 63
	}
	return r, nil
}

// pushName renders a POST's answer, {"name":"<key>"}. Push keys use only
// URL-safe base-64 characters, so the key needs no escaping; the pretty
// form goes through fsm so it matches every other pretty body.
func pushName(key string, o fsm.RenderOptions) []byte {
	compact := []byte(`{"name":"` + key + `"}`)
	if !o.Pretty {
		return compact
	}
	n, err := fsm.ParseBody(compact, fsm.MaxDepth)
	if err != nil {
		return compact
	}
	return fsm.AppendJSON(nil, n, o)
}

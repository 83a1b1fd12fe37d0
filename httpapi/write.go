package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

var (
	errMissingData   = tree.Public(tree.ErrBadRequest, tree.MsgMissingData)
	errWriteTooBig   = tree.Public(tree.ErrTooLarge, tree.MsgWriteTooBig)
	errSilentIfMatch = badRequest("print=silent cannot be combined with if-match")
	// A priority is a leaf: only PUT and DELETE address it.
	errPriorityPath = tree.Public(tree.ErrInvalidPath, tree.MsgInvalidToken)
	errPushTooDeep  = tree.Public(tree.ErrInvalidPath, tree.MsgPathTooLong)
)

// write serves PUT, POST, PATCH and DELETE (SPEC §2, §4). The body is
// parsed and validated here, once: bad input gets its 400 before anything
// is proposed, and the command carries the parsed body (and the raw one,
// for members of older releases), the clock and the randomness, so every
// replica applies it identically. The answer is the leader's, relayed as
// it rendered it.
func (s *Server) write(c *gin.Context, rq *request) {
	cmd, err := s.command(c, rq)
	if err != nil {
		s.writeError(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.WriteTimeout)
	defer cancel()
	// One slot per write in progress, taken in turn by the connections
	// that wait (fairgate.go): the remote address names the connection.
	if err := s.writes.acquire(ctx, c.Request.RemoteAddr); err != nil {
		s.writeError(c, fmt.Errorf("%s %s: waiting for a write slot: %w", rq.method, rq.path, err))
		return
	}
	defer s.writes.release()
	if err := s.checkIfMatchReadable(ctx, &cmd); err != nil {
		s.writeError(c, fmt.Errorf("%s %s: %w", rq.method, rq.path, err))
		return
	}
	a, err := s.judgeAndPropose(ctx, &cmd, fsm.AnswerOptions{Pretty: rq.opts.pretty, Export: rq.opts.export, Delete: rq.method == http.MethodDelete, Silent: rq.opts.silent})
	if err != nil {
		s.writeError(c, fmt.Errorf("%s %s: %w", rq.method, rq.path, err))
		return
	}
	if rq.wantETag && rq.method != http.MethodPatch {
		c.Header("ETag", a.ETag)
	}
	sendData(c, rq.opts, http.StatusOK, a.Body)
}

// checkIfMatchReadable refuses a conditional write by a writer who may
// not read its location, whatever the ETag: the answer to a compare-and-set
// tells whether the guess matched, so allowing it would let a write-only
// writer test guesses of a value the rules hide (the 412 of a mismatch is
// refused already; a match must be too, or its 200 is the tell). The check
// comes before the ETag is looked at, on a state that covers every
// acknowledged write, so that its verdict cannot depend on the ETag nor on
// this node lagging behind a rules change.
func (s *Server) checkIfMatchReadable(ctx context.Context, cmd *fsm.Command) error {
	if !cmd.HasIfMatch || cmd.As == nil {
		return nil
	}
	a := *cmd.As
	a.Now = cmd.Now
	_, err := s.db.Read(ctx, fsm.Read{Path: cmd.Path.NodePath(), Linearizable: true, Access: &a})
	return err
}

// maxRejudgements bounds how many times a write judged by rules that were
// replaced before it reached the log is judged and proposed again.
const maxRejudgements = 3

// judgeAndPropose judges cmd and proposes it. A write that the rules
// allowed whatever the data travels prejudged, and the log refuses it
// (fsm.ErrRulesChanged, nothing applied) if the rules changed before its
// turn: it is judged again, on a state that has the new rules, and
// proposed again — a client sees the refusal only if the rules changed
// that often while it waited.
func (s *Server) judgeAndPropose(ctx context.Context, cmd *fsm.Command, o fsm.AnswerOptions) (fsm.Answer, error) {
	for attempt := 0; ; attempt++ {
		if err := s.judge(ctx, cmd, attempt > 0); err != nil {
			return fsm.Answer{}, err
		}
		a, err := s.db.Propose(ctx, *cmd, o)
		if !errors.Is(err, fsm.ErrRulesChanged) || attempt == maxRejudgements {
			return a, err
		}
		s.metrics.writesRejudged.Inc()
	}
}

// judge refuses a write the rules refuse, before it reaches the log: a
// flood of denied writes must not grow it. The local state may be behind,
// so a refusal is confirmed on a state that covers every acknowledged
// write (a read barrier) before it is answered; Apply judges every write
// that passes again, against the rules and data it is applied to — or,
// when the judgement marked cmd Prejudged, checks that the rules it was
// judged by are still in force. With fresh, the first judgement is on
// such a state already.
func (s *Server) judge(ctx context.Context, cmd *fsm.Command, fresh bool) error {
	if cmd.As == nil {
		return nil
	}
	if fresh {
		return s.db.Judge(ctx, cmd, true)
	}
	if err := s.db.Judge(ctx, cmd, false); !errors.Is(err, fsm.ErrPermissionDenied) {
		return nil
	}
	return s.db.Judge(ctx, cmd, true)
}

// command checks a write request and builds its command.
func (s *Server) command(c *gin.Context, rq *request) (fsm.Command, error) {
	cmd := fsm.Command{
		Path:       rq.path,
		Now:        s.cfg.Now().UnixMilli(),
		WriteLimit: rq.opts.writeLimit,
		As:         rq.id.access,
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
	if rq.method == http.MethodPost && len(rq.path) >= tree.MaxDepth {
		return cmd, errPushTooDeep // the push key would be key MaxDepth+1
	}
	if rq.method == http.MethodDelete {
		cmd.Kind, cmd.Parsed = fsm.CmdSet, true
		return cmd, nil
	}
	limit, tooBig := s.bodyLimit(rq.opts.writeLimit, c.Request.ContentLength)
	body, err := readBodyWithin(c, limit, tooBig)
	if err != nil {
		return cmd, err
	}
	// A body may nest at most MaxDepth levels below the root (SPEC §1).
	depth := tree.MaxDepth - len(rq.nodePath())
	switch rq.method {
	case http.MethodPut:
		v, err := tree.ParseBody(body, depth)
		if err != nil {
			return cmd, fmt.Errorf("PUT body: %w", err)
		}
		cmd.Kind, cmd.Body, cmd.Value = fsm.CmdSet, body, v
	case http.MethodPost:
		v, err := tree.ParseBody(body, depth-1) // the push key adds a level
		if err != nil {
			return cmd, fmt.Errorf("POST body: %w", err)
		}
		if cmd.Rand, err = s.pushRand(); err != nil {
			return cmd, err
		}
		cmd.Kind, cmd.Body, cmd.Value = fsm.CmdPush, body, v
	case http.MethodPatch:
		fields, err := tree.ParseUpdate(body, depth)
		if err != nil {
			return cmd, fmt.Errorf("PATCH body: %w", err)
		}
		if fields == nil && bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
			// PATCH null deletes the node (firebase-tools relies on it).
			cmd.Kind, cmd.Parsed = fsm.CmdSet, true
			return cmd, nil
		}
		cmd.Kind, cmd.Body, cmd.Fields = fsm.CmdUpdate, body, fields
	}
	cmd.Parsed = true
	return cmd, nil
}

// bodyLimit is the most a write's body may carry, and the 413 of a body
// over it: the request's write size limit, and never more than
// Config.MaxBodyBytes — a larger body could not become one replicated
// write, so it is refused before it is read and parsed (parsing 100 MB
// only to refuse it cost an election on a loaded node), with a message
// that names that limit and the way out (declared is the body's declared
// length, -1 when unknown).
func (s *Server) bodyLimit(writeLimit, declared int64) (int64, error) {
	if s.cfg.MaxBodyBytes <= 0 || writeLimit < s.cfg.MaxBodyBytes {
		return writeLimit, errWriteTooBig
	}
	size := "over " + tree.ByteSize(s.cfg.MaxBodyBytes)
	if declared > s.cfg.MaxBodyBytes {
		size = tree.ByteSize(declared)
	}
	return s.cfg.MaxBodyBytes, tree.WriteTooBig(fmt.Sprintf("this write's body is %s of JSON, and one write carries at most %s", size, tree.ByteSize(s.cfg.MaxBodyBytes)))
}

// readBody reads a PUT/POST/PATCH body through the write size limit and
// the body's pace rules (bodyReader), answering Firebase's 413 when it is
// over the limit.
func readBody(c *gin.Context, limit int64) ([]byte, error) {
	return readBodyWithin(c, limit, errWriteTooBig)
}

// readBodyWithin is readBody answering tooBig for a body over limit. A
// declared length over the limit is refused before a byte is read, so
// "Expect: 100-continue" gets its 413 instead of "100 Continue".
func readBodyWithin(c *gin.Context, limit int64, tooBig error) ([]byte, error) {
	if c.Request.Body == nil {
		return nil, errMissingData
	}
	if c.Request.ContentLength > limit {
		return nil, tooBig
	}
	br := newBodyReader(c.Writer, http.MaxBytesReader(c.Writer, c.Request.Body, limit), time.Now)
	body, err := io.ReadAll(br)
	br.done()
	if err != nil {
		var maxErr *http.MaxBytesError
		switch {
		case errors.As(err, &maxErr):
			return nil, tooBig
		case errors.Is(err, errSlowBody):
			return nil, err
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

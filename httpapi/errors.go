package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// errNoJSON is a data request whose path does not end in ".json".
var errNoJSON = errors.New("path without .json suffix")

// msgNoJSON is the 404 text of SPEC §1.
const msgNoJSON = "append .json to your request URI to use the REST API"

// errorClass is one row of the error table: the errors matching sentinel
// (errors.Is) get status, and message unless they carry a fsm.PublicError.
type errorClass struct {
	sentinel error
	status   int
	message  string
}

// errorTable is the only place that decides an error's status. Rows are
// tried in order; an error matching none is a 500.
var errorTable = []errorClass{
	{errNoJSON, http.StatusNotFound, msgNoJSON},
	{tree.ErrInvalidPath, http.StatusBadRequest, tree.MsgInvalidToken},
	{tree.ErrInvalidData, http.StatusBadRequest, tree.MsgInvalidJSON},
	{tree.ErrBadRequest, http.StatusBadRequest, "Bad request"},
	{tree.ErrTooLarge, http.StatusRequestEntityTooLarge, tree.MsgWriteTooBig},
	{errSlowBody, http.StatusRequestTimeout, msgSlowBody},
	{fsm.ErrPreconditionFailed, http.StatusPreconditionFailed, "Precondition failed"},
	{fsm.ErrPermissionDenied, http.StatusUnauthorized, tree.MsgPermission},
	{fsm.ErrUnauthenticated, http.StatusUnauthorized, msgBadToken},
	// For 503s the message is the reason after "Service unavailable: ".
	// Before ErrNoLeader and ErrTimeout, which it comes wrapped with.
	{fsm.ErrOutcomeUnknown, http.StatusServiceUnavailable, msgOutcomeUnknown},
	{fsm.ErrNoLeader, http.StatusServiceUnavailable, "no leader"},
	{fsm.ErrTimeout, http.StatusServiceUnavailable, "timeout"},
	{fsm.ErrShuttingDown, http.StatusServiceUnavailable, "shutting down"},
	{fsm.ErrNotReady, http.StatusServiceUnavailable, "not ready"},
	{fsm.ErrRulesChanged, http.StatusServiceUnavailable, "the security rules kept changing while the write waited; it was not applied"},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "timeout"},
	// The client went away; nobody reads this answer, but it is no server fault.
	{context.Canceled, http.StatusServiceUnavailable, "request cancelled"},
}

// msgOutcomeUnknown is the reason of a 503 for a write that may have been
// applied (SPEC §9): the client cannot tell from the answer.
const msgOutcomeUnknown = "the write may have been applied: the leader did not answer whether it committed; read the data before sending it again, or send again only a write that is safe to repeat"

// msgInternal is the only text a client sees of an unexpected error.
const msgInternal = "Internal error"

// classify returns the status and client message for err.
func classify(err error) (int, string) {
	for _, row := range errorTable {
		if !errors.Is(err, row.sentinel) {
			continue
		}
		if row.status == http.StatusServiceUnavailable {
			// The reason is fixed per sentinel: detail from deep inside the
			// cluster is for the log, not for clients.
			return row.status, "Service unavailable: " + row.message
		}
		msg := row.message
		var pub *tree.PublicError
		if errors.As(err, &pub) && pub.Message != "" {
			msg = pub.Message
		}
		return row.status, msg
	}
	return http.StatusInternalServerError, msgInternal
}

// badRequest is a 400 with a message for the client.
func badRequest(format string, args ...any) error {
	return tree.Public(tree.ErrBadRequest, fmt.Sprintf(format, args...))
}

// errorBody renders SPEC §6's error body: {\n  "error" : "<msg>"\n}\n.
func errorBody(msg string) []byte {
	var buf bytes.Buffer
	buf.WriteString("{\n  \"error\" : ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep < > & readable, as Firebase does
	_ = enc.Encode(msg)      // a string always encodes; Encode adds "\n"
	buf.Truncate(buf.Len() - 1)
	buf.WriteString("\n}\n")
	return buf.Bytes()
}

// writeError writes every error response. A failed if-match is special:
// its body is the current value and its ETag header the current ETag
// (SPEC §4), because client transactions retry from them.
func (s *Server) writeError(c *gin.Context, err error) {
	c.Abort()
	var pre *fsm.PreconditionError
	if errors.As(err, &pre) {
		if pre.Body == nil { // not rendered by the leader (a test double)
			pre.ETag, pre.Body = pre.Current.ETag(), tree.AppendJSON(nil, pre.Current, renderOptions(c))
		}
		c.Header("ETag", pre.ETag)
		send(c, http.StatusPreconditionFailed, jsonContentType, pre.Body)
		return
	}
	status, msg := classify(err)
	if errors.Is(err, errSlowBody) {
		// The rest of the body is not worth waiting for: without this Go's
		// server would try to read it to keep the connection.
		c.Header("Connection", "close")
	}
	switch {
	case status == http.StatusInternalServerError:
		s.log.Error("internal error", "method", c.Request.Method, "path", c.Request.URL.EscapedPath(), "err", err)
	case status == http.StatusServiceUnavailable:
		if !errors.Is(err, fsm.ErrOutcomeUnknown) {
			// Not for a write that may have been applied: a client
			// that resends on Retry-After would apply a push twice.
			c.Header("Retry-After", strconv.Itoa(1))
		}
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("service unavailable", "method", c.Request.Method, "path", c.Request.URL.EscapedPath(), "err", err)
		}
	}
	send(c, status, jsonContentType, errorBody(msg))
}

package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// livez answers 200 while the process can serve HTTP at all.
func (s *Server) livez(c *gin.Context) {
	send(c, http.StatusOK, jsonContentType, []byte(`{"status":"ok"}`))
}

// readyzBody is /readyz's answer: the failing check is named in reason.
type readyzBody struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// readyzWait bounds how long /readyz waits for the database's readiness
// check. Probes give up after their own timeout (Kubernetes' default
// timeoutSeconds is 1) and count that as a failure with no reason logged;
// answering 503 with the reason before then is more useful, and a probe
// must never wait out WriteTimeout (5 s by default) on a node whose
// leader barrier or read-index round trip is stuck. 800 ms leaves the
// answer time to cross the network within the probe's second.
const readyzWait = 800 * time.Millisecond

// readyzGrace is how long /readyz still waits, after cancelling the check
// at readyzWait, for the database to return its own reason (a check that
// honours its context stops at once and says which step it was in); one
// that ignores cancellation is answered without it.
const readyzGrace = 50 * time.Millisecond

// readyz answers 200 only when the node is not draining and the database
// says it can serve (a leader is known and the log is applied), always
// within readyzWait plus readyzGrace.
func (s *Server) readyz(c *gin.Context) {
	var reason string
	if s.draining.Load() {
		reason = "[-]draining: shutting down"
	} else if err := s.readyWithin(c.Request.Context(), min(readyzWait, s.cfg.WriteTimeout)); err != nil {
		reason = "[-]ready: " + err.Error()
	}
	status, body := http.StatusOK, readyzBody{Status: "ok"}
	if reason != "" {
		status, body = http.StatusServiceUnavailable, readyzBody{Status: "not ready", Reason: reason}
	}
	b, _ := json.Marshal(body) // two strings always marshal
	send(c, status, jsonContentType, b)
}

// readyWithin runs the database's readiness check with a deadline of wait
// and returns its answer, or an error saying it did not finish if the
// check has not returned readyzGrace after that: a check stuck on a lock
// must not hold the probe. The check keeps running in the background
// until it returns; its context is cancelled by then.
func (s *Server) readyWithin(parent context.Context, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	done := make(chan error, 1) // buffered: a late answer must not block
	go func() { done <- s.db.Ready(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	grace := time.NewTimer(readyzGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		return err
	case <-grace.C:
		return fmt.Errorf("the readiness check did not finish within %s", wait)
	}
}

// status answers the node's and cluster's state to admins only, even in
// Dev mode, because it lists every member's address.
func (s *Server) status(c *gin.Context) {
	v, err := parseQueryString(c.Request.URL.RawQuery)
	if err != nil {
		s.writeError(c, err)
		return
	}
	id, err := s.authenticate(c.Request, v)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if !id.admin {
		s.writeError(c, errPermission)
		return
	}
	st, err := s.db.Status(c.Request.Context())
	if err != nil {
		s.writeError(c, fmt.Errorf("status: %w", err))
		return
	}
	var b []byte
	if v.Get("print") == "pretty" {
		b, err = json.MarshalIndent(st, "", "  ")
	} else {
		b, err = json.Marshal(st)
	}
	if err != nil {
		s.writeError(c, fmt.Errorf("encode status: %w", err))
		return
	}
	send(c, http.StatusOK, jsonContentType, b)
}

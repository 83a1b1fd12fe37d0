package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

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

// readyz answers 200 only when the node is not draining and the database
// says it can serve (a leader is known and the log is applied).
func (s *Server) readyz(c *gin.Context) {
	// A probe must get an answer even if the database hangs.
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.WriteTimeout)
	defer cancel()
	var reason string
	if s.draining.Load() {
		reason = "[-]draining: shutting down"
	} else if err := s.db.Ready(ctx); err != nil {
		reason = "[-]ready: " + err.Error()
	}
	status, body := http.StatusOK, readyzBody{Status: "ok"}
	if reason != "" {
		status, body = http.StatusServiceUnavailable, readyzBody{Status: "not ready", Reason: reason}
	}
	b, _ := json.Marshal(body) // two strings always marshal
	send(c, status, jsonContentType, b)
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

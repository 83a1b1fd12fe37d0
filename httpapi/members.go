package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm/tree"
)

// Admin is the cluster administration behind the members endpoints;
// *cluster.Node implements it. Like DB it is declared here, by its
// consumer, so httpapi never imports cluster.
type Admin interface {
	// Members lists the cluster's members (JSON-encodable), as /status
	// does.
	Members(ctx context.Context) (any, error)
	// RemoveMember removes a member that is not alive from the cluster.
	RemoveMember(ctx context.Context, id string) error
}

// NewWithAdmin is New plus the members endpoints, for admins only:
//
//	GET    /members          the members, their addresses, health and versions
//	DELETE /members?id=<id>  remove a failed member (arbor members remove)
//
// The query parameter (rather than /members/<id>) keeps the endpoint off
// the data namespace: data paths end in .json, so /members never is one.
func NewWithAdmin(cfg Config, db DB, admin Admin) (*Server, error) {
	if admin == nil {
		return nil, errors.New("httpapi: nil Admin")
	}
	s, err := New(cfg, db)
	if err != nil {
		return nil, err
	}
	s.engine.GET("/members", s.members(admin))
	s.engine.DELETE("/members", s.removeMember(admin))
	return s, nil
}

// adminRequest authenticates an admin request; it writes the error and
// returns false otherwise.
func (s *Server) adminRequest(c *gin.Context) (string, bool) {
	v, err := parseQueryString(c.Request.URL.RawQuery)
	if err != nil {
		s.writeError(c, err)
		return "", false
	}
	id, err := s.authenticate(c.Request, v)
	if err != nil {
		s.writeError(c, err)
		return "", false
	}
	if !id.admin {
		s.writeError(c, errPermission)
		return "", false
	}
	return v.Get("id"), true
}

// members answers GET /members.
func (s *Server) members(admin Admin) gin.HandlerFunc {
	return func(c *gin.Context) {
		if _, ok := s.adminRequest(c); !ok {
			return
		}
		ms, err := admin.Members(c.Request.Context())
		if err != nil {
			s.writeError(c, fmt.Errorf("members: %w", err))
			return
		}
		b, err := json.Marshal(ms)
		if err != nil {
			s.writeError(c, fmt.Errorf("encode members: %w", err))
			return
		}
		send(c, http.StatusOK, jsonContentType, b)
	}
}

// removeMember answers DELETE /members?id=<id>.
func (s *Server) removeMember(admin Admin) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := s.adminRequest(c)
		if !ok {
			return
		}
		if id == "" {
			s.writeError(c, tree.Public(tree.ErrBadRequest, "Missing member id: DELETE /members?id=<node id>"))
			return
		}
		if err := admin.RemoveMember(c.Request.Context(), id); err != nil {
			s.writeError(c, fmt.Errorf("remove member %s: %w", id, err))
			return
		}
		b, _ := json.Marshal(map[string]string{"removed": id}) // a string map always marshals
		send(c, http.StatusOK, jsonContentType, b)
	}
}

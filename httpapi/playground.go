package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// PlaygroundPath is the rules playground's endpoint (POST, admins only):
// it answers whether a user may read or write at a path under the rules
// in force, and which rule decided. It is off the data namespace, since
// data paths end in .json.
const PlaygroundPath = "/_/api/rules/explain"

// maxPlaygroundBytes bounds a playground request: a path, an auth object
// and a value to try, not a bulk write.
const maxPlaygroundBytes = 1 << 20

// playgroundRequest is the body of a playground request.
type playgroundRequest struct {
	// Op is "read" or "write".
	Op   string `json:"op"`
	Path string `json:"path"`
	// Auth is the rules' `auth` to judge as: null for a signed-out user,
	// else an object such as {"uid": "alice", "token": {...claims}}.
	Auth json.RawMessage `json:"auth"`
	// Data is the value a write would set at Path (null deletes).
	Data json.RawMessage `json:"data"`
}

// playgroundAnswer is the playground's answer.
type playgroundAnswer struct {
	Allowed bool             `json:"allowed"`
	Rule    *playgroundRule  `json:"rule"` // null: no rule applied
	Steps   []playgroundStep `json:"steps"`
	// Default is true when no rules were ever set, so the built-in ones
	// judged.
	Default bool `json:"default_rules"`
}

// playgroundRule names a rule: where it is written, its text and line.
type playgroundRule struct {
	Path   string `json:"path"`
	Expr   string `json:"expr"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// playgroundStep is one rule evaluated, where, and its result.
type playgroundStep struct {
	Rule  playgroundRule `json:"rule"`
	At    string         `json:"at"`
	Holds bool           `json:"holds"`
}

func answerOf(d rules.Decision, defaults bool) playgroundAnswer {
	a := playgroundAnswer{Allowed: d.Allowed, Steps: make([]playgroundStep, len(d.Steps)), Default: defaults}
	if d.Rule != nil {
		r := playgroundRule(*d.Rule)
		a.Rule = &r
	}
	for i, s := range d.Steps {
		a.Steps[i] = playgroundStep{Rule: playgroundRule(s.Rule), At: s.At, Holds: s.Holds}
	}
	return a
}

var (
	errPlaygroundOp   = badRequest(`playground: "op" must be "read" or "write"`)
	errPlaygroundAuth = badRequest(`playground: "auth" must be a JSON object or null`)
)

// playground answers POST PlaygroundPath. It takes the admin secret only:
// it judges as any user the admin names, which auth_variable_override
// lets an admin do already, and reads the data the rules see.
func (s *Server) playground(c *gin.Context) {
	if _, ok := s.adminRequest(c); !ok {
		return
	}
	body, err := readBody(c, maxPlaygroundBytes)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req playgroundRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.writeError(c, badRequest("playground: the body must be a JSON object: %v", err))
		return
	}
	if req.Op != "read" && req.Op != "write" {
		s.writeError(c, errPlaygroundOp)
		return
	}
	p, err := tree.SplitPath(req.Path)
	if err != nil {
		s.writeError(c, fmt.Errorf("playground path: %w", err))
		return
	}
	var auth any
	if len(req.Auth) > 0 {
		if auth, err = parseOverride(string(req.Auth)); err != nil {
			s.writeError(c, errPlaygroundAuth)
			return
		}
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.WriteTimeout)
	defer cancel()
	res, err := s.db.Read(ctx, fsm.Read{Linearizable: true})
	if err != nil {
		s.writeError(c, fmt.Errorf("playground: read: %w", err))
		return
	}
	set := fsm.DefaultRules(s.cfg.Dev)
	if res.Rules != nil {
		set = res.Rules.Set
	}
	now := s.cfg.Now().UnixMilli()
	env := &rules.Env{Auth: auth, Now: now, Root: fsm.RuleValue(res.Value)}
	var d rules.Decision
	if req.Op == "read" {
		d = set.ExplainRead(p.NodePath(), env)
	} else {
		next, err := playgroundWrite(res.Value, p, req.Data, now)
		if err != nil {
			s.writeError(c, err)
			return
		}
		env.NewRoot = fsm.RuleValue(next)
		d = set.ExplainWrite(p.NodePath(), env)
	}
	b, err := json.Marshal(answerOf(d, res.Rules.IsDefault()))
	if err != nil {
		s.writeError(c, fmt.Errorf("encode playground answer: %w", err))
		return
	}
	send(c, http.StatusOK, jsonContentType, b)
}

// playgroundWrite is the data after setting data at p, as a PUT would
// leave it (server timestamps resolved to now).
func playgroundWrite(root *tree.Node, p tree.Path, data json.RawMessage, now int64) (*tree.Node, error) {
	if len(data) == 0 {
		return nil, badRequest(`playground: a write needs "data" (null to delete)`)
	}
	v, err := tree.ParseBody(data, tree.MaxDepth-len(p.NodePath()))
	if err != nil {
		return nil, fmt.Errorf("playground data: %w", err)
	}
	next, err := tree.SetValue(root, p, tree.ResolveTimestamps(v, now))
	if err != nil {
		return nil, fmt.Errorf("playground data: %w", err)
	}
	return next, nil
}

package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// rulesPath is the one settings path (escaped, without ".json").
const rulesPath = "/.settings/rules"

// maxRulesBytes bounds a rules upload: what rules.Parse accepts.
const maxRulesBytes = rules.MaxSourceBytes

var (
	// errRulesTooBig names the rules' own limit: a rules upload is not a
	// data write, so the data writes' WRITE_TOO_BIG text would mislead.
	errRulesTooBig    = tree.Public(tree.ErrTooLarge, fmt.Sprintf("Rules are too large (limit %d bytes).", maxRulesBytes))
	errUnknownSetting = badRequest("Unknown settings path: only /.settings/rules.json exists")
	errRulesMethod    = badRequest("Only GET and PUT are supported on /.settings/rules.json")
	rulesSetAnswer    = []byte(`{"status":"ok"}`)
)

// settings serves /.settings/rules.json (SPEC §8): admins read the rules
// as they were written (comments kept; ?format=strict without them) and
// replace them atomically with a log entry; ?dryRun=true only checks
// them. Everyone else gets 401, whatever the rules say.
func (s *Server) settings(c *gin.Context, method, escaped string, strict bool, v url.Values, opts *options, id identity) {
	if cleanPath(escaped) != rulesPath {
		s.writeError(c, errUnknownSetting)
		return
	}
	if !id.admin {
		s.writeError(c, errPermission)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.WriteTimeout)
	defer cancel()
	switch method {
	case http.MethodGet:
		res, err := s.db.Read(ctx, fsm.Read{Linearizable: opts.linearizable})
		if err != nil {
			s.writeError(c, fmt.Errorf("read rules: %w", err))
			return
		}
		set := fsm.DefaultRules(s.cfg.Dev)
		src := set.Source()
		if res.Rules != nil {
			set, src = res.Rules.Set, res.Rules.Source
		}
		if strict {
			src = set.StrictJSON()
		}
		sendData(c, opts, http.StatusOK, src)
	case http.MethodPut:
		src, err := readBody(c, maxRulesBytes)
		if errors.Is(err, tree.ErrTooLarge) {
			err = errRulesTooBig
		}
		if err != nil {
			s.writeError(c, err)
			return
		}
		if _, err := rules.Parse(src); err != nil {
			s.writeError(c, badRequest("%s", err.Error()))
			return
		}
		if v.Get("dryRun") == "true" {
			sendData(c, opts, http.StatusOK, rulesSetAnswer)
			return
		}
		cmd := fsm.Command{Kind: fsm.CmdSetRules, Body: src, Now: s.cfg.Now().UnixMilli()}
		if _, err := s.db.Propose(ctx, cmd, fsm.AnswerOptions{}); err != nil {
			s.writeError(c, fmt.Errorf("set rules: %w", err))
			return
		}
		sendData(c, opts, http.StatusOK, rulesSetAnswer)
	default:
		s.writeError(c, errRulesMethod)
	}
}

// cleanPath drops a path's empty segments, as the data paths' parser does.
func cleanPath(escaped string) string {
	var b strings.Builder
	for _, seg := range strings.Split(escaped, "/") {
		if seg != "" {
			b.WriteString("/" + seg)
		}
	}
	return b.String()
}

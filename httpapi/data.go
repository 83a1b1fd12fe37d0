package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// request is a data request after its method, path, query and credentials
// have been checked.
type request struct {
	method     string // after X-HTTP-Method-Override
	path       tree.Path
	opts       *options
	ifMatch    string
	hasIfMatch bool
	wantETag   bool // X-Firebase-ETag: true
	id         identity
}

// data serves every path that is not a fixed endpoint: the Firebase REST
// API at <path>.json (SPEC §1–§4). Checks run from the cheapest and most
// basic (method, path) to the ones that need credentials.
func (s *Server) data(c *gin.Context) {
	r := c.Request
	if r.Method == http.MethodOptions {
		preflight(c)
		return
	}
	if s.draining.Load() {
		s.writeError(c, fsm.ErrShuttingDown)
		return
	}
	escaped := r.URL.EscapedPath()
	trimmed, ok := strings.CutSuffix(escaped, ".json")
	if !ok {
		s.writeError(c, errNoJSON)
		return
	}
	v, err := parseQueryString(r.URL.RawQuery)
	if err != nil {
		s.writeError(c, err)
		return
	}
	method, err := effectiveMethod(r, v)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Set(methodKey, method)
	settings := isSettingsPath(trimmed)
	var p tree.Path
	if !settings {
		if p, err = parsePath(trimmed); err != nil {
			s.writeError(c, err)
			return
		}
	}
	strict := false
	if settings && v.Get("format") == "strict" {
		// The rules in plain JSON (firebase-admin's getRulesJSON).
		strict = true
		v = withoutParam(v, "format")
	}
	opts, err := s.parseOptions(method, v)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Set(optionsKey, opts)
	id, err := s.authenticate(r, v)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if settings {
		s.settings(c, method, trimmed, strict, v, opts, id)
		return
	}
	rq := &request{method: method, path: p, opts: opts, id: id}
	if im := r.Header.Values("If-Match"); len(im) > 0 {
		if len(im) > 1 {
			s.writeError(c, badRequest("Only one if-match header may be given"))
			return
		}
		rq.ifMatch, rq.hasIfMatch = strings.TrimSpace(im[0]), true
	}
	rq.wantETag = strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Firebase-ETag")), "true")
	if method == http.MethodGet {
		s.get(c, rq)
		return
	}
	s.write(c, rq)
}

// effectiveMethod returns the method a request is handled as: its own, or
// on a POST the X-HTTP-Method-Override header or query parameter (SPEC §2).
func effectiveMethod(r *http.Request, v url.Values) (string, error) {
	switch r.Method {
	case http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return r.Method, nil
	case http.MethodPost:
	default:
		return "", badRequest("Invalid method")
	}
	override := r.Header.Get("X-HTTP-Method-Override")
	if q := v.Get("x-http-method-override"); override == "" {
		override = q
	} else if q != "" && !strings.EqualFold(strings.TrimSpace(q), strings.TrimSpace(override)) {
		// Which one would a proxy or a log show? Neither wins silently.
		return "", badRequest("Conflicting method overrides: the X-HTTP-Method-Override header and the x-http-method-override query parameter differ")
	}
	if override == "" {
		return http.MethodPost, nil
	}
	m := strings.ToUpper(strings.TrimSpace(override))
	switch m {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete:
		return m, nil
	}
	return "", badRequest("Invalid method override: X-HTTP-Method-Override must be GET, PUT, POST, PATCH or DELETE")
}

// isSettingsPath reports whether the escaped path is under /.settings,
// which is reserved for rules and is not a data path.
func isSettingsPath(escaped string) bool {
	for _, seg := range strings.Split(escaped, "/") {
		if seg == "" {
			continue
		}
		first, err := url.PathUnescape(seg)
		return err == nil && first == ".settings"
	}
	return false
}

// nodePath is the path of the node a request addresses: without a final
// ".priority".
func (rq *request) nodePath() tree.Path {
	if rq.path.IsPriority() {
		return rq.path[:len(rq.path)-1]
	}
	return rq.path
}

// withoutParam returns a copy of v without name.
func withoutParam(v url.Values, name string) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		if k != name {
			out[k] = vs
		}
	}
	return out
}

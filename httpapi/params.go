package httpapi

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// options are a data request's query parameters (SPEC §3), checked.
type options struct {
	pretty, silent bool
	shallow        bool
	export         bool
	download       string
	callback       string
	timeout        time.Duration // 0: none given
	writeLimit     int64
	linearizable   bool
	query          *tree.Query // nil: no orderBy-family parameter
}

// paramKind says which requests a known parameter applies to.
type paramKind uint8

const (
	anyMethod paramKind = iota // accepted on every method
	getOnly                    // a 400 on writes
)

// knownParams lists every accepted query parameter. Parameters that are
// accepted only for client compatibility (ns, ac, disableTriggers, dryRun)
// are ignored.
var knownParams = map[string]paramKind{
	"print":                  anyMethod,
	"shallow":                getOnly,
	"format":                 getOnly,
	"download":               getOnly,
	"callback":               getOnly,
	"timeout":                anyMethod,
	"writeSizeLimit":         anyMethod,
	"auth":                   anyMethod,
	"access_token":           anyMethod,
	"auth_variable_override": anyMethod,
	"ns":                     anyMethod,
	"ac":                     anyMethod,
	"disableTriggers":        anyMethod,
	"dryRun":                 anyMethod,
	"consistency":            anyMethod,
	"x-http-method-override": anyMethod,
	"orderBy":                getOnly,
	"limitToFirst":           getOnly,
	"limitToLast":            getOnly,
	"startAt":                getOnly,
	"endAt":                  getOnly,
	"equalTo":                getOnly,
	"startAfter":             getOnly,
	"endBefore":              getOnly,
	"resume":                 getOnly, // streams only: frames carry id: <log index> (streamresume.go)
}

var (
	callbackRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$.]*$`)
	timeoutRE  = regexp.MustCompile(`^([0-9]{1,12})(ms|s|min)$`)
)

// maxTimeout is the largest ?timeout= (SPEC §3).
const maxTimeout = 15 * time.Minute

// plainQueryParams bounds the parameters parseQueryString splits itself;
// url.ParseQuery takes longer lists, and applies its own limit to them.
const plainQueryParams = 64

// parseQueryString parses a raw query string, refusing malformed ones
// rather than silently dropping parts of them. A query with nothing to
// decode (no '%' or '+') and no ';' is split here exactly as
// url.ParseQuery would split it, without its byte-by-byte unescaping of
// each part: an ID token in ?auth= is a kilobyte scanned on every request.
func parseQueryString(raw string) (url.Values, error) {
	if n := strings.Count(raw, "&") + 1; n <= plainQueryParams && strings.IndexByte(raw, '%') < 0 &&
		strings.IndexByte(raw, '+') < 0 && strings.IndexByte(raw, ';') < 0 {
		v := make(url.Values, n)
		for raw != "" {
			var pair string
			pair, raw, _ = strings.Cut(raw, "&")
			if pair == "" {
				continue
			}
			key, value, _ := strings.Cut(pair, "=")
			v[key] = append(v[key], value)
		}
		return v, nil
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return nil, badRequest("Invalid query string: parameters must be name=value pairs separated by &")
	}
	return v, nil
}

// parseOptions checks every query parameter of a data request handled as
// method. Names are checked in sorted order so the error is deterministic.
func (s *Server) parseOptions(method string, v url.Values) (*options, error) {
	for _, name := range slices.Sorted(maps.Keys(v)) {
		kind, ok := knownParams[name]
		if !ok {
			return nil, badRequest("Invalid query parameter: %s", name)
		}
		if len(v[name]) > 1 {
			return nil, badRequest("Query parameter %s may be given only once", name)
		}
		if kind == getOnly && method != http.MethodGet {
			return nil, badRequest("Query parameter %s is only supported on GET requests", name)
		}
	}
	o := &options{}
	switch p := v.Get("print"); {
	case !v.Has("print"):
	case p == "pretty":
		o.pretty = true
	case p == "silent":
		o.silent = true
	default:
		return nil, badRequest("print must be pretty or silent")
	}
	switch sh := v.Get("shallow"); {
	case !v.Has("shallow"), sh == "false":
	case sh == "true":
		o.shallow = true
	default:
		return nil, badRequest("shallow must be true or false")
	}
	if v.Has("format") {
		if v.Get("format") != "export" {
			return nil, badRequest("format must be export")
		}
		o.export = true
	}
	if v.Has("download") {
		o.download = v.Get("download")
		if !validFileName(o.download) {
			return nil, badRequest("download must be a file name without quotes, backslashes or control characters")
		}
	}
	if v.Has("callback") {
		o.callback = v.Get("callback")
		if !callbackRE.MatchString(o.callback) {
			return nil, badRequest("callback must be a JavaScript identifier matching ^[A-Za-z_$][A-Za-z0-9_$.]*$")
		}
	}
	if v.Has("timeout") {
		d, err := parseTimeout(v.Get("timeout"))
		if err != nil {
			return nil, err
		}
		o.timeout = d
	}
	limitName := s.cfg.DefaultWriteSizeLimit
	if v.Has("writeSizeLimit") {
		limitName = v.Get("writeSizeLimit")
	}
	limit, ok := writeSizeLimits[limitName]
	if !ok {
		return nil, badRequest("writeSizeLimit must be tiny, small, medium, large or unlimited")
	}
	o.writeLimit = limit
	consistency := s.cfg.DefaultConsistency
	if v.Has("consistency") {
		consistency = v.Get("consistency")
	}
	switch consistency {
	case ConsistencyLinearizable:
		o.linearizable = true
	case ConsistencyLocal:
	default:
		return nil, badRequest("consistency must be linearizable or local")
	}
	if v.Has("auth_variable_override") && !json.Valid([]byte(v.Get("auth_variable_override"))) {
		return nil, badRequest("auth_variable_override must be a JSON object or null")
	}
	q, err := parseQuery(v, o.shallow)
	if err != nil {
		return nil, err
	}
	o.query = q
	return o, nil
}

// parseTimeout parses ?timeout=: a positive integer with ms, s or min, at
// most 15min.
func parseTimeout(s string) (time.Duration, error) {
	const msg = "timeout must be a positive number followed by ms, s or min, at most 15min"
	m := timeoutRE.FindStringSubmatch(s)
	if m == nil {
		return 0, badRequest(msg)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n <= 0 {
		return 0, badRequest(msg)
	}
	unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "min": time.Minute}[m[2]]
	if n > int64(maxTimeout/unit) {
		return 0, badRequest(msg)
	}
	return time.Duration(n) * unit, nil
}

// validFileName reports whether name can go inside a quoted
// Content-Disposition filename without escaping.
func validFileName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' {
			return false
		}
	}
	return true
}

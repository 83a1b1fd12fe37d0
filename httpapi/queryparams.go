package httpapi

import (
	"fmt"
	"math"
	"strings"

	"github.com/arbordb/arbor/fsm/tree"
)

// The text of the orderBy family of URL parameters (SPEC §3), parsed into
// the typed tree.QuerySpec that tree.NewQuery checks and the query engine
// evaluates.

// Messages of the parameters' syntax errors. The first three are fixed by
// SPEC §3 (they are Firebase's own texts); the others are ours. How the
// parameters combine is tree.NewQuery's (with tree.MsgKeyIndexType).
const (
	MsgOrderByJSON     = "orderBy must be a valid JSON encoded path"
	MsgOrderByRequired = "orderBy must be defined when other query parameters are defined"
	MsgShallowMix      = "Mixing 'shallow' and querying parameters is not supported"

	msgBothLimits  = "limitToFirst and limitToLast cannot both be defined"
	msgLimitFormat = "%s must be a non-negative integer"
	msgBoundFormat = "%s must be a JSON string, number, boolean or null, optionally followed by a comma and a JSON string key"
)

// parseQueryParams parses the query parameters of a GET (SPEC §3). params
// maps a parameter name to its percent-decoded value; names other than
// orderBy, limitToFirst, limitToLast, startAt, endAt, startAfter,
// endBefore, equalTo and shallow are ignored (the caller checks names). It
// returns nil when there is no query (no orderBy-family parameter), and
// errors are *tree.PublicError wrapping tree.ErrBadRequest, with SPEC §3's
// texts where it has them.
//
// With shallow=true, limits and ranges are allowed without orderBy and
// work in key order; a bound that is not a JSON string is taken as a raw
// key, because firebase-tools pages with startAfter=<unquoted key>.
func parseQueryParams(params map[string]string) (*tree.Query, error) {
	_, hasOrderBy := params["orderBy"]
	hasFilter := false
	for _, name := range [...]string{"limitToFirst", "limitToLast", "startAt", "endAt", "startAfter", "endBefore", "equalTo"} {
		if _, ok := params[name]; ok {
			hasFilter = true
		}
	}
	if !hasOrderBy && !hasFilter {
		return nil, nil
	}
	s := tree.QuerySpec{Shallow: params["shallow"] == "true"}
	_, hasEqualTo := params["equalTo"]
	switch {
	case s.Shallow && (hasOrderBy || hasEqualTo):
		return nil, tree.Public(tree.ErrBadRequest, MsgShallowMix)
	case s.Shallow:
		s.Order = tree.OrderByKey
	case !hasOrderBy:
		return nil, tree.Public(tree.ErrBadRequest, MsgOrderByRequired)
	default:
		if err := parseOrderBy(&s, params["orderBy"]); err != nil {
			return nil, err
		}
	}
	if err := parseLimits(&s, params); err != nil {
		return nil, err
	}
	for _, b := range [...]struct {
		name string
		to   **tree.Bound
	}{{"startAt", &s.StartAt}, {"startAfter", &s.StartAfter}, {"endAt", &s.EndAt}, {"endBefore", &s.EndBefore}, {"equalTo", &s.EqualTo}} {
		raw, ok := params[b.name]
		if !ok {
			continue
		}
		bound, err := parseBound(&s, b.name, raw)
		if err != nil {
			return nil, err
		}
		*b.to = bound
	}
	return tree.NewQuery(s)
}

// parseOrderBy parses orderBy: a JSON string naming $key, $value,
// $priority or a child path ("a/b"; empty segments are dropped).
func parseOrderBy(s *tree.QuerySpec, raw string) error {
	bad := tree.Public(tree.ErrBadRequest, MsgOrderByJSON)
	name, ok := tree.ParseJSONString(raw)
	if !ok {
		return bad
	}
	switch name {
	case "$key":
		s.Order = tree.OrderByKey
		return nil
	case "$value":
		s.Order = tree.OrderByValue
		return nil
	case "$priority":
		s.Order = tree.OrderByPriority
		return nil
	}
	var path tree.Path
	for _, k := range strings.Split(name, "/") {
		if k == "" {
			continue
		}
		if !tree.ValidKey(k) {
			return bad
		}
		path = append(path, k)
	}
	if len(path) == 0 || len(path) > tree.MaxDepth {
		return bad
	}
	s.Order, s.Child = tree.OrderByChild, path
	return nil
}

// parseLimits parses limitToFirst and limitToLast: non-negative decimal
// integers, at most one of them.
func parseLimits(s *tree.QuerySpec, params map[string]string) error {
	first, hasFirst := params["limitToFirst"]
	last, hasLast := params["limitToLast"]
	switch {
	case hasFirst && hasLast:
		return tree.Public(tree.ErrBadRequest, msgBothLimits)
	case hasFirst:
		return setLimit(s, "limitToFirst", first, false)
	case hasLast:
		return setLimit(s, "limitToLast", last, true)
	}
	return nil
}

func setLimit(s *tree.QuerySpec, name, text string, fromEnd bool) error {
	if text == "" {
		return tree.Public(tree.ErrBadRequest, fmt.Sprintf(msgLimitFormat, name))
	}
	n := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < '0' || c > '9' {
			return tree.Public(tree.ErrBadRequest, fmt.Sprintf(msgLimitFormat, name))
		}
		// No node has more than MaxInt32 children: larger limits are the same.
		n = min(n*10+int(c-'0'), math.MaxInt32)
	}
	s.Limit, s.HasLimit, s.LimitToLast = n, true, fromEnd
	return nil
}

// parseBound parses one range parameter: a JSON string, number, boolean
// or null, optionally followed by a comma and a JSON string key (the
// tie-breaker form the JS SDK sends: 5,"k1"). The value is already
// percent-decoded, so the comma that splits is the first one outside the
// JSON value.
func parseBound(s *tree.QuerySpec, name, raw string) (*tree.Bound, error) {
	if s.Shallow {
		if _, ok := tree.ParseJSONString(raw); !ok {
			return &tree.Bound{Value: tree.String(raw)}, nil
		}
	}
	bad := tree.Public(tree.ErrBadRequest, fmt.Sprintf(msgBoundFormat, name))
	v, rest, err := tree.ParseScalarPrefix(raw)
	if err != nil {
		return nil, bad
	}
	b := &tree.Bound{Value: v}
	if rest != "" {
		if rest[0] != ',' {
			return nil, bad
		}
		key, ok := tree.ParseJSONString(rest[1:])
		if !ok {
			return nil, bad
		}
		b.Key, b.Named = key, true
	}
	if s.Order == tree.OrderByKey && v.Kind() != tree.KindString {
		return nil, tree.Public(tree.ErrBadRequest, tree.MsgKeyIndexType)
	}
	return b, nil
}

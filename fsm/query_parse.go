package fsm

import (
	"cmp"
	"fmt"
	"math"
	"strings"
)

// ParseQuery parses the query parameters of a GET (SPEC §3). params maps
// a parameter name to its percent-decoded value; names other than orderBy,
// limitToFirst, limitToLast, startAt, endAt, startAfter, endBefore,
// equalTo and shallow are ignored (the caller checks names). It returns
// nil when there is no query (no orderBy-family parameter), and errors are
// *PublicError wrapping ErrBadRequest, with SPEC §3's texts where it has
// them.
//
// With shallow=true, limits and ranges are allowed without orderBy and
// work in key order; a bound that is not a JSON string is taken as a raw
// key, because firebase-tools pages with startAfter=<unquoted key>.
func ParseQuery(params map[string]string) (*Query, error) {
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
	q := &Query{shallow: params["shallow"] == "true"}
	_, hasEqualTo := params["equalTo"]
	switch {
	case q.shallow && (hasOrderBy || hasEqualTo):
		return nil, Public(ErrBadRequest, MsgShallowMix)
	case q.shallow:
		q.order = OrderByKey
	case !hasOrderBy:
		return nil, Public(ErrBadRequest, MsgOrderByRequired)
	default:
		if err := q.parseOrderBy(params["orderBy"]); err != nil {
			return nil, err
		}
	}
	if err := q.parseLimits(params); err != nil {
		return nil, err
	}
	if err := q.parseBounds(params); err != nil {
		return nil, err
	}
	return q, nil
}

// parseOrderBy parses orderBy: a JSON string naming $key, $value,
// $priority or a child path ("a/b"; empty segments are dropped).
func (q *Query) parseOrderBy(raw string) error {
	bad := Public(ErrBadRequest, MsgOrderByJSON)
	p := newParser([]byte(raw), 0)
	p.skipWS()
	if p.peek() != '"' {
		return bad
	}
	s, err := p.str()
	if err != nil || p.end() != nil {
		return bad
	}
	switch s {
	case "$key":
		q.order = OrderByKey
		return nil
	case "$value":
		q.order = OrderByValue
		return nil
	case "$priority":
		q.order = OrderByPriority
		return nil
	}
	var path Path
	for _, k := range strings.Split(s, "/") {
		if k == "" {
			continue
		}
		if !ValidKey(k) {
			return bad
		}
		path = append(path, k)
	}
	if len(path) == 0 || len(path) > MaxDepth {
		return bad
	}
	q.order, q.child = OrderByChild, path
	q.childKeys = make([]keyInfo, len(path))
	for i, k := range path {
		q.childKeys[i] = newKeyInfo(k)
	}
	return nil
}

// parseLimits parses limitToFirst and limitToLast: non-negative decimal
// integers, at most one of them.
func (q *Query) parseLimits(params map[string]string) error {
	first, hasFirst := params["limitToFirst"]
	last, hasLast := params["limitToLast"]
	switch {
	case hasFirst && hasLast:
		return Public(ErrBadRequest, msgBothLimits)
	case hasFirst:
		return q.setLimit("limitToFirst", first, false)
	case hasLast:
		return q.setLimit("limitToLast", last, true)
	}
	return nil
}

func (q *Query) setLimit(name, s string, fromEnd bool) error {
	if s == "" {
		return Public(ErrBadRequest, fmt.Sprintf(msgLimitFormat, name))
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) {
			return Public(ErrBadRequest, fmt.Sprintf(msgLimitFormat, name))
		}
		// No node has more than MaxInt32 children: larger limits are the same.
		n = min(n*10+int(c-'0'), math.MaxInt32)
	}
	q.limit, q.limitSet, q.fromEnd = n, true, fromEnd
	return nil
}

// parseBounds parses the range parameters and checks how they combine.
func (q *Query) parseBounds(params map[string]string) error {
	get := func(name string, exclusive, isEnd bool) (*bound, error) {
		raw, ok := params[name]
		if !ok {
			return nil, nil
		}
		return q.parseBound(name, raw, exclusive, isEnd)
	}
	startAt, err := get("startAt", false, false)
	if err != nil {
		return err
	}
	startAfter, err := get("startAfter", true, false)
	if err != nil {
		return err
	}
	endAt, err := get("endAt", false, true)
	if err != nil {
		return err
	}
	endBefore, err := get("endBefore", true, true)
	if err != nil {
		return err
	}
	equalTo, err := get("equalTo", false, false)
	if err != nil {
		return err
	}
	switch {
	case equalTo != nil && (startAt != nil || startAfter != nil || endAt != nil || endBefore != nil):
		return Public(ErrBadRequest, msgEqualToWithRange)
	case startAt != nil && startAfter != nil:
		return Public(ErrBadRequest, msgBothStarts)
	case endAt != nil && endBefore != nil:
		return Public(ErrBadRequest, msgBothEnds)
	case equalTo != nil:
		// equalTo=v[,k] is startAt=v[,k] together with endAt=v[,k].
		end := *equalTo
		if !end.named {
			end.name.ext = 1
		}
		q.start, q.end, q.equal = equalTo, &end, true
		return nil
	}
	q.start = cmp.Or(startAt, startAfter)
	q.end = cmp.Or(endAt, endBefore)
	return nil
}

// parseBound parses one range parameter: a JSON string, number, boolean
// or null, optionally followed by a comma and a JSON string key (the
// tie-breaker form the JS SDK sends: 5,"k1"). The value is already
// percent-decoded, so the comma that splits is the first one outside the
// JSON value. Without a key, the bound sits before every key of its value
// (startAt, endBefore) or after every key (startAfter, endAt), which makes
// the inclusive and exclusive forms include or exclude the whole value.
func (q *Query) parseBound(name, raw string, exclusive, isEnd bool) (*bound, error) {
	b := &bound{exclusive: exclusive}
	if isEnd != exclusive { // startAfter and endAt sit after every key
		b.name.ext = 1
	} else {
		b.name.ext = -1
	}
	if q.shallow && !isJSONString(raw) {
		b.value = String(raw)
		b.keyValue = newKeyInfo(raw)
		return b, nil
	}
	bad := Public(ErrBadRequest, fmt.Sprintf(msgBoundFormat, name))
	p := newParser([]byte(raw), 0)
	p.skipWS()
	if c := p.peek(); c == '{' || c == '[' {
		return nil, bad
	}
	v, err := p.value(0)
	if err != nil {
		return nil, bad
	}
	b.value = v
	p.skipWS()
	if p.pos < len(p.data) {
		if p.peek() != ',' {
			return nil, bad
		}
		p.pos++
		p.skipWS()
		if p.peek() != '"' {
			return nil, bad
		}
		key, err := p.str()
		if err != nil || p.end() != nil {
			return nil, bad
		}
		b.name, b.named = boundName{key: newKeyInfo(key)}, true
		switch key {
		case minName:
			b.name.ext = -1
		case maxName:
			b.name.ext = 1
		}
	}
	if q.order == OrderByKey {
		if v.Kind() != KindString {
			return nil, Public(ErrBadRequest, MsgKeyIndexType)
		}
		b.keyValue = newKeyInfo(v.StringValue())
	}
	return b, nil
}

// isJSONString reports whether s is exactly one JSON string (with
// optional surrounding whitespace).
func isJSONString(s string) bool {
	p := newParser([]byte(s), 0)
	p.skipWS()
	if p.peek() != '"' {
		return false
	}
	_, err := p.str()
	return err == nil && p.end() == nil
}

// filters reports whether the query chooses among the children (a range or
// a limit), rather than only ordering them.
func (q *Query) filters() bool { return q.start != nil || q.end != nil || q.limitSet }

// IndexName is the seam for `.indexOn` (the rules issue): the name a rule
// must declare for this query to use an index, and the one the
// `--strict-indexes` error quotes (`Index not defined, add ".indexOn":
// "<name>", for path "/<path>", to the rules`). It is ".value" for $value,
// the child path ("a/b") for a child ordering, and "" for $key and
// $priority, which Firebase serves without a declared index.
func (q *Query) IndexName() string {
	switch q.order {
	case OrderByValue:
		return ".value"
	case OrderByChild:
		return strings.Join(q.child, "/")
	}
	return ""
}

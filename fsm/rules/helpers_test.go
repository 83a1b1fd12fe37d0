package rules

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// tv is a test Value over JSON-decoded Go data. A map with ".priority"
// carries a priority; {".value": x, ".priority": p} is a leaf with one.
type tv struct{ v any }

func val0(x any) Value { return tv{normalize(x)} }

// tree decodes JSON text into a test Value.
func tree(t testing.TB, js string) Value {
	t.Helper()
	var x any
	if err := json.Unmarshal([]byte(js), &x); err != nil {
		t.Fatalf("bad test JSON %q: %v", js, err)
	}
	return val0(x)
}

func normalize(x any) any {
	switch t := x.(type) {
	case int:
		return float64(t)
	case map[string]any:
		for k, c := range t {
			t[k] = normalize(c)
		}
	}
	return x
}

func (v tv) inner() any {
	if m, ok := v.v.(map[string]any); ok {
		if x, ok := m[".value"]; ok {
			return x
		}
	}
	return v.v
}

func (v tv) Kind() Kind {
	switch t := v.inner().(type) {
	case bool:
		return Bool
	case float64:
		return Number
	case string:
		return String
	case map[string]any:
		for k := range t {
			if !strings.HasPrefix(k, ".") {
				return Object
			}
		}
	}
	return Null
}

func (v tv) Bool() bool      { b, _ := v.inner().(bool); return b }
func (v tv) Number() float64 { f, _ := v.inner().(float64); return f }
func (v tv) Str() string     { s, _ := v.inner().(string); return s }
func (v tv) Priority() Value { m, _ := v.v.(map[string]any); return tv{m[".priority"]} }
func (v tv) Len() int        { n := 0; v.Each(func(string, Value) bool { n++; return true }); return n }
func (v tv) Child(k string) Value {
	if m, ok := v.inner().(map[string]any); ok && !strings.HasPrefix(k, ".") {
		return tv{m[k]}
	}
	return tv{nil}
}

func (v tv) Each(fn func(string, Value) bool) {
	m, ok := v.inner().(map[string]any)
	if !ok {
		return
	}
	var keys []string
	for k := range m {
		if !strings.HasPrefix(k, ".") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !fn(k, tv{m[k]}) {
			return
		}
	}
}

// Same is identity for maps and equality for scalars.
func (v tv) Same(o Value) bool {
	w, ok := o.(tv)
	if !ok {
		return false
	}
	a, b := reflect.ValueOf(v.v), reflect.ValueOf(w.v)
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Kind() == reflect.Map && b.Kind() == reflect.Map {
		return a.Pointer() == b.Pointer()
	}
	if a.Kind() == reflect.Map || b.Kind() == reflect.Map {
		return false
	}
	return v.v == w.v
}

// mustParse parses rules the test expects to be valid.
func mustParse(t testing.TB, src string) *Ruleset {
	t.Helper()
	r, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse(%s): %v", src, err)
	}
	return r
}

// syntaxErr parses rules the test expects to be rejected.
func syntaxErr(t testing.TB, src string) *SyntaxError {
	t.Helper()
	_, err := Parse([]byte(src))
	if err == nil {
		t.Fatalf("Parse(%s) succeeded; want an error", src)
	}
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse error %T is not a *SyntaxError", err)
	}
	return se
}

// p splits a slash path.
func p(s string) []string {
	var out []string
	for seg := range strings.SplitSeq(s, "/") {
		if seg != "" {
			out = append(out, seg)
		}
	}
	return out
}

// set returns a copy of root with the value at path replaced by x (nil
// deletes), sharing every untouched map, like a persistent tree.
func set(root Value, path string, x any) Value {
	var rec func(cur any, segs []string) any
	rec = func(cur any, segs []string) any {
		if len(segs) == 0 {
			return normalize(x)
		}
		m, _ := cur.(map[string]any)
		out := make(map[string]any, len(m)+1)
		for k, c := range m {
			out[k] = c
		}
		c := rec(m[segs[0]], segs[1:])
		if c == nil {
			delete(out, segs[0])
		} else {
			out[segs[0]] = c
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return tv{rec(root.(tv).v, p(path))}
}

var uid1 = map[string]any{"uid": "u1", "provider": "password", "token": map[string]any{"email": "a@example.com", "admin": true}}

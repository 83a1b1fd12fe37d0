package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"
)

// A value of the tree is what encoding/json decodes with UseNumber: nil
// (absent), map[string]any, string, json.Number or bool. Numbers stay
// json.Number, so a counter near 2^62 keeps every bit.

// Change is the data of a put or patch frame: {"path": …, "data": …}.
type Change struct {
	Path []string // relative to the stream's location; empty for "/"
	// Value is a put's new value at Path (nil: deleted).
	Value any
	// Fields are a patch's children: relative paths below Path (one or
	// more segments) and their new values, in the order sent.
	Fields []Field
}

// Field is one child of a patch.
type Field struct {
	Path  []string
	Value any
}

// ParseChange decodes the data of a put or patch frame.
func ParseChange(event string, data []byte) (Change, error) {
	var raw struct {
		Path *string         `json:"path"`
		Data json.RawMessage `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Change{}, fmt.Errorf("%s data: %w", event, err)
	}
	if dec.More() {
		return Change{}, fmt.Errorf("%s data: more than one JSON value", event)
	}
	if raw.Path == nil || raw.Data == nil {
		return Change{}, fmt.Errorf("%s data: no path or no data", event)
	}
	p, err := splitPath(*raw.Path)
	if err != nil {
		return Change{}, fmt.Errorf("%s data: %w", event, err)
	}
	c := Change{Path: p}
	if event == EventPut {
		c.Value, err = decodeValue(raw.Data)
		return c, err
	}
	// A patch: an object whose keys are paths, decoded in order.
	d := json.NewDecoder(bytes.NewReader(raw.Data))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return Change{}, fmt.Errorf("patch data is not an object")
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return Change{}, fmt.Errorf("patch data: %w", err)
		}
		name, _ := tok.(string)
		fp, err := splitPath(name)
		if err != nil || len(fp) == 0 {
			return Change{}, fmt.Errorf("patch field %q: not a path", name)
		}
		var v any
		if err := d.Decode(&v); err != nil {
			return Change{}, fmt.Errorf("patch field %q: %w", name, err)
		}
		c.Fields = append(c.Fields, Field{Path: fp, Value: normalize(v)})
	}
	return c, nil
}

// splitPath turns "/a/b" (or "a/b", "/") into its segments.
func splitPath(p string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s == "" {
			continue
		}
		if strings.ContainsAny(s, ".$#[]") {
			return nil, fmt.Errorf("path %q: bad segment %q", p, s)
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeValue decodes one JSON value, numbers kept exact.
func decodeValue(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("value: more than one JSON value")
	}
	return normalize(v), nil
}

// normalize drops null children and empty objects, as the database
// stores neither.
func normalize(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, c := range m {
		if c = normalize(c); c == nil {
			delete(m, k)
		} else {
			m[k] = c
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Tree is a watcher's copy of the watched location, kept as a Firebase
// client keeps its cache: a put replaces the value at its path, a patch
// each of its fields.
type Tree struct {
	root any
}

// Get returns the value at p (nil when absent). Maps are shared with the
// tree: clone before the tree changes.
func (t *Tree) Get(p []string) any {
	v := t.root
	for _, s := range p {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[s]
	}
	return v
}

// Put sets the value at p; nil deletes it, and parents left empty go
// too. A put below a leaf replaces the leaf with an object.
func (t *Tree) Put(p []string, v any) {
	t.root = put(t.root, p, normalize(v))
}

func put(node any, p []string, v any) any {
	if len(p) == 0 {
		return v
	}
	m, ok := node.(map[string]any)
	if !ok {
		if v == nil {
			return node // deleting below a leaf changes nothing
		}
		m = map[string]any{}
	}
	if c := put(m[p[0]], p[1:], v); c == nil {
		delete(m, p[0])
	} else {
		m[p[0]] = c
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// JSON renders the tree canonically (object keys sorted), as Canonical
// renders a value read from a node, so the two compare byte for byte.
func (t *Tree) JSON() []byte {
	b, _ := json.Marshal(t.root) // decoded JSON always encodes
	return b
}

// Canonical re-renders the JSON text of a tree with its object keys
// sorted and nulls dropped.
func Canonical(b []byte) ([]byte, error) {
	v, err := decodeValue(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// clone copies a value deeply enough to survive later puts.
func clone(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	c := maps.Clone(m)
	for k, x := range c {
		if _, sub := x.(map[string]any); sub {
			c[k] = clone(x)
		}
	}
	return c
}

// keyDepth is the depth of a workload key: kind/generation/key.
const keyDepth = 3

// keysUnder appends the keys a watcher records at or below path p, whose
// value is v: the paths at keyDepth, or shallower leaves.
func keysUnder(v any, p []string, out map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok || len(p) >= keyDepth {
		if v != nil || len(p) >= keyDepth {
			out[keyOf(p)] = true
		}
		return
	}
	for k, c := range m {
		keysUnder(c, append(p[:len(p):len(p)], k), out)
	}
}

// keyOf names the key of path p: its first keyDepth segments.
func keyOf(p []string) string {
	return strings.Join(p[:min(len(p), keyDepth)], "/")
}

// splitKey is the inverse of keyOf.
func splitKey(k string) []string {
	if k == "" {
		return nil
	}
	return strings.Split(k, "/")
}

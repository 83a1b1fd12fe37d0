// Package ssetest is for tests of event streams (SPEC §5): it applies a
// stream's frames to the copy a client holds, as the Firebase SDKs do, so
// that a test can compare that copy with a GET of the same location.
package ssetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Copy is what a client holds after frames, each "put {…}" or "patch {…}"
// (the event's name, a space, its data), in the normal form of Normal.
func Copy(frames []string) (any, error) {
	var held any
	for _, f := range frames {
		name, data, _ := strings.Cut(f, " ")
		var ev struct {
			Path string
			Data json.RawMessage
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return nil, fmt.Errorf("frame %q: %w", f, err)
		}
		at := keys(ev.Path)
		switch name {
		case "put":
			v, err := Normal(string(ev.Data))
			if err != nil {
				return nil, err
			}
			held = set(held, at, v)
		case "patch":
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(ev.Data, &fields); err != nil {
				return nil, fmt.Errorf("patch %q: %w", f, err)
			}
			for k, raw := range fields {
				v, err := Normal(string(raw))
				if err != nil {
					return nil, err
				}
				held = set(held, append(at[:len(at):len(at)], keys(k)...), v)
			}
		default:
			return nil, fmt.Errorf("unexpected frame %q", f)
		}
	}
	return held, nil
}

// Normal decodes JSON into the tree it stands for: arrays become objects
// keyed by index, nulls and empty objects vanish (SPEC §1), numbers stay
// json.Number.
func Normal(s string) (any, error) {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode %q: %w", s, err)
	}
	return normal(v), nil
}

func normal(v any) any {
	var m map[string]any
	switch x := v.(type) {
	case []any:
		m = map[string]any{}
		for i, e := range x {
			m[fmt.Sprint(i)] = e
		}
	case map[string]any:
		m = x
	default:
		return v
	}
	out := map[string]any{}
	for k, e := range m {
		if n := normal(e); n != nil {
			out[k] = n
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// keys splits a stream path ("/a/b") into its keys.
func keys(p string) []string {
	var out []string
	for _, k := range strings.Split(p, "/") {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}

// set returns tree with v at path, pruning emptied objects.
func set(tree any, path []string, v any) any {
	if len(path) == 0 {
		return v
	}
	m, _ := tree.(map[string]any)
	out := make(map[string]any, len(m)+1)
	for k, e := range m {
		out[k] = e
	}
	if c := set(out[path[0]], path[1:], v); c != nil {
		out[path[0]] = c
	} else {
		delete(out, path[0])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

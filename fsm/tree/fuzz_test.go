package tree

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// The seed corpora live in testdata/fuzz/<target>/.

// requirePublic fails unless err is nil or a *PublicError: every parse
// error must carry a client message.
func requirePublic(t *testing.T, err error) {
	t.Helper()
	var pe *PublicError
	if err != nil && !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *PublicError", err, err)
	}
}

// FuzzParseBody: no panic; errors are public; a parsed body renders (export)
// to text that parses back to the same tree and renders identically; every
// other rendering is valid JSON, and pretty compacts to compact.
func FuzzParseBody(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := ParseBody(data, MaxDepth)
		requirePublic(t, err)
		if err != nil {
			return
		}
		export := AppendJSON(nil, n, RenderOptions{Export: true})
		back, err := ParseBody(export, MaxDepth)
		if err != nil {
			t.Fatalf("export %s does not parse back: %v", export, err)
		}
		if again := AppendJSON(nil, back, RenderOptions{Export: true}); !bytes.Equal(again, export) {
			t.Fatalf("export round trip differs:\n%s\n%s", export, again)
		}
		if !back.Equal(n) {
			t.Fatalf("export round trip changed the hash of %s", export)
		}
		plain := AppendJSON(nil, n, RenderOptions{})
		if !json.Valid(plain) || !json.Valid(AppendShallow(nil, n, RenderOptions{})) {
			t.Fatalf("invalid JSON rendered for %q", data)
		}
		for _, o := range []RenderOptions{{}, {Export: true}} {
			compact := AppendJSON(nil, n, o)
			o.Pretty = true
			var buf bytes.Buffer
			if err := json.Compact(&buf, AppendJSON(nil, n, o)); err != nil || !bytes.Equal(buf.Bytes(), compact) {
				t.Fatalf("pretty does not compact to compact (%v):\n%s\n%s", err, buf.Bytes(), compact)
			}
		}
	})
}

// FuzzParseUpdate: no panic; errors are public; fields are valid relative
// paths that do not overlap, and each value is within its depth budget.
func FuzzParseUpdate(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		fields, err := ParseUpdate(data, MaxDepth)
		requirePublic(t, err)
		if err != nil {
			return
		}
		for i, fl := range fields {
			if len(fl.Path) == 0 {
				t.Fatalf("field %d has an empty path", i)
			}
			for j, k := range fl.Path {
				if !ValidKey(k) && (k != ".priority" || j != len(fl.Path)-1) {
					t.Fatalf("field %d has bad key %q", i, k)
				}
			}
			for j := range i {
				if fl.Path.HasPrefix(fields[j].Path) || fields[j].Path.HasPrefix(fl.Path) {
					t.Fatalf("fields %s and %s overlap", fields[j].Path, fl.Path)
				}
			}
			if !json.Valid(AppendJSON(nil, fl.Value, RenderOptions{Export: true})) {
				t.Fatalf("field %s renders invalid JSON", fl.Path)
			}
		}
	})
}

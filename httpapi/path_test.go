package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

func TestParsePath(t *testing.T) {
	deep := strings.Repeat("/a", tree.MaxDepth)
	for _, tt := range []struct {
		in   string
		want string // the path's String form, or the error message
	}{
		{"", "/"},
		{"//users//jack", "/users/jack"},
		{"/a%20b/c+d", "/a b/c+d"},
		{"/%E2%82%AC", "/€"},
		{"/a/.priority", "/a/.priority"},
		{deep, deep},
		{deep + "/.priority", deep + "/.priority"},
		{deep + "/b", tree.MsgPathTooLong},
		{"/" + strings.Repeat("k", tree.MaxKeyBytes+1), tree.MsgPathTooLong},
		{"/a.b", tree.MsgInvalidToken},
		{"/a/.priority/b", tree.MsgInvalidToken},
		{"/a%2Fb", tree.MsgInvalidToken},
		{"/%zz", tree.MsgInvalidToken},
		{"/%FF", tree.MsgInvalidToken},
	} {
		p, err := parsePath(tt.in)
		got := p.String()
		if err != nil {
			var pe *tree.PublicError
			if !errors.As(err, &pe) {
				t.Fatalf("parsePath(%q): %v is not a public error", tt.in, err)
			}
			got = pe.Message
		}
		if got != tt.want {
			t.Errorf("parsePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzParsePath: no panic; errors are public; a parsed path has valid keys
// (a final ".priority" aside), no more than MaxDepth of them, and parses
// again to itself from its String form.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/a/b", "//a//b/", "/a%20b", "/a/.priority", "/%E2%82%AC"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePath(s)
		var pe *tree.PublicError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("parsePath(%q): %v (%T) is not a public error", s, err, err)
		}
		if err != nil {
			return
		}
		keys := p
		if p.IsPriority() {
			keys = p[:len(p)-1]
		}
		if len(keys) > tree.MaxDepth {
			t.Fatalf("parsePath(%q) has %d keys", s, len(keys))
		}
		for _, k := range keys {
			if !tree.ValidKey(k) {
				t.Fatalf("parsePath(%q) kept bad key %q", s, k)
			}
		}
		if len(p) == 0 || strings.Contains(p.String(), "%") {
			// Keys hold no '/', and parsePath accepts unescaped UTF-8
			// text, so the String form reads back the same unless a key
			// contains '%'.
			return
		}
		again, err := parsePath(p.String())
		if err != nil || again.String() != p.String() {
			t.Fatalf("parsePath(%q) = %q, which reads back as %q, %v", s, p.String(), again, err)
		}
	})
}

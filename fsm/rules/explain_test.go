package rules

import (
	"strings"
	"testing"
)

// explainRules has a grant at the top for admins, per-user grants, and
// .validate rules above and below the written nodes.
const explainRules = `{
  "rules": {
    ".read": "auth != null && auth.admin === true",
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "$uid === auth.uid",
        ".validate": "newData.hasChildren(['name'])",
        "name": { ".validate": "newData.isString()" },
        "$other": { ".validate": false }
      }
    },
    "open": { ".write": true }
  }
}`

func TestExplainReadNamesTheRule(t *testing.T) {
	r := mustParse(t, explainRules)
	root := tree(t, `{"users": {"u1": {"name": "Ann"}}}`)
	tests := []struct {
		path, rule string
		auth       any
		allowed    bool
		line       int
	}{
		{"users/u1", "/rules/users/$uid/.read", authAs("u1"), true, 6},
		{"users/u1", "/rules/.read", map[string]any{"uid": "x", "admin": true}, true, 3},
		{"users/u1", "/rules/users/$uid/.read", authAs("u2"), false, 6},
		{"open", "/rules/.read", authAs("u2"), false, 3},
	}
	for _, tc := range tests {
		d := r.ExplainRead(p(tc.path), &Env{Auth: tc.auth, Root: root})
		if d.Allowed != tc.allowed || d.walked != d.Allowed {
			t.Errorf("ExplainRead(%q, %v).Allowed = %v, want %v", tc.path, tc.auth, d.Allowed, tc.allowed)
		}
		if d.Rule == nil || d.Rule.Path != tc.rule || d.Rule.Line != tc.line {
			t.Errorf("ExplainRead(%q, %v).Rule = %+v, want %s at line %d", tc.path, tc.auth, d.Rule, tc.rule, tc.line)
		}
	}
}

func TestExplainWriteNamesTheRule(t *testing.T) {
	r := mustParse(t, explainRules)
	root := tree(t, `{"users": {"u1": {"name": "Ann"}}}`)
	tests := []struct {
		name, path string
		value      any
		auth       any
		allowed    bool
		rule       string // "" for no rule
		expr       string
	}{
		{"owner", "users/u1", map[string]any{"name": "Al"}, authAs("u1"), true, "/rules/users/$uid/.write", "$uid === auth.uid"},
		{"not the owner", "users/u1", map[string]any{"name": "Al"}, authAs("u2"), false, "/rules/users/$uid/.write", "$uid === auth.uid"},
		{"name not a string", "users/u1/name", 5, authAs("u1"), false, "/rules/users/$uid/name/.validate", "newData.isString()"},
		{"unknown field below", "users/u1", map[string]any{"name": "Al", "x": 1}, authAs("u1"), false, "/rules/users/$uid/$other/.validate", "false"},
		{"ancestor validate", "users/u2/age", 3, authAs("u2"), false, "/rules/users/$uid/.validate", "newData.hasChildren(['name'])"},
		{"open", "open/x", 1, nil, true, "/rules/open/.write", "true"},
		{"no rule", "elsewhere", 1, authAs("u1"), false, "", ""},
		{"delete", "users/u1", nil, authAs("u1"), true, "/rules/users/$uid/.write", "$uid === auth.uid"},
	}
	for _, tc := range tests {
		env := &Env{Auth: tc.auth, Root: root, NewRoot: set(root, tc.path, tc.value)}
		d := r.ExplainWrite(p(tc.path), env)
		if d.Allowed != tc.allowed || d.walked != d.Allowed {
			t.Errorf("%s: Allowed = %v, walked to %v, want %v", tc.name, d.Allowed, d.walked, tc.allowed)
		}
		switch {
		case tc.rule == "" && d.Rule != nil:
			t.Errorf("%s: Rule = %+v, want none", tc.name, d.Rule)
		case tc.rule != "" && (d.Rule == nil || d.Rule.Path != tc.rule || d.Rule.Expr != tc.expr):
			t.Errorf("%s: Rule = %+v, want %s %q", tc.name, d.Rule, tc.rule, tc.expr)
		}
	}
}

// TestExplainAgreesWithTheJudge checks the explanation's verdict against
// CanWrite's on many writes of the user rules' tests: the explainer walks
// the rules itself, so it must reach the same answer.
func TestExplainAgreesWithTheJudge(t *testing.T) {
	r := mustParse(t, userRules)
	root := tree(t, `{"users": {"u1": {"name": "Ann"}, "u2": {"name": "Bob"}}}`)
	values := []any{nil, 1, "s", strings.Repeat("x", 120), map[string]any{"name": "A"},
		map[string]any{"name": "A", "profile": map[string]any{"name": "x", "age": 1}},
		map[string]any{"name": "A", "zz": 1}, map[string]any{"name": "x", "age": 1}}
	paths := []string{"", "users", "users/u1", "users/u1/name", "users/u1/profile", "users/u1/x", "users/u3"}
	for _, path := range paths {
		for _, v := range values {
			for _, auth := range []any{nil, authAs("u1"), authAs("u3")} {
				env := &Env{Auth: auth, Root: root, NewRoot: set(root, path, v)}
				d := r.ExplainWrite(p(path), env)
				if d.walked != d.Allowed {
					t.Errorf("write %q %v as %v: explained %v, judged %v", path, v, auth, d.walked, d.Allowed)
				}
				if d.Rule == nil && d.Allowed {
					t.Errorf("write %q %v as %v: allowed by no rule", path, v, auth)
				}
				if d.Rule != nil && d.Rule.Line == 0 {
					t.Errorf("write %q: rule %s has no line", path, d.Rule.Path)
				}
			}
		}
	}
}

func TestExplainBuiltInRules(t *testing.T) {
	d := Closed().ExplainRead(nil, &Env{})
	if d.Allowed || d.Rule == nil || d.Rule.Path != "/rules/.read" || d.Rule.Expr != "false" || d.Rule.Line != 0 {
		t.Errorf("Closed().ExplainRead = %+v %+v", d, d.Rule)
	}
}

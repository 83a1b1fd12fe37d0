package rules

import (
	"bytes"
	"strings"
	"testing"
)

const commented = `// Example rules.
{
  /* top-level
     block comment */
  "rules": {
    ".read": "auth != null", // signed-in users read everything
    "users": {
      "$uid": {
        ".write": "$uid === auth.uid" /* owner only */
      }
    },
    "tags": { ".indexOn": [".value", "weight"] }
  }
}
`

func TestSourceKeepsComments(t *testing.T) {
	r := mustParse(t, commented)
	if got := r.Source(); string(got) != commented {
		t.Errorf("Source() = %q, want the original text", got)
	}
	// The returned slice is a copy: changing it must not change the rules.
	src := r.Source()
	src[0] = 'X'
	if r.Source()[0] != '/' {
		t.Error("Source() exposed internal storage")
	}
}

func TestStrictJSON(t *testing.T) {
	r := mustParse(t, commented)
	want := `{
  "rules": {
    ".read": "auth != null",
    "users": {
      "$uid": {
        ".write": "$uid === auth.uid"
      }
    },
    "tags": {
      ".indexOn": [
        ".value",
        "weight"
      ]
    }
  }
}`
	if got := string(r.StrictJSON()); got != want {
		t.Errorf("StrictJSON() =\n%s\nwant\n%s", got, want)
	}
	// Strict output parses back to the same rules.
	again := mustParse(t, string(r.StrictJSON()))
	if !bytes.Equal(again.StrictJSON(), r.StrictJSON()) {
		t.Error("StrictJSON is not a fixed point")
	}
}

func TestStrictJSONEscapes(t *testing.T) {
	r := mustParse(t, `{"rules": {".read": "auth != null && 'a\"b\\\\c\u00e9\t' != '<&>'"}}`)
	want := "{\n  \"rules\": {\n    \".read\": \"auth != null && 'a\\\"b\\\\\\\\cé\\t' != '<&>'\"\n  }\n}"
	if got := string(r.StrictJSON()); got != want {
		t.Errorf("StrictJSON() = %s\nwant %s", got, want)
	}
}

func TestClosedOpen(t *testing.T) {
	closed := "{\n  \"rules\": {\n    \".read\": false,\n    \".write\": false\n  }\n}"
	open := strings.ReplaceAll(closed, "false", "true")
	if got := string(Closed().Source()); got != closed {
		t.Errorf("Closed().Source() = %q", got)
	}
	if got := string(Open().StrictJSON()); got != open {
		t.Errorf("Open().StrictJSON() = %q", got)
	}
	// The tidy sources are themselves valid rules meaning the same thing.
	for _, src := range []string{closed, open} {
		mustParse(t, src)
	}
	env := &Env{Root: tree(t, `{"a": 1}`), NewRoot: tree(t, `{"a": 2}`)}
	if Closed().CanRead(nil, env) || Closed().CanRead(p("a"), env) || Closed().CanWrite([][]string{p("a")}, env) {
		t.Error("Closed() allowed something")
	}
	if !Open().CanRead(p("a/b"), env) || !Open().CanWrite([][]string{p("a")}, env) {
		t.Error("Open() denied something")
	}
}

func TestSourceErrors(t *testing.T) {
	tests := []struct {
		src          string
		line, column int
		msg          string
	}{
		{``, 1, 1, "Unexpected end of input"},
		{`   `, 1, 4, "Unexpected end of input"},
		{`{"rules": {}} x`, 1, 15, "after the rules object"},
		{`{"rules": {},}`, 1, 14, "expected a quoted key"},
		{`{"rules": {".read": true,}}`, 1, 26, "expected a quoted key"},
		{"{\n  \"rules\": {\n    \".read\": true\n    \".write\": true\n  }\n}", 4, 5, "expected ',' or '}'"},
		{`{"rules": {"a": {}, "a": {}}}`, 1, 21, `Duplicate key "a"`},
		{`{"rules": {} /* open`, 1, 14, "Unterminated comment"},
		{`{"rules": {".read": "abc}}`, 1, 21, "Unterminated string"},
		{`{"rules": {".read": "a\qb"}}`, 1, 23, "Invalid escape"},
		{`{"rules": {".read": "a\u00zz"}}`, 1, 23, "Invalid \\u escape"},
		{"{\"rules\": {\".read\": \"a\tb\"}}", 1, 23, "Control character"},
		{`{"rules": {".read": 01}}`, 1, 21, "Invalid number"},
		{`{"rules": {".read": 1.}}`, 1, 23, "Invalid number"},
		{`{"rules": {".read": tru}}`, 1, 21, "expected a value"},
		{"{\"rules\": {\"é\": 1 \xff}}", 1, 19, "Invalid UTF-8"},
		{`[]`, 1, 1, `"rules" key`},
		{`{}`, 1, 1, `Missing "rules"`},
		{`{"rules": {}, "other": 1}`, 1, 15, `Unexpected key "other"`},
		{`{"rules": true}`, 1, 11, "Expected an object of rules"},
		{"\n\n  {\"rules\": {\"a\": 5}}", 3, 19, `Expected an object of rules for "a"`},
		{strings.Repeat("[", 65), 1, 65, "nested too deeply"},
	}
	for _, tc := range tests {
		e := syntaxErr(t, tc.src)
		if e.Line != tc.line || e.Column != tc.column || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("Parse(%q) = %v; want line %d, column %d, containing %q", tc.src, e, tc.line, tc.column, tc.msg)
		}
	}
}

func TestSourceSizeLimit(t *testing.T) {
	pad := strings.Repeat(" ", MaxSourceBytes)
	e := syntaxErr(t, `{"rules": {}}`+pad)
	if !strings.Contains(e.Msg, "too large") {
		t.Errorf("got %v", e)
	}
	mustParse(t, (`{"rules": {}}` + pad)[:MaxSourceBytes])
}

func TestSourceAccepts(t *testing.T) {
	for _, src := range []string{
		"\uFEFF{\"rules\": {}}",
		`{"rules": {}}// trailing comment without newline`,
		`{"rules": {/**/}}`,
		`{"rules": {".read": "'\u00e9\ud83d\ude00' != ''"}}`,
		`{"rules": {".read": "'a\/b' == 'a/b'"}}`,
	} {
		mustParse(t, src)
	}
}

func TestErrorString(t *testing.T) {
	e := &SyntaxError{Line: 3, Column: 7, Msg: "Unknown variable 'usr'."}
	if got := e.Error(); got != "Line 3, column 7: Unknown variable 'usr'." {
		t.Errorf("Error() = %q", got)
	}
}

package rules

import (
	"encoding/json"
	"strings"
	"testing"
)

// exprRules wraps expr as the given rule at the root.
func exprRules(key, expr string) string {
	return `{"rules": {"` + key + `": ` + quote(expr) + `}}`
}

// quote is a JSON string literal for s that keeps & < > as they are, so
// that byte offsets in s match offsets in the file.
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func TestExpressionErrors(t *testing.T) {
	deep := strings.Repeat("(", 70) + "true" + strings.Repeat(")", 70)
	tests := []struct {
		key, expr string
		off       int // byte offset in the expression where the error points
		msg       string
	}{
		{".read", "usr != null", 0, "Unknown variable 'usr'."},
		{".read", "auth != null && usr.x", 16, "Unknown variable 'usr'."},
		{".read", "data.foo()", 5, "No such method/property 'foo'."},
		{".read", "data.foo", 5, "No such method/property 'foo'."},
		{".read", "'a'.foo()", 4, "No such method/property 'foo'."},
		{".read", "'a'.length()", 4, "No such method/property 'length'."},
		{".read", "(1).foo == 1", 4, "No such method/property 'foo'."},
		{".read", "auth.uid.foo()", 9, "No such method/property 'foo'."},
		{".read", "data.val().child('x').exists()", 11, "No such method/property 'child'."},
		{".read", "data.child()", 5, "Wrong number of arguments to 'child': expected 1, got 0."},
		{".read", "data.child('a', 'b').exists()", 5, "Wrong number of arguments"},
		{".read", "data.val(1) == 1", 5, "Wrong number of arguments to 'val'"},
		{".read", "data.hasChildren(['a'], ['b'])", 5, "expected 0 or 1, got 2"},
		{".read", "newData.exists()", 0, "'newData'"},
		{".write", "query.orderByKey", 0, "'query'"},
		{".validate", "query.orderByKey", 0, "'query'"},
		{".read", "query.foo", 6, "No such method/property 'foo'."},
		{".read", "query", 0, "Expression must evaluate to a boolean."},
		{".read", "query == null", 0, "Found the query object"},
		{".read", "$uid == 'x'", 0, "Unknown variable '$uid'."},
		{".read", "1 + 2", 2, "Expression must evaluate to a boolean."},
		{".read", "'a'", 0, "Expression must evaluate to a boolean."},
		{".read", "data.val", 5, "Expression must evaluate to a boolean."},
		{".read", "data", 0, "Expression must evaluate to a boolean."},
		{".read", "data.exists", 5, "Expression must evaluate to a boolean."},
		{".read", "now", 0, "Expression must evaluate to a boolean."},
		{".read", "data.exists == true", 5, "'exists' is a method; call it with ()."},
		{".read", "data == null", 0, "Found a snapshot; use val()"},
		{".read", "root.child(data).exists()", 11, "Expected a string. Found a snapshot"},
		{".read", "1 < 'a'", 2, "Operator '<' expects two numbers or two strings."},
		{".read", "true + 1 == 2", 5, "Operator '+' expects numbers or strings."},
		{".read", "auth.uid + null == 'u1'", 9, "Operator '+' expects numbers or strings."},
		{".read", "'a' * 2 == 2", 4, "Operator '*' expects numbers."},
		{".read", "!5", 1, "Expected a boolean."},
		{".read", "-'a' == 1", 1, "Expected a number."},
		{".read", "1 && true", 0, "Expected a boolean."},
		{".read", "'x' ? true : false", 0, "Expected a boolean."},
		{".read", "'abc'.matches('a')", 14, "matches() expects a regular expression literal"},
		{".read", "/abc/ == 1", 0, "only allowed as the argument of matches()"},
		{".read", "'a'.matches(/(/)", 12, "Invalid regular expression"},
		{".read", "'a'.matches(/a/g)", 15, "only 'i' is allowed"},
		{".read", "'a'.matches(/abc)", 12, "Unterminated regular expression"},
		{".read", "'a'.matches(/" + strings.Repeat("a", 1025) + "/)", 12, "Regular expression too long"},
		{".read", "['a'] == 1", 0, "Array literals are only allowed"},
		{".read", "data.hasChildren('a')", 17, "Expected an array of strings."},
		{".read", "data.hasChildren([1])", 18, "Expected a string."},
		{".read", "a = 1", 2, "Unexpected '='"},
		{".read", "auth.uid & 1", 9, "bitwise"},
		{".read", "auth != null &&", 15, "Unexpected end of expression."},
		{".read", "(auth != null", 13, "expected ')'"},
		{".read", "'abc", 0, "Unterminated string literal."},
		{".read", "1.5.3 == 1", 3, "Unexpected literal."},
		{".read", "3x == 1", 0, "Invalid number."},
		{".read", "", 0, "Empty expression."},
		{".read", "   ", 0, "Empty expression."},
		{".read", "auth()", 4, "Expression is not a function."},
		{".read", "data.val()() == 1", 10, "Expression is not a function."},
		{".read", "data[0]", 0, "Only objects can be indexed"},
		{".read", "auth.token[data] == 1", 11, "Found a snapshot"},
		{".read", "auth. == 1", 6, "Expected a property name"},
		{".read", "true #", 5, "Unexpected character '#'."},
		{".read", "1e999 == 1", 0, "Number out of range."},
		{".read", deep, 64, "nested too deeply"},
		{".read", strings.Repeat("!", 70) + "true", 63, "nested too deeply"},
		{".read", strings.Repeat("1 + ", 70) + "1 == 1", 0, "nested too deeply"},
		{".read", "true || " + strings.Repeat(" ", maxExprBytes), 0, "Expression too long"},
	}
	for _, tc := range tests {
		src := exprRules(tc.key, tc.expr)
		e := syntaxErr(t, src)
		start := strings.Index(src, `": "`) + 4 // first byte of the expression
		if e.Line != 1 || e.Column != start+tc.off+1 || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s %q: got %v; want column %d (offset %d) and %q", tc.key, tc.expr, e, start+tc.off+1, tc.off, tc.msg)
		}
	}
}

func TestExpressionErrorPositionInFile(t *testing.T) {
	src := `{
  "rules": {
    ".read": "'\u00e9' + \"x\" == usr"
  }
}`
	e := syntaxErr(t, src)
	// The decoded expression is  'é' + "x" == usr  ; the escapes before
	// usr take more bytes in the file than in the string.
	if e.Line != 3 || e.Column != 35 || e.Msg != "Unknown variable 'usr'." {
		t.Errorf("got %v; want Line 3, column 35", e)
	}
}

func TestExpressionsAccepted(t *testing.T) {
	for key, exprs := range map[string][]string{
		".read": {
			"data['child']('a').exists()",
			"(query).limitToFirst <= 100",
			"query.orderByChild == 'owner' && query.equalTo == auth.uid",
			"query.orderByKey || query.orderByValue || query.orderByPriority",
			"query.startAt == null && query.endAt == null && query.limitToLast == null",
			"(auth != null ? auth.uid : 'x') == 'y'",
			"auth.token.roles[0] == 'admin'",
			"data.child('a').val() + 1 > 2",
			"root.child('x').child(auth.uid).val() != null",
			"auth.uid.matches(/^[a-z]+$/i)",
			"data.val()",
			"1 / 2 == .5 && 1.5e3 == 1500 && 2E-1 == 0.2",
			strings.Repeat("true || ", 200) + "true",
			strings.Repeat("(", 60) + "true" + strings.Repeat(")", 60),
		},
		".validate": {
			"newData.isString() && newData.val().length < 100",
			"newData.hasChildren(['name', 'age'])",
			"newData.val() > data.val() ? true : false",
		},
	} {
		for _, expr := range exprs {
			mustParse(t, exprRules(key, expr))
		}
	}
}

func TestRuleTreeErrors(t *testing.T) {
	tests := []struct {
		src          string
		line, column int
		msg          string
	}{
		{`{"rules": {".foo": true}}`, 1, 12, `Unknown rule type ".foo"`},
		{`{"rules": {"a": {".value": true}}}`, 1, 18, `Unknown rule type ".value"`},
		{`{"rules": {".read": 1}}`, 1, 21, "Expected true, false or an expression string for .read."},
		{`{"rules": {".write": null}}`, 1, 22, "for .write"},
		{`{"rules": {".validate": []}}`, 1, 25, "for .validate"},
		{`{"rules": {"a#b": {}}}`, 1, 12, `Invalid key "a#b"`},
		{`{"rules": {"": {}}}`, 1, 12, `Invalid key ""`},
		{`{"rules": {"a b": {}, "x.y": {}}}`, 1, 23, `Invalid key "x.y"`},
		{`{"rules": {"a$b": {}}}`, 1, 12, `Invalid key "a$b"`},
		{`{"rules": {"a\u0001": {}}}`, 1, 12, `Invalid key`},
		{`{"rules": {"` + strings.Repeat("k", 769) + `": {}}}`, 1, 12, `Invalid key`},
		{`{"rules": {"$": {}}}`, 1, 12, `Invalid wildcard "$"`},
		{`{"rules": {"$a": {}, "$b": {}}}`, 1, 22, `Only one wildcard is allowed per object: "$a" and "$b"`},
		{`{"rules": {"a": {"$x": {".read": "$y == 'a'"}}}}`, 1, 35, `Unknown variable '$y'.`},
		{`{"rules": {"$x": {}, "b": {".read": "$x == 'a'"}}}`, 1, 38, `Unknown variable '$x'.`},
		{`{"rules": {".indexOn": 5}}`, 1, 24, "Expected a string or an array of strings for .indexOn."},
		{`{"rules": {".indexOn": ["a", 5]}}`, 1, 30, "Invalid .indexOn entry"},
		{`{"rules": {".indexOn": [".key"]}}`, 1, 25, "Invalid .indexOn entry"},
		{`{"rules": {".indexOn": ""}}`, 1, 24, "Invalid .indexOn entry"},
		{`{"rules": {".indexOn": "a//b"}}`, 1, 24, "Invalid .indexOn entry"},
	}
	for _, tc := range tests {
		e := syntaxErr(t, tc.src)
		if e.Line != tc.line || e.Column != tc.column || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("Parse(%.60q) = %v; want line %d, column %d, containing %q", tc.src, e, tc.line, tc.column, tc.msg)
		}
	}
}

func TestRuleTreeDepth(t *testing.T) {
	nest := func(levels int) string {
		return `{"rules": ` + strings.Repeat(`{"a": `, levels) + `{".read": true}` + strings.Repeat("}", levels) + "}"
	}
	r := mustParse(t, nest(32))
	path := p(strings.Repeat("a/", 32))
	if !r.CanRead(path, &Env{}) {
		t.Error("rule at depth 32 not applied")
	}
	e := syntaxErr(t, nest(33))
	if !strings.Contains(e.Msg, "nested too deeply (limit 32") {
		t.Errorf("got %v", e)
	}
}

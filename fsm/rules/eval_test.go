package rules

import (
	"encoding/json"
	"strings"
	"testing"
)

const evalData = `{
	"a": {"b": {"name": "Ann", "age": 30, "email": "ann@example.com", "tags": {"x": true}}},
	"users": {"u1": {"admin": true, "name": "Al"}, "u2": {"admin": false}},
	"n": 5, "s": "Hello", "t": true,
	"p": {".value": 3, ".priority": 7},
	"ps": {".priority": "pri", "k": 1},
	"big": "` + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + `"
}`

// writeRuleHolds evaluates expr as the .write rule of a/$x for a write to
// a/b that renames Ann to Bob.
func writeRuleHolds(t *testing.T, expr string, auth any) bool {
	t.Helper()
	q, _ := json.Marshal(expr)
	r := mustParse(t, `{"rules": {"a": {"$x": {".write": `+string(q)+`}}}}`)
	root := tree(t, evalData)
	env := &Env{Auth: auth, Now: 1700000000000, Root: root, NewRoot: set(root, "a/b/name", "Bob")}
	return r.CanWrite([][]string{p("a/b")}, env)
}

func TestEvalExpressions(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		// literals and operators
		{"true", true},
		{"false", false},
		{"1 + 2 == 3", true},
		{"7 % 4 == 3", true},
		{"-7 % 4 == -3", true},
		{"-(2) * 3 == -6", true},
		{"10 / 4 == 2.5", true},
		{"1 / 0 > 1e308", true},
		{"1 + 2 * 3 == 7", true},
		{"(1 + 2) * 3 == 9", true},
		{"10 - 2 - 3 == 5", true},
		{"true || false && false", true},
		{"!true || true", true},
		{"!!true", true},
		{"1 == 1.0", true},
		{"1 == '1'", false},
		{"1 != '1'", true},
		{"true == 'true'", false},
		{"null == null", true},
		{"null === null", true},
		{"1 === 1 && 1 !== 2", true},
		{"'abc' < 'abd' && 'b' > 'a' && 'a' <= 'a' && 'b' >= 'a'", true},
		{"2 >= 2 && 1 < 2 && !(2 < 1)", true},
		{"'\uffff' < '\U0001F600'", false}, // UTF-16 order, as JavaScript
		{"true ? true : false", true},
		{"false ? false : true", true},
		{"1 < 2 ? 'x' == 'x' : false", true},
		{"'a' + 'b' == 'ab'", true},
		{"'n' + 1 == 'n1'", true},
		{"1 + 'n' == '1n'", true},
		{"'x' + 0.5 == 'x0.5'", true},
		{"'x' + 1e21 == 'x1e+21'", true},
		{"'x' + 1e-7 == 'x1e-7'", true},
		{"'x' + -3 == 'x-3'", true},
		{`"dq" == 'dq'`, true},
		{`'it\'s' == "it's"`, true},
		{`'a\nb'.length == 3`, true},
		{`'\u0041' == 'A'`, true},
		// snapshots
		{"data.child('name').val() == 'Ann'", true},
		{"newData.child('name').val() == 'Bob'", true},
		{"data.child('age').val() >= 18", true},
		{"data.child('age').isNumber() && !data.child('age').isString()", true},
		{"data.child('name').isString()", true},
		{"data.child('tags/x').isBoolean()", true},
		{"data.child('tags').child('x').val() === true", true},
		{"data.hasChild('tags/x')", true},
		{"!data.hasChild('nope')", true},
		{"data.hasChildren()", true},
		{"!data.child('name').hasChildren()", true},
		{"data.hasChildren(['name', 'age'])", true},
		{"!data.hasChildren(['name', 'zzz'])", true},
		{"data.hasChildren([])", true},
		{"!data.child('zz').hasChildren([])", true},
		{"data.exists()", true},
		{"!data.child('zz').exists()", true},
		{"data.parent().parent().child('n').val() == 5", true},
		{"root.parent().val() == null", true},
		{"!root.parent().parent().exists()", true},
		{"!root.parent().child('a').exists()", true},
		{"root.child('p').getPriority() == 7 && root.child('p').val() == 3", true},
		{"root.child('ps').getPriority() == 'pri'", true},
		{"root.child('n').getPriority() == null", true},
		{"root.child('users/' + 'u1' + '/admin').val() == true", true},
		{"root.child('users').child('u2').child('admin').val() == false", true},
		{"root.child('a//b/').exists()", true},
		{"root.child('').child('n').val() == 5", true},
		{"data.val() != null", true},
		{"data.val() == null", false},
		{"$x == 'b'", true},
		{"data.child('name').val().length == 3", true},
		{"newData.parent().child('b/name').val() == 'Bob'", true},
		{"newData.parent().parent().child('a/b/name').val() == 'Bob'", true},
		{"data.parent().child('b/name').val() == 'Ann'", true},
		{"root.child('s').val().toLowerCase() == 'hello'", true},
		// strings
		{"'Hello'.length == 5", true},
		{"'héllo😀'.length == 7", true},
		{"'hello'.contains('ell')", true},
		{"!'hello'.contains('xyz')", true},
		{"'hello'.beginsWith('he') && 'hello'.endsWith('lo')", true},
		{"'a-b-c'.replace('-', '+') == 'a+b+c'", true},
		{"'abc'.replace('', '-') == '-a-b-c-'", true},
		{"'AbC'.toLowerCase() == 'abc'", true},
		{"'abc'.toUpperCase() == 'ABC'", true},
		{"'abc'.matches(/^[a-z]+$/)", true},
		{"'ABC'.matches(/^[a-z]+$/i)", true},
		{"!'ABC'.matches(/^[a-z]+$/)", true},
		{`'a/b'.matches(/a\/b/)`, true},
		{"'x/y'.matches(/[/]/)", true},
		{"'2024-01-31'.matches(/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/)", true},
		{"data.child('email').val().matches(/^[^@]+@example[.]com$/)", true},
		{"'abc'['length'] == 3", true},
		// auth
		{"auth != null", true},
		{"auth.uid == 'u1'", true},
		{"auth.token.email.endsWith('@example.com')", true},
		{"auth.token.admin === true", true},
		{"auth.token.missing == null", true},
		{"auth['uid'] == 'u1'", true},
		{"auth.token['admin'] == true", true},
		{"auth.uid.length == 2", true},
		{"auth.provider == 'password'", true},
		// now
		{"now == 1700000000000", true},
		{"now > 0 && now < 2e12", true},
		// runtime errors make the rule false
		{"auth.nope.deeper == null", false},
		{"!(auth.nope.deeper == null)", false},
		{"data.val().name == 'Ann'", false},
		{"data.val() == data.val()", false},
		{"data.child('name').val() > 1", false},
		{"data.child('zz').val() > 5", false},
		{"!(data.child('zz').val() > 5)", false},
		{"data.child('a.b').exists()", false},
		{"!data.child('a.b').exists()", false},
		{"data.child('name').val()", false},
		{"data.val()", false},
		{"data.child('age').val().length == 2", false},
		{"data.child('age').val().contains('3')", false},
		{"data.child('name').val() - 1 == 0", false},
		{"root.child('t').val() || true", true},  // short-circuit on a real boolean
		{"root.child('n').val() || true", false}, // a non-boolean operand is an error
		{"data.child('zz').val() ? true : true", false},
		{"auth.uid + auth.token.missing == 'u1'", false},
	}
	for _, tc := range tests {
		if got := writeRuleHolds(t, tc.expr, uid1); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestEvalSignedOut(t *testing.T) {
	for expr, want := range map[string]bool{
		"auth == null":                       true,
		"auth.uid == 'u1'":                   false,
		"auth != null && auth.uid == 'u1'":   false,
		"auth == null || auth.uid == 'u1'":   true,
		"!(auth != null && auth.uid == 'x')": true,
	} {
		if got := writeRuleHolds(t, expr, nil); got != want {
			t.Errorf("signed out: %s = %v, want %v", expr, got, want)
		}
	}
}

func TestEvalAuthShapes(t *testing.T) {
	auth := map[string]any{
		"uid": "u1",
		"token": map[string]any{
			"firebase": map[string]any{"identities": map[string]any{"email": []any{"a@b.c"}}},
			"roles":    []any{"editor", "viewer"},
			"level":    3,
			"odd":      struct{}{},
		},
	}
	tests := map[string]bool{
		"auth.token.firebase.identities['email'][0] == 'a@b.c'": true,
		"auth.token.roles.length == 2":                          true,
		"auth.token.roles[1] == 'viewer'":                       true,
		"auth.token.roles['1'] == 'viewer'":                     true,
		"auth.token.roles[5] == null":                           true,
		"auth.token.roles[0.5] == null":                         false,
		"auth.token.level == 3":                                 true,
		"auth.token.odd == null":                                false,
		"auth.token.roles == null":                              false,
		"auth.token != null":                                    true,
		"data.hasChildren(auth.token.roles)":                    false,
	}
	for expr, want := range tests {
		if got := writeRuleHolds(t, expr, auth); got != want {
			t.Errorf("%s = %v, want %v", expr, got, want)
		}
	}
}

func TestEvalStringCaps(t *testing.T) {
	// 'big' is 64 bytes; each replace multiplies it by 100: two stay under
	// 1 MiB, the third would build 64 MB and fails instead.
	grow := ".replace('x', '" + strings.Repeat("x", 100) + "')"
	base := "root.child('big').val()"
	if !writeRuleHolds(t, base+grow+grow+".length == 640000", uid1) {
		t.Error("a 640 KB string was refused")
	}
	if writeRuleHolds(t, base+grow+grow+grow+".length > 0", uid1) {
		t.Error("a string over 1 MiB was built")
	}
	// Concatenation is capped too.
	cat := base + grow + grow
	if writeRuleHolds(t, "("+cat+" + "+cat+").length > 0", uid1) {
		t.Error("concatenation over 1 MiB was allowed")
	}
	if got, err := replaceAll(strings.Repeat("a", 1024), "a", strings.Repeat("b", 2048)); err == nil {
		t.Errorf("replace built %d bytes", len(got.s))
	}
	if _, err := replaceAll("abc", "b", "xyz"); err != nil {
		t.Errorf("small replace failed: %v", err)
	}
}

func TestEvalBudget(t *testing.T) {
	// Each term scans 900 KiB (3,600 steps); 90 of them exceed the budget
	// before the final `true` is reached, and exhaustion denies outright.
	big := strings.Repeat("z", 900*1024)
	root := val0(map[string]any{"big": big})
	var terms []string
	for range 90 {
		terms = append(terms, "root.child('big').val().contains('q')")
	}
	src := `{"rules": {".read": "` + strings.Join(terms, " || ") + ` || true"}}`
	r := mustParse(t, src)
	if r.CanRead(nil, &Env{Root: root}) {
		t.Error("a rule over the step budget granted access")
	}
	small := val0(map[string]any{"big": "x"})
	if !r.CanRead(nil, &Env{Root: small}) {
		t.Error("the same rule on small data should pass")
	}
}

func TestJSNumber(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", 1: "1", -1.5: "-1.5", 1e21: "1e+21", 1e20: "100000000000000000000",
		1e-6: "0.000001", 1.5e-7: "1.5e-7", 123.456: "123.456", 2.5e300: "2.5e+300",
	} {
		if got := jsNumber(f); got != want {
			t.Errorf("jsNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	cases := []struct {
		a, b string
		sign int
	}{
		{"a", "b", -1}, {"b", "a", 1}, {"a", "a", 0}, {"a", "ab", -1},
		{"\uffff", "\U00010000", 1}, {"\ud7ff", "\U00010000", -1},
		{"\U00010000", "\U0010ffff", -1}, {"é", "e", 1},
	}
	for _, c := range cases {
		got := compareUTF16(c.a, c.b)
		if (got < 0 && c.sign >= 0) || (got > 0 && c.sign <= 0) || (got == 0 && c.sign != 0) {
			t.Errorf("compareUTF16(%q, %q) = %d, want sign %d", c.a, c.b, got, c.sign)
		}
	}
}

package tree

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// checkPublicError fails unless err is a *PublicError with message msg
// whose sentinel is sentinel.
func checkPublicError(t *testing.T, err error, sentinel error, msg string) {
	t.Helper()
	var pe *PublicError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want a *PublicError %q", err, err, msg)
	}
	if pe.Message != msg {
		t.Errorf("message = %q\n want %q", pe.Message, msg)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error %q does not wrap %v", err, sentinel)
	}
}

func badKeyAt(line, col int) string { return fmt.Sprintf(badKeyMsgFormat, line, col) }

func TestParseBodyValues(t *testing.T) {
	tests := []struct {
		name, body    string
		plain, export string // export defaults to plain
	}{
		{"null", `null`, `null`, ""},
		{"empty object", `{}`, `null`, ""},
		{"empty array", `[]`, `null`, ""},
		{"whitespace", " \t\r\n true \n", `true`, ""},
		{"false", `false`, `false`, ""},
		{"zero", `0`, `0`, ""},
		{"minus zero int", `-0`, `0`, ""},
		{"int", `5`, `5`, ""},
		{"negative int", `-42`, `-42`, ""},
		{"max int64", `9223372036854775807`, `9223372036854775807`, ""},
		{"min int64", `-9223372036854775808`, `-9223372036854775808`, ""},
		{"int64 overflow is a double", `9223372036854775808`, `9223372036854776000.0`, ""},
		{"huge integer text", `123456789012345678901234`, `1.2345678901234569e+23`, ""},
		{"double", `5.5`, `5.5`, ""},
		{"integral double stays double", `5.0`, `5.0`, ""},
		{"exponent is a double", `1e3`, `1000.0`, ""},
		{"capital exponent", `1E+3`, `1000.0`, ""},
		{"small double", `-1.5e-7`, `-1.5e-7`, ""},
		{"big double", `1e21`, `1e+21`, ""},
		{"underflow is zero", `1e-400`, `0.0`, ""},
		{"minus zero double", `-0.0`, `-0.0`, ""},
		{"string", `"hello"`, `"hello"`, ""},
		{"escapes", `"a\"b\\c\/d\b\f\n\r\t"`, `"a\"b\\c/d\b\f\n\r\t"`, ""},
		{"control escape", `"\u0001\u001F"`, `"\u0001\u001f"`, ""},
		{"nul char", `"\u0000"`, `"\u0000"`, ""},
		{"unicode escape", `"\u00e9\u4E2D"`, `"é中"`, ""},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`, ""},
		{"raw utf8", `"é😀"`, `"é😀"`, ""},
		{"line separators", `"\u2028 \u2029"`, `"\u2028 \u2029"`, ""},
		{"html stays", `"<&>"`, `"<&>"`, ""},
		{"null member dropped", `{"a":1,"b":null}`, `{"a":1}`, ""},
		{"all null members prune", `{"a":null}`, `null`, ""},
		{"nested pruning", `{"a":{"b":{}},"c":[]}`, `null`, ""},
		{"partial pruning", `{"a":{"b":null,"c":1},"d":{"e":{}}}`, `{"a":{"c":1}}`, ""},
		{"key order", `{"b":1,"a":2,"10":3,"9":4,"-1":5}`, `{"-1":5,"9":4,"10":3,"a":2,"b":1}`, ""},
		{"utf16 key order", `{"\uffff":1,"😀":2}`, "{\"😀\":2,\"\uffff\":1}", ""},
		{"duplicate keys last wins", `{"a":1,"a":2}`, `{"a":2}`, ""},
		{"duplicate key null deletes", `{"a":1,"b":2,"a":null}`, `{"b":2}`, ""},
		{"duplicate key null prunes", `{"a":1,"a":null}`, `null`, ""},
		{"array", `[1,"two",true]`, `[1,"two",true]`, `{"0":1,"1":"two","2":true}`},
		{"array with nulls", `[1,null,3]`, `[1,null,3]`, `{"0":1,"2":3}`},
		{"array of nulls", `[null,null]`, `null`, ""},
		{"sparse array is an object", `[null,null,"x"]`, `{"2":"x"}`, ""},
		{"nested arrays", `[[1,2],[3]]`, `[[1,2],[3]]`, `{"0":{"0":1,"1":2},"1":{"0":3}}`},
		{"array in object", `{"a":[{"b":1}]}`, `{"a":[{"b":1}]}`, `{"a":{"0":{"b":1}}}`},
		{"priority on object", `{".priority":1,"a":1}`, `{"a":1}`, `{".priority":1,"a":1}`},
		{"string priority", `{"a":1,".priority":"p"}`, `{"a":1}`, `{".priority":"p","a":1}`},
		{"double priority", `{"a":1,".priority":2.5}`, `{"a":1}`, `{".priority":2.5,"a":1}`},
		{"null priority", `{".priority":null,"a":1}`, `{"a":1}`, ""},
		{"priority alone is null", `{".priority":1}`, `null`, ""},
		{"priority with null children", `{".priority":1,"a":null}`, `null`, ""},
		{"value with priority", `{".value":"x",".priority":"p"}`, `"x"`, `{".value":"x",".priority":"p"}`},
		{"value alone", `{".value":5}`, `5`, ""},
		{"null value", `{".value":null,".priority":1}`, `null`, ""},
		{"value with null sibling", `{".value":1,"a":null}`, `1`, ""},
		{"object value with priority", `{".value":{"a":1},".priority":3}`, `{"a":1}`, `{".priority":3,"a":1}`},
		{"nested value priority", `{"a":{".value":1,".priority":2}}`, `{"a":1}`, `{"a":{".value":1,".priority":2}}`},
		{"outer priority wins", `{".value":{"a":1,".priority":1},".priority":2}`, `{"a":1}`, `{".priority":2,"a":1}`},
		{"timestamp", `{".sv":"timestamp"}`, `{".sv":"timestamp"}`, ""},
		{"increment int", `{"a":{".sv":{"increment":5}}}`, `{"a":{".sv":{"increment":5}}}`, ""},
		{"increment double", `{".sv":{"increment":-1.5}}`, `{".sv":{"increment":-1.5}}`, ""},
		{"increment duplicate", `{".sv":{"increment":1,"increment":2}}`, `{".sv":{"increment":2}}`, ""},
		{"timestamp priority", `{".priority":{".sv":"timestamp"},"a":1}`, `{"a":1}`, `{".priority":{".sv":"timestamp"},"a":1}`},
		{"server value with priority", `{".value":{".sv":"timestamp"},".priority":1}`, `{".sv":"timestamp"}`, `{".value":{".sv":"timestamp"},".priority":1}`},
		{"key limit", `{"` + strings.Repeat("k", MaxKeyBytes) + `":1}`, `{"` + strings.Repeat("k", MaxKeyBytes) + `":1}`, ""},
		{"unicode key", `{"ключ é":1}`, `{"ключ é":1}`, ""},
		{"escaped key", `{"a\u0062":1}`, `{"ab":1}`, ""},
		{"spaces everywhere", "{ \"a\" : [ 1 , 2 ] , \"b\" : { } }", `{"a":[1,2]}`, `{"a":{"0":1,"1":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ParseBody([]byte(tt.body), MaxDepth)
			if err != nil {
				t.Fatalf("ParseBody(%s): %v", tt.body, err)
			}
			if got := string(AppendJSON(nil, n, RenderOptions{})); got != tt.plain {
				t.Errorf("plain = %s\n want %s", got, tt.plain)
			}
			want := tt.export
			if want == "" {
				want = tt.plain
			}
			if got := string(AppendJSON(nil, n, RenderOptions{Export: true})); got != want {
				t.Errorf("export = %s\n want %s", got, want)
			}
		})
	}
}

func TestParseBodyKinds(t *testing.T) {
	tests := []struct {
		body string
		kind Kind
	}{
		{`1`, KindInt}, {`1.0`, KindFloat}, {`1e2`, KindFloat}, {`9223372036854775808`, KindFloat},
		{`"1"`, KindString}, {`true`, KindBool}, {`{"a":1}`, KindObject}, {`[1]`, KindObject},
		{`{".sv":"timestamp"}`, KindTimestamp}, {`{".sv":{"increment":1}}`, KindIncrement}, {`null`, KindNull},
	}
	for _, tt := range tests {
		n, err := ParseBody([]byte(tt.body), MaxDepth)
		if err != nil {
			t.Fatalf("ParseBody(%s): %v", tt.body, err)
		}
		if n.Kind() != tt.kind {
			t.Errorf("ParseBody(%s).Kind() = %d, want %d", tt.body, n.Kind(), tt.kind)
		}
	}
	n, _ := ParseBody([]byte(`{"a":{".sv":{"increment":2}},"b":{".value":1,".priority":"x"}}`), MaxDepth)
	if !n.hasSV || n.Child("a").IncrementDelta().IntValue() != 2 {
		t.Errorf("increment placeholder not marked or delta lost")
	}
	if p := n.Child("b").Priority(); p.Kind() != KindString || p.StringValue() != "x" {
		t.Errorf("priority of b = %v", p)
	}
}

func TestParseBodyErrors(t *testing.T) {
	tooLongKey := strings.Repeat("k", MaxKeyBytes+1)
	tests := []struct {
		name, body string
		sentinel   error
		msg        string
	}{
		{"empty", ``, ErrInvalidData, MsgInvalidJSON},
		{"blank", " \n\t", ErrInvalidData, MsgInvalidJSON},
		{"word", `dddd`, ErrInvalidData, MsgInvalidJSON},
		{"bad literal", `nul`, ErrInvalidData, MsgInvalidJSON},
		{"bad literal suffix", `truex`, ErrInvalidData, MsgInvalidJSON},
		{"leading zero", `01`, ErrInvalidData, MsgInvalidJSON},
		{"plus", `+1`, ErrInvalidData, MsgInvalidJSON},
		{"trailing dot", `1.`, ErrInvalidData, MsgInvalidJSON},
		{"leading dot", `.5`, ErrInvalidData, MsgInvalidJSON},
		{"empty exponent", `1e`, ErrInvalidData, MsgInvalidJSON},
		{"lone minus", `-`, ErrInvalidData, MsgInvalidJSON},
		{"NaN", `NaN`, ErrInvalidData, MsgInvalidJSON},
		{"Infinity", `-Infinity`, ErrInvalidData, MsgInvalidJSON},
		{"hex", `0x10`, ErrInvalidData, MsgInvalidJSON},
		{"overflow", `1e999`, ErrInvalidData, MsgInvalidJSON},
		{"negative overflow", `{"a":-1e400}`, ErrInvalidData, MsgInvalidJSON},
		{"trailing comma array", `[1,]`, ErrInvalidData, MsgInvalidJSON},
		{"trailing comma object", `{"a":1,}`, ErrInvalidData, MsgInvalidJSON},
		{"missing colon", `{"a" 1}`, ErrInvalidData, MsgInvalidJSON},
		{"bare key", `{a:1}`, ErrInvalidData, MsgInvalidJSON},
		{"single quotes", `'a'`, ErrInvalidData, MsgInvalidJSON},
		{"unterminated string", `"abc`, ErrInvalidData, MsgInvalidJSON},
		{"unterminated escape", `"abc\`, ErrInvalidData, MsgInvalidJSON},
		{"unknown escape", `"\x41"`, ErrInvalidData, MsgInvalidJSON},
		{"short unicode escape", `"\u12"`, ErrInvalidData, MsgInvalidJSON},
		{"bad hex", `"\u12g4"`, ErrInvalidData, MsgInvalidJSON},
		{"raw tab", "\"a\tb\"", ErrInvalidData, MsgInvalidJSON},
		{"raw newline", "\"a\nb\"", ErrInvalidData, MsgInvalidJSON},
		{"missing comma", `[1 2]`, ErrInvalidData, MsgInvalidJSON},
		{"two values", `1 2`, ErrInvalidData, MsgInvalidJSON},
		{"extra brace", `{"a":1}}`, ErrInvalidData, MsgInvalidJSON},
		{"unclosed object", `{"a":1`, ErrInvalidData, MsgInvalidJSON},
		{"unclosed array", `[1`, ErrInvalidData, MsgInvalidJSON},
		{"BOM", "\xef\xbb\xbf1", ErrInvalidData, MsgInvalidJSON},
		{"invalid utf8", "\"\xff\"", ErrInvalidData, MsgInvalidJSON},
		{"truncated utf8", "\"\xc3\"", ErrInvalidData, MsgInvalidJSON},
		{"utf8 surrogate", "\"\xed\xa0\x80\"", ErrInvalidData, MsgInvalidJSON},
		{"invalid utf8 after escape", "\"\\n\xff\"", ErrInvalidData, MsgInvalidJSON},
		{"invalid utf8 in key", "{\"\xfe\":1}", ErrInvalidData, MsgInvalidJSON},
		{"invalid utf8 outside", "[1,\xff]", ErrInvalidData, MsgInvalidJSON},
		{"lone high surrogate", `"\ud800"`, ErrInvalidData, MsgInvalidJSON},
		{"lone low surrogate", `"\udc00"`, ErrInvalidData, MsgInvalidJSON},
		{"high then letter", `"\ud800\u0041"`, ErrInvalidData, MsgInvalidJSON},
		{"high then text", `"\ud800x"`, ErrInvalidData, MsgInvalidJSON},
		{"empty key", `{"":1}`, ErrInvalidData, badKeyAt(1, 2)},
		{"dot key", `{"a.b":1}`, ErrInvalidData, badKeyAt(1, 2)},
		{"dollar key", `{"a":{"$b":1}}`, ErrInvalidData, badKeyAt(1, 7)},
		{"hash key", `{"#":1}`, ErrInvalidData, badKeyAt(1, 2)},
		{"bracket keys", `{"ok":1,"[":1}`, ErrInvalidData, badKeyAt(1, 9)},
		{"close bracket key", `{"]":1}`, ErrInvalidData, badKeyAt(1, 2)},
		{"slash key", "{\"a\":1,\n  \"b/c\": 2}", ErrInvalidData, badKeyAt(2, 3)},
		{"control key", `{"\u0001":1}`, ErrInvalidData, badKeyAt(1, 2)},
		{"del key", `{"\u007f":1}`, ErrInvalidData, badKeyAt(1, 2)},
		{"escaped slash key", `{"a\/b":1}`, ErrInvalidData, badKeyAt(1, 2)},
		{"unknown pseudo key", `{".foo":1}`, ErrInvalidData, badKeyAt(1, 2)},
		{"bad key even when null", `{"a.b":null}`, ErrInvalidData, badKeyAt(1, 2)},
		{"bad key in array", "[\n{\"ok\":1},\n {\"x\":{\"y#\":1}}]", ErrInvalidData, badKeyAt(3, 8)},
		{"column counts characters", `{"é😀":{"x.y":1}}`, ErrInvalidData, badKeyAt(1, 8)},
		{"crlf lines", "{\r\n\"$\":1}", ErrInvalidData, badKeyAt(2, 1)},
		{"key too long", `{"` + tooLongKey + `":1}`, ErrInvalidPath, MsgPathTooLong},
		{"bad priority bool", `{".priority":true,"a":1}`, ErrInvalidData, msgBadPriority},
		{"bad priority object", `{".priority":{"a":1},"a":1}`, ErrInvalidData, msgBadPriority},
		{"bad priority empty object", `{".priority":{},"a":1}`, ErrInvalidData, msgBadPriority},
		{"bad priority array", `{".priority":[1],"a":1}`, ErrInvalidData, msgBadPriority},
		{"bad priority increment", `{".priority":{".sv":{"increment":1}},"a":1}`, ErrInvalidData, msgBadPriority},
		{"bad priority value wrapper", `{".priority":{".value":1},"a":1}`, ErrInvalidData, msgBadPriority},
		{"priority syntax", `{".priority":tru,"a":1}`, ErrInvalidData, MsgInvalidJSON},
		{"value with children", `{".value":1,"a":2}`, ErrInvalidData, msgValueSiblings},
		{"children then value", `{"a":2,".value":1}`, ErrInvalidData, msgValueSiblings},
		{"unknown sv string", `{".sv":"now"}`, ErrInvalidData, MsgUnknownSV},
		{"sv with sibling", `{".sv":"timestamp","a":1}`, ErrInvalidData, MsgUnknownSV},
		{"sv after sibling", `{"a":null,".sv":"timestamp"}`, ErrInvalidData, MsgUnknownSV},
		{"sv with priority", `{".sv":"timestamp",".priority":1}`, ErrInvalidData, MsgUnknownSV},
		{"sv with value", `{".value":1,".sv":"timestamp"}`, ErrInvalidData, MsgUnknownSV},
		{"increment string", `{".sv":{"increment":"1"}}`, ErrInvalidData, MsgUnknownSV},
		{"increment other key", `{".sv":{"incr":1}}`, ErrInvalidData, MsgUnknownSV},
		{"increment extra key", `{".sv":{"increment":1,"x":2}}`, ErrInvalidData, MsgUnknownSV},
		{"sv empty object", `{".sv":{}}`, ErrInvalidData, MsgUnknownSV},
		{"sv null", `{".sv":null}`, ErrInvalidData, MsgUnknownSV},
		{"sv number", `{".sv":1}`, ErrInvalidData, MsgUnknownSV},
		{"sv array", `{".sv":["timestamp"]}`, ErrInvalidData, MsgUnknownSV},
		{"sv syntax", `{".sv":tru}`, ErrInvalidData, MsgInvalidJSON},
		{"sv object syntax", `{".sv":{"increment":1,}}`, ErrInvalidData, MsgInvalidJSON},
		{"increment overflow", `{".sv":{"increment":1e999}}`, ErrInvalidData, MsgInvalidJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ParseBody([]byte(tt.body), MaxDepth)
			if err == nil {
				t.Fatalf("ParseBody(%q) = %s, want error %q", tt.body, AppendJSON(nil, n, RenderOptions{Export: true}), tt.msg)
			}
			if n != nil {
				t.Errorf("ParseBody returned a node with its error")
			}
			checkPublicError(t, err, tt.sentinel, tt.msg)
		})
	}
}

func TestParseBodyStringLimit(t *testing.T) {
	atLimit := `"` + strings.Repeat("s", MaxStringLen) + `"`
	n, err := ParseBody([]byte(atLimit), MaxDepth)
	if err != nil || len(n.StringValue()) != MaxStringLen {
		t.Fatalf("string of MaxStringLen bytes: %v", err)
	}
	over := `{"a":"` + strings.Repeat("s", MaxStringLen) + `\n"}`
	_, err = ParseBody([]byte(over), MaxDepth)
	checkPublicError(t, err, ErrTooLarge, MsgWriteTooBig)
}

func TestParseBodyDepth(t *testing.T) {
	nested := func(open, leaf, closer string, levels int) string {
		return strings.Repeat(open, levels) + leaf + strings.Repeat(closer, levels)
	}
	tests := []struct {
		name     string
		body     string
		maxDepth int
		ok       bool
	}{
		{"primitive at 0", `1`, 0, true},
		{"null at 0", `null`, 0, true},
		{"primitive below 0", `1`, -1, false},
		{"object at 0", `{"a":1}`, 0, false},
		{"server value at 0", `{".sv":"timestamp"}`, 0, true},
		{"value wrapper at 0", `{".value":1,".priority":1}`, 0, true},
		{"two levels", `{"a":{"b":1}}`, 2, true},
		{"three levels", `{"a":{"b":{"c":1}}}`, 2, false},
		{"null too deep", `{"a":{"b":{"c":null}}}`, 2, false},
		{"array levels", `[[1]]`, 2, true},
		{"array too deep", `[[[1]]]`, 2, false},
		{"value wrapper adds no level", `{"a":{".value":{"b":1}}}`, 2, true},
		{"max depth", nested(`{"a":`, `1`, `}`, MaxDepth), MaxDepth, true},
		{"max depth plus one", nested(`{"a":`, `1`, `}`, MaxDepth+1), MaxDepth, false},
		{"1000 objects", nested(`{"a":`, `1`, `}`, 1000), MaxDepth, false},
		{"1000 arrays", nested(`[`, `1`, `]`, 1000), MaxDepth, false},
		{"100000 open brackets", strings.Repeat(`[`, 100000), MaxDepth, false},
		{"100000 value wrappers", strings.Repeat(`{".value":`, 100000), MaxDepth, false},
		{"100000 priorities", strings.Repeat(`{".priority":`, 100000), MaxDepth, false},
		{"100000 server values", strings.Repeat(`{".sv":`, 100000), MaxDepth, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := ParseBody([]byte(tt.body), tt.maxDepth)
			if tt.ok {
				if err != nil {
					t.Fatalf("ParseBody: %v", err)
				}
				return
			}
			checkPublicError(t, err, ErrInvalidPath, MsgPathTooLong)
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v to refuse", d)
			}
		})
	}
}

func TestParseUpdate(t *testing.T) {
	type field struct{ path, value string }
	tests := []struct {
		name, body string
		want       []field
	}{
		{"empty", `{}`, []field{}},
		{"fields in order", `{"b":1,"a/c":{"d":[1,2]},"e":null}`,
			[]field{{"/b", `1`}, {"/a/c", `{"d":[1,2]}`}, {"/e", `null`}}},
		{"empty segments dropped", `{"/a//b/":1}`, []field{{"/a/b", `1`}}},
		{"priority field", `{"a/.priority":5,".priority":"p"}`, []field{{"/a/.priority", `5`}, {"/.priority", `"p"`}}},
		{"null priority field", `{"a/.priority":null}`, []field{{"/a/.priority", `null`}}},
		{"timestamp priority field", `{"a/.priority":{".sv":"timestamp"}}`, []field{{"/a/.priority", `{".sv":"timestamp"}`}}},
		{"server values", `{"n":{".sv":{"increment":1}}}`, []field{{"/n", `{".sv":{"increment":1}}`}}},
		{"siblings", `{"a/b":1,"a/c":2,"ab":3,"a/bc":4}`,
			[]field{{"/a/b", `1`}, {"/a/c", `2`}, {"/ab", `3`}, {"/a/bc", `4`}}},
		{"escaped name", `{"a\u002Fb":1}`, []field{{"/a/b", `1`}}},
		{"pruned value", `{"a":{"b":null}}`, []field{{"/a", `null`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields, err := ParseUpdate([]byte(tt.body), MaxDepth)
			if err != nil {
				t.Fatalf("ParseUpdate: %v", err)
			}
			if fields == nil {
				t.Fatalf("ParseUpdate returned nil fields for an object")
			}
			got := make([]field, len(fields))
			for i, f := range fields {
				got[i] = field{f.Path.String(), string(AppendJSON(nil, f.Value, RenderOptions{}))}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("fields = %v\n want %v", got, tt.want)
			}
		})
	}
}

func TestParseUpdateNull(t *testing.T) {
	for _, body := range []string{`null`, " null\n"} {
		fields, err := ParseUpdate([]byte(body), MaxDepth)
		if err != nil || fields != nil {
			t.Errorf("ParseUpdate(%q) = %v, %v; want nil, nil", body, fields, err)
		}
	}
}

func TestParseUpdateErrors(t *testing.T) {
	deepName := strings.Repeat("a/", MaxDepth+5) + "z"
	tests := []struct {
		name, body string
		maxDepth   int
		sentinel   error
		msg        string
	}{
		{"number", `1`, MaxDepth, ErrInvalidData, msgPatchNotObject},
		{"string", `"x"`, MaxDepth, ErrInvalidData, msgPatchNotObject},
		{"array", `[{"a":1}]`, MaxDepth, ErrInvalidData, msgPatchNotObject},
		{"bool", `true`, MaxDepth, ErrInvalidData, msgPatchNotObject},
		{"not json", `nul`, MaxDepth, ErrInvalidData, MsgInvalidJSON},
		{"empty", ``, MaxDepth, ErrInvalidData, MsgInvalidJSON},
		{"unclosed", `{"a":1`, MaxDepth, ErrInvalidData, MsgInvalidJSON},
		{"trailing", `{"a":1} x`, MaxDepth, ErrInvalidData, MsgInvalidJSON},
		{"non-object then garbage", `1 x`, MaxDepth, ErrInvalidData, MsgInvalidJSON},
		{"empty name", `{"":1}`, MaxDepth, ErrInvalidData, badKeyAt(1, 2)},
		{"slash name", `{"a":1, "/":1}`, MaxDepth, ErrInvalidData, badKeyAt(1, 9)},
		{"bad segment", "{\"a\":1,\n \"b/c.d\":2}", MaxDepth, ErrInvalidData, badKeyAt(2, 2)},
		{"priority not last", `{"a/.priority/b":1}`, MaxDepth, ErrInvalidData, badKeyAt(1, 2)},
		{"value pseudo key", `{"a/.value":1}`, MaxDepth, ErrInvalidData, badKeyAt(1, 2)},
		{"bad key in value", `{"a":{"b$":1}}`, MaxDepth, ErrInvalidData, badKeyAt(1, 7)},
		{"bad priority", `{"a/.priority":true}`, MaxDepth, ErrInvalidData, msgBadPriority},
		{"segment too long", `{"a/` + strings.Repeat("x", MaxKeyBytes+1) + `":1}`, MaxDepth, ErrInvalidPath, MsgPathTooLong},
		{"too many segments", `{"` + deepName + `":1}`, MaxDepth, ErrInvalidPath, MsgPathTooLong},
		{"value too deep", `{"a/b":{"c":1}}`, 2, ErrInvalidPath, MsgPathTooLong},
		{"delete too deep", `{"a/b/c":null}`, 2, ErrInvalidPath, MsgPathTooLong},
		{"priority too deep", `{"a/b/c/.priority":1}`, 2, ErrInvalidPath, MsgPathTooLong},
		{"overlap", `{"a":1,"a/b":2}`, MaxDepth, ErrInvalidData, fmt.Sprintf(msgPatchOverlap, "/a", "/a/b")},
		{"overlap reversed", `{"x/y/z":1,"q":1,"x/y":2}`, MaxDepth, ErrInvalidData, fmt.Sprintf(msgPatchOverlap, "/x/y", "/x/y/z")},
		{"same path", `{"a/b":1,"/a/b/":2}`, MaxDepth, ErrInvalidData, fmt.Sprintf(msgPatchOverlap, "/a/b", "/a/b")},
		{"priority overlap", `{"a":1,"a/.priority":2}`, MaxDepth, ErrInvalidData, fmt.Sprintf(msgPatchOverlap, "/a", "/a/.priority")},
		{"root priority overlap", `{".priority":1,"z/.priority":2,"z":1}`, MaxDepth, ErrInvalidData, fmt.Sprintf(msgPatchOverlap, "/z", "/z/.priority")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields, err := ParseUpdate([]byte(tt.body), tt.maxDepth)
			if err == nil {
				t.Fatalf("ParseUpdate(%q) = %v, want error %q", tt.body, fields, tt.msg)
			}
			checkPublicError(t, err, tt.sentinel, tt.msg)
		})
	}
}

func TestParseUpdateDepthBudget(t *testing.T) {
	// A field two keys deep leaves maxDepth-2 levels for its value.
	if _, err := ParseUpdate([]byte(`{"a/b":{"c":{"d":1}}}`), 4); err != nil {
		t.Fatalf("value within budget: %v", err)
	}
	_, err := ParseUpdate([]byte(`{"a/b":{"c":{"d":{"e":1}}}}`), 4)
	checkPublicError(t, err, ErrInvalidPath, MsgPathTooLong)
}

func TestParseBodyDoesNotAliasInput(t *testing.T) {
	data := []byte(`{"key":"value","esc":"a\nb"}`)
	n, err := ParseBody(data, MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = 'x'
	}
	if got := string(AppendJSON(nil, n, RenderOptions{})); got != `{"esc":"a\nb","key":"value"}` {
		t.Errorf("after overwriting the input: %s", got)
	}
}

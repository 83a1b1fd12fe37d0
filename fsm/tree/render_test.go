package tree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

func mustParseBody(t testing.TB, body string) *Node {
	t.Helper()
	n, err := ParseBody([]byte(body), MaxDepth)
	if err != nil {
		t.Fatalf("ParseBody(%s): %v", body, err)
	}
	return n
}

func TestRenderArrayRule(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"single index 1", `{"1":"x"}`, `[null,"x"]`},
		{"single index 0", `{"0":"x"}`, `["x"]`},
		{"single index 2", `{"2":"x"}`, `{"2":"x"}`},
		{"boundary: 3 keys, max 4", `{"0":"a","2":"c","4":"e"}`, `["a",null,"c",null,"e"]`},
		{"boundary: 3 keys, max 5", `{"0":"a","2":"c","5":"e"}`, `["a",null,"c",null,null,"e"]`},
		{"boundary: 3 keys, max 6", `{"0":"a","2":"c","6":"e"}`, `{"0":"a","2":"c","6":"e"}`},
		{"blog example", `{"2":"c","4":"e"}`, `{"2":"c","4":"e"}`},
		{"half full", `{"1":1,"2":2}`, `[null,1,2]`},
		{"leading zero", `{"0":1,"01":2}`, `{"0":1,"01":2}`},
		{"only leading zero", `{"00":1}`, `{"00":1}`},
		{"negative", `{"-1":1,"0":2}`, `{"-1":1,"0":2}`},
		{"minus zero", `{"-0":1}`, `{"-0":1}`},
		{"mixed keys", `{"0":1,"a":2}`, `{"0":1,"a":2}`},
		{"decimal key", `{"0":1,"1":2,"1 ":3}`, `{"0":1,"1":2,"1 ":3}`},
		{"beyond int32", `{"0":1,"2147483648":2}`, `{"0":1,"2147483648":2}`},
		{"nested", `{"a":{"0":{"0":1,"1":{"b":[true]}}}}`, `{"a":[[1,{"b":[true]}]]}`},
		{"object inside array", `[{"0":1,"x":2}]`, `[{"0":1,"x":2}]`},
		{"ten elements sort numerically", `[0,1,2,3,4,5,6,7,8,9,10]`, `[0,1,2,3,4,5,6,7,8,9,10]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := mustParseBody(t, tt.body)
			if got := string(AppendJSON(nil, n, RenderOptions{})); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// Export never renders arrays.
			if got := AppendJSON(nil, n, RenderOptions{Export: true}); bytes.Contains(got, []byte("[")) {
				t.Errorf("export rendered an array: %s", got)
			}
		})
	}
}

func TestRenderNumbers(t *testing.T) {
	tests := []struct {
		n    *Node
		want string
	}{
		{Int(0), `0`},
		{Int(-7), `-7`},
		{Int(math.MaxInt64), `9223372036854775807`},
		{Int(math.MinInt64), `-9223372036854775808`},
		{Float(5), `5.0`},
		{Float(0), `0.0`},
		{Float(math.Copysign(0, -1)), `-0.0`},
		{Float(-3), `-3.0`},
		{Float(0.1), `0.1`},
		{Float(123.456), `123.456`},
		{Float(1e20), `100000000000000000000.0`},
		{Float(1e21), `1e+21`},
		{Float(1e-6), `0.000001`},
		{Float(1e-7), `1e-7`},
		{Float(-2.5e-10), `-2.5e-10`},
		{Float(1.5e300), `1.5e+300`},
		{Float(math.MaxFloat64), `1.7976931348623157e+308`},
		{Float(5e-324), `5e-324`},
		{Float(1 << 63), `9223372036854776000.0`},
		{Float(math.NaN()), `null`},
		{Float(math.Inf(-1)), `null`},
	}
	for _, tt := range tests {
		got := string(AppendJSON(nil, tt.n, RenderOptions{}))
		if got != tt.want {
			t.Errorf("render(%v) = %s, want %s", tt.n.float(), got, tt.want)
			continue
		}
		if tt.want == "null" {
			continue
		}
		// The text parses back to the same kind and value.
		back := mustParseBody(t, got)
		if back.Kind() != tt.n.Kind() || !back.Equal(tt.n) {
			t.Errorf("%s parsed back as kind %d value %v", got, back.Kind(), back)
		}
	}
}

func TestRenderStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`q"b\s/`, `"q\"b\\s/"`},
		{"\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"\x7f", "\"\x7f\""},
		{"<&>", `"<&>"`},
		{"é中😀", `"é中😀"`},
		{"a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"bad\xffutf8\xc3", `"bad\ufffdutf8\ufffd"`},
	}
	for _, tt := range tests {
		if got := string(AppendJSON(nil, String(tt.in), RenderOptions{})); got != tt.want {
			t.Errorf("render(%q) = %s, want %s", tt.in, got, tt.want)
		}
		var back string
		if err := json.Unmarshal([]byte(tt.want), &back); err != nil {
			t.Errorf("%s is not JSON: %v", tt.want, err)
		}
	}
}

func TestRenderExport(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"a":{".value":1,".priority":"p"},".priority":2}`, `{".priority":2,"a":{".value":1,".priority":"p"}}`},
		{`{".value":true,".priority":1.5}`, `{".value":true,".priority":1.5}`},
		{`[1,{".value":"x",".priority":0}]`, `{"0":1,"1":{".value":"x",".priority":0}}`},
		{`{"a":{".priority":1,"0":"z"}}`, `{"a":{".priority":1,"0":"z"}}`},
	}
	for _, tt := range tests {
		n := mustParseBody(t, tt.body)
		if got := string(AppendJSON(nil, n, RenderOptions{Export: true})); got != tt.want {
			t.Errorf("export(%s)\n got %s\nwant %s", tt.body, got, tt.want)
		}
		// Without export the priorities disappear.
		if got := AppendJSON(nil, n, RenderOptions{}); bytes.Contains(got, []byte(".priority")) {
			t.Errorf("plain render kept a priority: %s", got)
		}
	}
}

func TestRenderPretty(t *testing.T) {
	tests := []struct {
		name, body string
		export     bool
		want       string
	}{
		{"null", `null`, false, `null`},
		{"leaf", `"x"`, false, `"x"`},
		{"object", `{"a":1,"b":{"c":[1,2]},"d":"x"}`, false, `{
  "a" : 1,
  "b" : {
    "c" : [
      1,
      2
    ]
  },
  "d" : "x"
}`},
		{"array with gap", `{"1":true}`, false, `[
  null,
  true
]`},
		{"export priorities", `{".priority":1,"a":{".value":"x",".priority":2}}`, true, `{
  ".priority" : 1,
  "a" : {
    ".value" : "x",
    ".priority" : 2
  }
}`},
		{"server values", `{"t":{".sv":"timestamp"},"n":{".sv":{"increment":1}}}`, false, `{
  "n" : {
    ".sv" : {
      "increment" : 1
    }
  },
  "t" : {
    ".sv" : "timestamp"
  }
}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := mustParseBody(t, tt.body)
			got := AppendJSON(nil, n, RenderOptions{Pretty: true, Export: tt.export})
			if string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			checkPrettyMatchesCompact(t, n, RenderOptions{Export: tt.export})
		})
	}
}

// checkPrettyMatchesCompact requires the pretty form of n to be valid JSON
// that compacts to exactly the compact form.
func checkPrettyMatchesCompact(t testing.TB, n *Node, o RenderOptions) {
	t.Helper()
	compactForm := AppendJSON(nil, n, o)
	o.Pretty = true
	pretty := AppendJSON(nil, n, o)
	var buf bytes.Buffer
	if err := json.Compact(&buf, pretty); err != nil {
		t.Fatalf("pretty output is not JSON: %v\n%s", err, pretty)
	}
	if !bytes.Equal(buf.Bytes(), compactForm) {
		t.Fatalf("pretty compacts to\n%s\nbut compact is\n%s", buf.Bytes(), compactForm)
	}
}

func TestRenderShallow(t *testing.T) {
	tests := []struct {
		name, body string
		o          RenderOptions
		want       string
	}{
		{"null", `null`, RenderOptions{}, `null`},
		{"primitive", `5.0`, RenderOptions{}, `5.0`},
		{"string", `"s"`, RenderOptions{}, `"s"`},
		{"export leaf", `{".value":1,".priority":2}`, RenderOptions{Export: true}, `{".value":1,".priority":2}`},
		{"object", `{"b":{"c":1},"a":2,"1":3}`, RenderOptions{}, `{"1":true,"a":true,"b":true}`},
		{"no array rule", `[1,2]`, RenderOptions{}, `{"0":true,"1":true}`},
		{"pretty", `{"a":{"b":1},"c":2}`, RenderOptions{Pretty: true}, "{\n  \"a\" : true,\n  \"c\" : true\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := mustParseBody(t, tt.body)
			if got := string(AppendShallow(nil, n, tt.o)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRenderAppendsToDst(t *testing.T) {
	n := mustParseBody(t, `{"a":[1,2]}`)
	dst := []byte("prefix:")
	if got := string(AppendJSON(dst, n, RenderOptions{})); got != `prefix:{"a":[1,2]}` {
		t.Errorf("AppendJSON = %s", got)
	}
	if got := string(AppendShallow(dst, n, RenderOptions{})); got != `prefix:{"a":true}` {
		t.Errorf("AppendShallow = %s", got)
	}
}

// TestRenderIsValidJSON checks every rendering of a varied document with
// encoding/json, and the export round trip.
func TestRenderIsValidJSON(t *testing.T) {
	doc := benchDocument(40)
	n := mustParseBody(t, string(doc))
	for _, o := range []RenderOptions{{}, {Export: true}, {Pretty: true}, {Pretty: true, Export: true}} {
		out := AppendJSON(nil, n, o)
		if !json.Valid(out) {
			t.Errorf("%+v: invalid JSON", o)
		}
		if !json.Valid(AppendShallow(nil, n, o)) {
			t.Errorf("%+v: invalid shallow JSON", o)
		}
	}
	checkPrettyMatchesCompact(t, n, RenderOptions{})
	checkPrettyMatchesCompact(t, n, RenderOptions{Export: true})
	exported := AppendJSON(nil, n, RenderOptions{Export: true})
	back := mustParseBody(t, string(exported))
	if !back.Equal(n) {
		t.Errorf("export round trip changed the tree")
	}
}

func TestRenderAllocations(t *testing.T) {
	n := mustParseBody(t, string(benchDocument(20)))
	buf := make([]byte, 0, 1<<20)
	allocs := testing.AllocsPerRun(20, func() {
		buf = AppendJSON(buf[:0], n, RenderOptions{})
	})
	// The walk itself must not allocate per node; a few closures at most.
	if allocs > 0 {
		t.Errorf("AppendJSON into a large enough buffer: %.0f allocations", allocs)
	}
}

// benchDocument builds a deterministic JSON document of about users ×
// 390 bytes: objects, arrays, ints, doubles, strings with escapes and
// unicode, booleans and priorities.
func benchDocument(users int) []byte {
	var b strings.Builder
	b.WriteString(`{"users":{`)
	for i := range users {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"user%04d":{".priority":%d,"name":"User Number %d","email":"user%d@example.com",`, i, i%7, i, i)
		fmt.Fprintf(&b, `"age":%d,"score":%g,"active":%t,"bio":"Line one\nLine \"two\" — ünïcødé ✓ %d",`, 18+i%60, float64(i)*1.25+0.5, i%2 == 0, i)
		fmt.Fprintf(&b, `"tags":["alpha","beta","gamma%d"],"address":{"street":"%d Main St","city":"Springfield","zip":"%05d"},`, i%5, i, i*7%100000)
		fmt.Fprintf(&b, `"history":[{"at":%d,"v":%d.5},{"at":%d,"v":-%d}],"rank":{".value":%d,".priority":"r%d"}}`, 1700000000000+i, i, 1700000001000+i, i, i, i)
	}
	b.WriteString(`},"config":{"version":3,"ratio":0.75,"flags":[true,false,null,true]}}`)
	return []byte(b.String())
}

func BenchmarkParseBody(b *testing.B) {
	doc := benchDocument(260) // ~100 KB
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseBody(doc, MaxDepth); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	doc := benchDocument(260) // ~100 KB
	n, err := ParseBody(doc, MaxDepth)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		o    RenderOptions
	}{{"compact", RenderOptions{}}, {"export", RenderOptions{Export: true}}, {"pretty", RenderOptions{Pretty: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := AppendJSON(nil, n, bc.o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendJSON(buf[:0], n, bc.o)
			}
		})
	}
}

// TestIsArrayIndexIsTheIntegerKeyRule checks the array rule's own reading
// of a key against the key order's: a key is an array index exactly when
// it is an integer key (parseInt32Key), non-negative, without a sign or a
// leading zero, and below 2 × count.
func TestIsArrayIndexIsTheIntegerKeyRule(t *testing.T) {
	keys := []string{"", "0", "00", "01", "1", "-0", "-1", "+1", " 1", "1 ", "12a", "a1", "7", "10",
		"2147483646", "2147483647", "2147483648", "4294967296", "9999999999", "99999999999", "0000000001", "٣"}
	for _, k := range keys {
		for _, count := range []int{1, 5, 6, 1 << 30, 1 << 31} {
			v, isInt := parseInt32Key(k)
			want := isInt && v >= 0 && int64(v) < 2*int64(count) && k[0] != '-' && (len(k) == 1 || k[0] != '0')
			if got := isArrayIndex(k, count); got != want {
				t.Errorf("isArrayIndex(%q, %d) = %v, want %v", k, count, got, want)
			}
			if want && arrayIndex(k) != int(v) {
				t.Errorf("arrayIndex(%q) = %d, want %d", k, arrayIndex(k), v)
			}
		}
	}
}

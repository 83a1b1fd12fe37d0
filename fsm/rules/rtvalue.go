package rules

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// vkind is the runtime type of an expression value.
type vkind uint8

const (
	vNull vkind = iota
	vBool
	vNum
	vStr
	vObj  // val() of a node with children: an opaque sentinel, as in Firebase
	vMap  // a JSON object inside auth
	vArr  // a JSON array inside auth
	vSnap // a RuleDataSnapshot
)

// val is a runtime value. Only the fields of its kind are meaningful.
type val struct {
	k  vkind
	b  bool
	n  float64
	s  string
	m  map[string]any
	a  []any
	sn *snap
}

func boolVal(b bool) val    { return val{k: vBool, b: b} }
func numVal(f float64) val  { return val{k: vNum, n: f} }
func strVal(s string) val   { return val{k: vStr, s: s} }
func snapVal(s *snap) val   { return val{k: vSnap, sn: s} }
func (v val) isValue() bool { return v.k <= vArr }

// fromGo converts a JSON-decoded Go value (auth, query parameters) to a
// val. Integer types are accepted too, since callers may build auth by
// hand; anything else is a runtime error.
func fromGo(x any) (val, bool) {
	switch t := x.(type) {
	case nil:
		return val{}, true
	case bool:
		return boolVal(t), true
	case float64:
		return numVal(t), true
	case float32:
		return numVal(float64(t)), true
	case int:
		return numVal(float64(t)), true
	case int64:
		return numVal(float64(t)), true
	case int32:
		return numVal(float64(t)), true
	case uint64:
		return numVal(float64(t)), true
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		return numVal(f), err == nil
	case string:
		return strVal(t), true
	case map[string]any:
		if t == nil {
			return val{}, true
		}
		return val{k: vMap, m: t}, true
	case []any:
		return val{k: vArr, a: t}, true
	}
	return val{}, false
}

// fromNode is val() of a data node.
func fromNode(v Value) val {
	switch v.Kind() {
	case Bool:
		return boolVal(v.Bool())
	case Number:
		return numVal(v.Number())
	case String:
		return strVal(v.Str())
	case Object:
		return val{k: vObj}
	}
	return val{}
}

// equal is == and ===: the rules never coerce, so values of different
// types are unequal. Composite values cannot be compared by content without
// unbounded work, and identity is not stable across replicas, so comparing
// one with anything but null is an error.
func equal(a, b val) (bool, bool) {
	if a.k == vNull || b.k == vNull {
		return a.k == b.k, true
	}
	if a.k >= vObj || b.k >= vObj {
		return false, false
	}
	if a.k != b.k {
		return false, true
	}
	switch a.k {
	case vBool:
		return a.b == b.b, true
	case vNum:
		return a.n == b.n, true
	}
	return a.s == b.s, true
}

// compareUTF16 orders strings by UTF-16 code units, as JavaScript does
// (byte order differs for characters above U+FFFF versus U+E000–U+FFFF).
func compareUTF16(a, b string) int {
	for i, j := 0, 0; ; {
		if i >= len(a) || j >= len(b) {
			return (len(a) - i) - (len(b) - j) // sign only matters
		}
		if a[i] < utf8.RuneSelf && b[j] < utf8.RuneSelf {
			if a[i] != b[j] {
				return int(a[i]) - int(b[j])
			}
			i++
			j++
			continue
		}
		ra, na := utf8.DecodeRuneInString(a[i:])
		rb, nb := utf8.DecodeRuneInString(b[j:])
		if ra != rb {
			return utf16Lead(ra) - utf16Lead(rb)
		}
		i += na
		j += nb
	}
}

// utf16Lead maps r to a key that sorts like r's UTF-16 encoding: BMP
// characters by value, supplementary ones between U+D7FF and U+E000 (where
// their surrogates fall), in code point order among themselves.
func utf16Lead(r rune) int {
	if r < 0x10000 {
		return int(r) << 10
	}
	r -= 0x10000
	return (0xD800+int(r>>10))<<10 | int(r&0x3FF)
}

// utf16Len is a string's JavaScript length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// jsNumber formats f as JavaScript's String(f) does, so that string
// concatenation produces the text a Firebase user expects ("1", not "1e+00").
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	abs := math.Abs(f)
	if abs >= 1e21 || abs < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes e-07 and e+21; JavaScript drops the exponent's zeros.
		if k := strings.IndexByte(s, 'e'); k >= 0 && k+2 < len(s) {
			exp := strings.TrimLeft(s[k+2:], "0")
			if exp == "" {
				exp = "0"
			}
			s = s[:k+2] + exp
		}
		return s
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

package tree

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the JSON text of n to dst and returns the extended
// buffer. Children come in Firebase key order; nil is null.
//
// Unless o.Export, priorities are left out, and an object whose keys are
// all canonical non-negative integers (^(0|[1-9][0-9]*)$) with the largest
// < 2 × the number of keys is written as an array with null in the gaps
// (SPEC §1), at every level. With o.Export, a leaf with a priority is
// written {".value":v,".priority":p}, an object with one gets ".priority"
// as its first member, and no array is ever written, so the output parses
// back (ParseBody) into the same tree.
//
// Integers are written in decimal. Doubles are written as encoding/json
// does (the shortest text that round-trips; exponent form below 1e-6 and
// from 1e21 on), except that a double with an integral value gets ".0"
// appended when its text has no '.', 'e' or 'E': 5.0 reads back "5.0", so
// the integer/double distinction (SPEC §1) survives a round trip. A
// non-finite double, which no write can produce, is written as null to keep
// the output JSON.
//
// Strings keep their UTF-8 as is; quote, backslash and control characters
// are escaped, and so are U+2028 and U+2029 (JavaScript line terminators).
// Server-value placeholders of an unresolved body are written back as the
// {".sv": …} objects they came from.
//
// o.Pretty indents by two spaces, one member or element per line, in the
// Firebase style "key" : value, with no trailing newline.
func AppendJSON(dst []byte, n *Node, o RenderOptions) []byte {
	return appendNode(dst, n, o, 0)
}

// AppendShallow appends the shallow form of n (SPEC §3 shallow=true): an
// object becomes an object of its keys each mapped to true (never an
// array); anything else is written as AppendJSON writes it.
func AppendShallow(dst []byte, n *Node, o RenderOptions) []byte {
	if n.Kind() != KindObject {
		return appendNode(dst, n, o, 0)
	}
	dst = append(dst, '{')
	first := true
	n.obj.children.Scan(func(e entry) bool {
		dst = appendMemberKey(dst, e.key, first, o.Pretty, 1)
		dst = append(dst, "true"...)
		first = false
		dst = o.spill.check(dst)
		return o.spill.ok()
	})
	return closeBlock(dst, '}', o.Pretty, 0)
}

// appendNode writes n whose first line is indented at level.
func appendNode(dst []byte, n *Node, o RenderOptions, level int) []byte {
	if n == nil {
		return append(dst, "null"...)
	}
	if n.kind == KindObject {
		if !o.Export {
			if isArray(n) {
				return appendArray(dst, n, o, level)
			}
		}
		return appendObject(dst, n, o, level)
	}
	if o.Export && n.prio != nil {
		dst = append(dst, '{')
		dst = appendMemberKey(dst, ".value", true, o.Pretty, level+1)
		dst = appendLeaf(dst, n, o.Pretty, level+1)
		dst = appendMemberKey(dst, ".priority", false, o.Pretty, level+1)
		dst = appendLeaf(dst, n.prio, o.Pretty, level+1)
		return closeBlock(dst, '}', o.Pretty, level)
	}
	return appendLeaf(dst, n, o.Pretty, level)
}

func appendObject(dst []byte, n *Node, o RenderOptions, level int) []byte {
	dst = append(dst, '{')
	first := true
	if o.Export && n.prio != nil {
		dst = appendMemberKey(dst, ".priority", true, o.Pretty, level+1)
		dst = appendLeaf(dst, n.prio, o.Pretty, level+1)
		first = false
	}
	n.obj.children.Scan(func(e entry) bool {
		dst = appendMemberKey(dst, e.key, first, o.Pretty, level+1)
		dst = appendNode(dst, e.node, o, level+1)
		first = false
		dst = o.spill.check(dst)
		return o.spill.ok()
	})
	return closeBlock(dst, '}', o.Pretty, level)
}

// isArray reports whether object n is rendered as an array. Integer keys
// sort first and numerically, so when the last key is a canonical index
// below 2 × count, every key is an int32; one more pass rules out negative
// keys and leading zeros.
func isArray(n *Node) bool {
	count := n.obj.children.Len()
	last, _ := n.obj.children.Max()
	if !isArrayIndex(last.key, count) {
		return false
	}
	ok := true
	n.obj.children.Scan(func(e entry) bool {
		ok = isArrayIndex(e.key, count)
		return ok
	})
	return ok
}

// isArrayIndex reports whether key is a canonical non-negative integer
// key (a 32-bit one, without leading zeros) below 2 × count.
func isArrayIndex(key string, count int) bool {
	v, ok := canonicalIndex(key)
	return ok && int64(v) < 2*int64(count)
}

// arrayIndex is the index that an array's key (isArrayIndex) names.
func arrayIndex(key string) int {
	v, _ := canonicalIndex(key)
	return v
}

// canonicalIndex reads key as a canonical non-negative integer key: digits
// only, no leading zero but in "0", at most math.MaxInt32. Every such key
// is an integer key in the key order (parseInt32Key), and it is written
// out here rather than parsed by it because rendering asks it of every
// element of every array.
func canonicalIndex(key string) (int, bool) {
	if len(key) == 0 || len(key) > 10 || (key[0] == '0' && len(key) > 1) {
		return 0, false
	}
	v := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, v <= math.MaxInt32
}

// appendArray writes an object that isArray approves, with null in the gaps.
func appendArray(dst []byte, n *Node, o RenderOptions, level int) []byte {
	dst = append(dst, '[')
	next := 0
	n.obj.children.Scan(func(e entry) bool {
		for i := arrayIndex(e.key); next < i; next++ {
			dst = appendElementStart(dst, next == 0, o.Pretty, level+1)
			dst = append(dst, "null"...)
		}
		dst = appendElementStart(dst, next == 0, o.Pretty, level+1)
		dst = appendNode(dst, e.node, o, level+1)
		next++
		dst = o.spill.check(dst)
		return o.spill.ok()
	})
	return closeBlock(dst, ']', o.Pretty, level)
}

// appendLeaf writes a leaf's value (its priority is the caller's business).
func appendLeaf(dst []byte, n *Node, pretty bool, level int) []byte {
	switch n.kind {
	case KindBool:
		if n.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case KindInt:
		return strconv.AppendInt(dst, n.i, 10)
	case KindFloat:
		return appendFloat(dst, n.float())
	case KindString:
		return AppendQuoted(dst, n.s)
	case KindTimestamp:
		dst = append(dst, '{')
		dst = appendMemberKey(dst, ".sv", true, pretty, level+1)
		dst = append(dst, `"timestamp"`...)
		return closeBlock(dst, '}', pretty, level)
	case KindIncrement:
		dst = append(dst, '{')
		dst = appendMemberKey(dst, ".sv", true, pretty, level+1)
		dst = append(dst, '{')
		dst = appendMemberKey(dst, "increment", true, pretty, level+2)
		dst = appendLeaf(dst, n.IncrementDelta(), pretty, level+2)
		dst = closeBlock(dst, '}', pretty, level+1)
		return closeBlock(dst, '}', pretty, level)
	}
	return append(dst, "null"...)
}

// appendFloat writes a double like encoding/json, plus ".0" on an
// integral value so that it parses back as a double.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(dst, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Shorten e-07 to e-7, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
		return dst
	}
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

// appendMemberKey writes the separator before an object member at level,
// its quoted key and the colon.
func appendMemberKey(dst []byte, key string, first, pretty bool, level int) []byte {
	dst = appendElementStart(dst, first, pretty, level)
	dst = AppendQuoted(dst, key)
	if pretty {
		return append(dst, " : "...)
	}
	return append(dst, ':')
}

// appendElementStart writes the separator before a member or element.
func appendElementStart(dst []byte, first, pretty bool, level int) []byte {
	if !first {
		dst = append(dst, ',')
	}
	if pretty {
		dst = appendIndent(dst, level)
	}
	return dst
}

// closeBlock ends an object or array opened at level.
func closeBlock(dst []byte, closer byte, pretty bool, level int) []byte {
	if pretty {
		dst = appendIndent(dst, level)
	}
	return append(dst, closer)
}

func appendIndent(dst []byte, level int) []byte {
	dst = append(dst, '\n')
	for range level {
		dst = append(dst, ' ', ' ')
	}
	return dst
}

// plainASCII marks the ASCII bytes a JSON string can hold unescaped.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendQuoted writes s as a JSON string. Invalid UTF-8 (which the parser
// never produces) becomes U+FFFD, as in encoding/json.
func AppendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFields appends a PATCH echo: an object whose member names are the
// submitted relative paths, in submission order, and whose values are the
// resolved values — null for the fields that deleted (SPEC §2).
func AppendFields(dst []byte, fields []Field, o RenderOptions) []byte {
	if len(fields) == 0 {
		return append(dst, "{}"...)
	}
	dst = append(dst, '{')
	for i, f := range fields {
		dst = appendMemberKey(dst, joinPath(f.Path), i == 0, o.Pretty, 1)
		dst = appendNode(dst, f.Value, o, 1)
	}
	return closeBlock(dst, '}', o.Pretty, 0)
}

package rules

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// strictJSON renders v as plain JSON (comments gone, members in source
// order), indented with two spaces like the Firebase console shows it.
func strictJSON(v *jval) []byte {
	var compact bytes.Buffer
	writeCompact(&compact, v)
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		// writeCompact emits valid JSON by construction; fall back to the
		// compact form rather than lose the rules.
		return compact.Bytes()
	}
	return out.Bytes()
}

func writeCompact(b *bytes.Buffer, v *jval) {
	switch v.kind {
	case jNull:
		b.WriteString("null")
	case jBool:
		if v.b {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case jNumber:
		b.WriteString(v.num)
	case jString:
		writeJSONString(b, v.str)
	case jObject:
		b.WriteByte('{')
		for i, m := range v.members {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, m.key)
			b.WriteByte(':')
			writeCompact(b, m.val)
		}
		b.WriteByte('}')
	case jArray:
		b.WriteByte('[')
		for i, e := range v.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCompact(b, e)
		}
		b.WriteByte(']')
	}
}

// writeJSONString quotes s, escaping only what JSON requires, so that
// operators such as && stay readable (encoding/json would write \u0026).
func writeJSONString(b *bytes.Buffer, s string) {
	const hexd = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b.WriteString(`\ufffd`)
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hexd[c>>4])
				b.WriteByte(hexd[c&0xF])
			} else {
				b.WriteByte(c)
			}
		}
		i++
	}
	b.WriteByte('"')
}

package rules

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits on the rules document. They keep Parse linear and its recursion
// shallow whatever a client uploads. MaxSourceBytes is the largest rules
// document Parse accepts, in bytes.
const (
	MaxSourceBytes = 1 << 20
	maxJSONDepth   = 64
)

// jkind is the type of a parsed JSON value.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jObject
	jArray
)

// jval is a JSON value of the rules document with its position, so later
// stages can report errors where they were written. Objects keep their
// members in source order, which StrictJSON reproduces.
type jval struct {
	kind    jkind
	pos     int // byte offset of the value's first character
	b       bool
	num     string // a number's literal text
	str     string // a string's decoded contents
	members []jmember
	elems   []*jval
}

// jmember is one key/value pair of a JSON object.
type jmember struct {
	key    string
	keyPos int // byte offset of the key's opening quote
	val    *jval
}

// jsonParser reads JSON extended with // and /* */ comments.
type jsonParser struct {
	src   []byte
	i     int
	depth int
}

// parseSource parses a whole rules document into a jval tree.
func parseSource(src []byte) (*jval, *SyntaxError) {
	if len(src) > MaxSourceBytes {
		return nil, errorAt(src, 0, "Rules are too large (limit %d bytes).", MaxSourceBytes)
	}
	if !utf8.Valid(src) {
		off := 0
		for off < len(src) {
			r, n := utf8.DecodeRune(src[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, errorAt(src, off, "Invalid UTF-8.")
	}
	p := &jsonParser{src: src}
	// Editors on some systems save a byte order mark; it carries no meaning.
	if bytes.HasPrefix(src, []byte("\uFEFF")) {
		p.i = 3
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.i < len(src) {
		return nil, p.errHere("Unexpected %s after the rules object.", p.describe())
	}
	return v, nil
}

func (p *jsonParser) errHere(format string, args ...any) *SyntaxError {
	return errorAt(p.src, p.i, format, args...)
}

// describe names the character at the cursor for an error message.
func (p *jsonParser) describe() string {
	if p.i >= len(p.src) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.src[p.i:])
	return strconv.QuoteRune(r)
}

// skipSpace skips whitespace and comments.
func (p *jsonParser) skipSpace() *SyntaxError {
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == '/' && p.i+1 < len(p.src) && p.src[p.i+1] == '/':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.i++
			}
		case c == '/' && p.i+1 < len(p.src) && p.src[p.i+1] == '*':
			end := bytes.Index(p.src[p.i+2:], []byte("*/"))
			if end < 0 {
				return p.errHere("Unterminated comment.")
			}
			p.i += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *jsonParser) value() (*jval, *SyntaxError) {
	if p.i >= len(p.src) {
		return nil, p.errHere("Unexpected end of input: expected a value.")
	}
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		pos := p.i
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return &jval{kind: jString, pos: pos, str: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c >= 'a' && c <= 'z':
		pos := p.i
		j := p.i
		for j < len(p.src) && p.src[j] >= 'a' && p.src[j] <= 'z' {
			j++
		}
		word := string(p.src[p.i:j])
		switch word {
		case "true", "false":
			p.i = j
			return &jval{kind: jBool, pos: pos, b: word == "true"}, nil
		case "null":
			p.i = j
			return &jval{kind: jNull, pos: pos}, nil
		}
	}
	return nil, p.errHere("Unexpected %s: expected a value.", p.describe())
}

func (p *jsonParser) enter() *SyntaxError {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.errHere("Rules are nested too deeply (limit %d levels).", maxJSONDepth)
	}
	return nil
}

func (p *jsonParser) object() (*jval, *SyntaxError) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	v := &jval{kind: jObject, pos: p.i}
	p.i++ // {
	seen := make(map[string]bool)
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		return v, nil
	}
	for {
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return nil, p.errHere("Unexpected %s: expected a quoted key.", p.describe())
		}
		keyPos := p.i
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, errorAt(p.src, keyPos, "Duplicate key %s.", strconv.Quote(key))
		}
		seen[key] = true
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return nil, p.errHere("Unexpected %s: expected ':'.", p.describe())
		}
		p.i++
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		v.members = append(v.members, jmember{key: key, keyPos: keyPos, val: val})
		done, err := p.afterItem('}')
		if err != nil {
			return nil, err
		}
		if done {
			return v, nil
		}
	}
}

func (p *jsonParser) array() (*jval, *SyntaxError) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	v := &jval{kind: jArray, pos: p.i}
	p.i++ // [
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.i < len(p.src) && p.src[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		e, err := p.value()
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, e)
		done, err := p.afterItem(']')
		if err != nil {
			return nil, err
		}
		if done {
			return v, nil
		}
	}
}

// afterItem consumes what follows an object member or array element: a
// ',' and the space after it (more items follow), or closer (done).
func (p *jsonParser) afterItem(closer byte) (done bool, err *SyntaxError) {
	if err := p.skipSpace(); err != nil {
		return false, err
	}
	switch {
	case p.i < len(p.src) && p.src[p.i] == ',':
		p.i++
		return false, p.skipSpace()
	case p.i < len(p.src) && p.src[p.i] == closer:
		p.i++
		return true, nil
	}
	return false, p.errHere("Unexpected %s: expected ',' or '%c'.", p.describe(), closer)
}

// number accepts exactly the JSON number grammar.
func (p *jsonParser) number() (*jval, *SyntaxError) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.src[p.i] == '-' {
		p.i++
	}
	intStart := p.i
	n := digits()
	if n == 0 || (n > 1 && p.src[intStart] == '0') {
		return nil, errorAt(p.src, start, "Invalid number.")
	}
	if p.i < len(p.src) && p.src[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.errHere("Invalid number.")
		}
	}
	if p.i < len(p.src) && (p.src[p.i] == 'e' || p.src[p.i] == 'E') {
		p.i++
		if p.i < len(p.src) && (p.src[p.i] == '+' || p.src[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errHere("Invalid number.")
		}
	}
	return &jval{kind: jNumber, pos: start, num: string(p.src[start:p.i])}, nil
}

// string decodes the JSON string literal at the cursor. The source is known
// to be valid UTF-8; lone surrogate escapes decode to U+FFFD.
func (p *jsonParser) string() (string, *SyntaxError) {
	start := p.i
	p.i++ // opening quote
	var b strings.Builder
	plain := p.i
	for {
		if p.i >= len(p.src) {
			return "", errorAt(p.src, start, "Unterminated string.")
		}
		c := p.src[p.i]
		switch {
		case c == '"':
			b.Write(p.src[plain:p.i])
			p.i++
			return b.String(), nil
		case c < 0x20:
			return "", p.errHere("Control character in string; use an escape sequence.")
		case c != '\\':
			p.i++
			continue
		}
		b.Write(p.src[plain:p.i])
		if p.i+1 >= len(p.src) {
			return "", errorAt(p.src, start, "Unterminated string.")
		}
		esc := p.src[p.i+1]
		p.i += 2
		switch esc {
		case '"', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := hex4(p.src, p.i)
			if r < 0 {
				return "", errorAt(p.src, p.i-2, "Invalid \\u escape.")
			}
			p.i += 4
			if utf16.IsSurrogate(rune(r)) && p.i+1 < len(p.src) && p.src[p.i] == '\\' && p.src[p.i+1] == 'u' {
				if r2 := hex4(p.src, p.i+2); r2 >= 0 {
					if dec := utf16.DecodeRune(rune(r), rune(r2)); dec != utf8.RuneError {
						b.WriteRune(dec)
						p.i += 6
						break
					}
				}
			}
			b.WriteRune(rune(r)) // a lone surrogate becomes U+FFFD
		default:
			return "", errorAt(p.src, p.i-2, "Invalid escape sequence.")
		}
		plain = p.i
	}
}

package tree

import (
	"strconv"
	"unicode/utf8"
)

// skipValue checks the syntax of one JSON value and moves past it.
func (p *parser) skipValue() error {
	p.skipWS()
	switch c := p.peek(); c {
	case '{', '[':
		return p.skipContainer(c)
	case '"':
		_, err := p.str()
		return err
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	default:
		if c == '-' || isDigit(c) {
			_, err := p.scanNumber()
			return err
		}
	}
	return errSyntax()
}

func (p *parser) skipContainer(open byte) error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++
	closer := byte(']')
	if open == '{' {
		closer = '}'
	}
	p.skipWS()
	if p.peek() == closer {
		p.pos++
		p.nest--
		return nil
	}
	for {
		if open == '{' {
			p.skipWS()
			if p.peek() != '"' {
				return errSyntax()
			}
			if _, err := p.str(); err != nil {
				return err
			}
			if err := p.expect(':'); err != nil {
				return err
			}
		}
		if err := p.skipValue(); err != nil {
			return err
		}
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case closer:
			p.pos++
			p.nest--
			return nil
		}
		return errSyntax()
	}
}

// scanNumber moves past a number of strict JSON grammar and reports
// whether it is an integer (no fraction, no exponent).
func (p *parser) scanNumber() (isInt bool, err error) {
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return false, errSyntax()
	}
	isInt = true
	if i < len(d) && d[i] == '.' {
		isInt = false
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return false, errSyntax()
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		isInt = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return false, errSyntax()
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	p.pos = i
	return isInt, nil
}

// number parses a number: an Int when its text is an integer that fits
// int64, otherwise a Float; a value beyond float64's range is refused.
func (p *parser) number() (*Node, error) {
	start := p.pos
	isInt, err := p.scanNumber()
	if err != nil {
		return nil, err
	}
	text := p.data[start:p.pos]
	if isInt {
		if v, ok := parseInt64(text); ok {
			return SharedInt(v), nil
		}
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		// The grammar was checked, so this is ErrRange: ±Inf is not a value.
		return nil, errSyntax()
	}
	return Float(f), nil
}

// parseInt64 converts the text of a JSON integer, reporting overflow.
func parseInt64(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		u = u*10 + uint64(c-'0') // 19 digits cannot overflow uint64
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// stringValue parses a string leaf, enforcing MaxStringLen.
func (p *parser) stringValue() (*Node, error) {
	s, err := p.str()
	if err != nil {
		return nil, err
	}
	if len(s) > MaxStringLen {
		return nil, Public(ErrTooLarge, MsgWriteTooBig)
	}
	return String(s), nil
}

// str decodes the string whose opening quote is at pos. It refuses raw
// control characters, invalid UTF-8, unknown escapes and lone surrogates.
func (p *parser) str() (string, error) {
	d := p.data
	start := p.pos + 1
	i := start
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(d[start:i]), nil
		case c == '\\':
			return p.strSlow(start, i)
		case c < 0x20:
			return "", errSyntax()
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				return "", errSyntax()
			}
			i += size
		}
	}
	return "", errSyntax()
}

// strSlow finishes a string that has escapes; d[start:i] is plain text.
func (p *parser) strSlow(start, i int) (string, error) {
	buf, end, err := unescape(append(p.scratch[:0], p.data[start:i]...), p.data, i)
	p.scratch = buf[:0]
	if err != nil {
		return "", err
	}
	p.pos = end
	return string(buf), nil
}

// unescape appends the decoded rest of a string, from d[i] to its closing
// quote, to buf and returns it with the offset after the quote.
func unescape(buf, d []byte, i int) ([]byte, int, error) {
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			return buf, i + 1, nil
		case c == '\\':
			if i+1 >= len(d) {
				return buf, 0, errSyntax()
			}
			e := d[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, n, ok := decodeUnicodeEscape(d[i:])
				if !ok {
					return buf, 0, errSyntax()
				}
				i += n
				buf = utf8.AppendRune(buf, r)
			default:
				return buf, 0, errSyntax()
			}
		case c < 0x20:
			return buf, 0, errSyntax()
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				return buf, 0, errSyntax()
			}
			buf = append(buf, d[i:i+size]...)
			i += size
		}
	}
	return buf, 0, errSyntax()
}

// decodeUnicodeEscape decodes the XXXX after a "\u", joining a surrogate
// pair "\uD8xx\uDCxx". It returns the rune and the bytes consumed; a lone
// surrogate is not ok.
func decodeUnicodeEscape(b []byte) (rune, int, bool) {
	r, ok := hex4(b)
	if !ok {
		return 0, 0, false
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, 0, false
	case r >= 0xD800 && r <= 0xDBFF:
		if len(b) < 10 || b[4] != '\\' || b[5] != 'u' {
			return 0, 0, false
		}
		lo, ok := hex4(b[6:])
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return 0, 0, false
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 10, true
	}
	return r, 4, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

package rules

import (
	"fmt"
	"unicode/utf8"
)

// SyntaxError is a problem found by Parse: malformed JSON, an invalid rule
// key or value, or an expression that does not parse or type-check. Line and
// Column are 1-based; Column counts characters, not bytes.
type SyntaxError struct {
	Line, Column int
	Msg          string
}

// Error formats the error the way the rules editor reports it.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("Line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// errorAt builds a SyntaxError for byte offset off of src. Line and column
// are derived only when an error occurs, so the happy path never pays for
// position bookkeeping.
func errorAt(src []byte, off int, format string, args ...any) *SyntaxError {
	if off > len(src) {
		off = len(src)
	}
	if off < 0 {
		off = 0
	}
	line, col := 1, 1
	for i := 0; i < off; {
		r, n := utf8.DecodeRune(src[i:])
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
		i += n
	}
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// stringOffset maps an offset into the decoded contents of the JSON string
// literal whose opening quote is at quote to an offset into src, so that an
// expression error points into the rules file. An escape sequence counts
// as the byte it decodes to (its first byte for multi-byte results), which
// is close enough for a human.
func stringOffset(src []byte, quote, decoded int) int {
	i := quote + 1
	for n := 0; n < decoded && i < len(src) && src[i] != '"'; {
		if src[i] != '\\' {
			i++
			n++
			continue
		}
		if i+1 < len(src) && src[i+1] == 'u' {
			r := rune(hex4(src, i+2))
			adv := 6
			if r >= 0xD800 && r < 0xDC00 && i+7 < len(src) && src[i+6] == '\\' && src[i+7] == 'u' {
				adv = 12
				r = 0x10000
			}
			width := utf8.RuneLen(r)
			if width < 1 {
				width = 3
			}
			if decoded-n < width {
				return i
			}
			n += width
			i += adv
			continue
		}
		i += 2
		n++
	}
	if i > len(src) {
		i = len(src)
	}
	return i
}

// hex4 decodes four hex digits at src[i:], or returns -1.
func hex4(src []byte, i int) int {
	if i+4 > len(src) {
		return -1
	}
	v := 0
	for _, c := range src[i : i+4] {
		d := hexDigit(c)
		if d < 0 {
			return -1
		}
		v = v<<4 | d
	}
	return v
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

package rules

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind classifies expression tokens.
type tokKind uint8

const (
	tEOF tokKind = iota
	tNum
	tStr
	tIdent
	tOp
	tRegex
)

// token is one lexeme of a rule expression. pos is its byte offset in the
// expression text.
type token struct {
	kind  tokKind
	pos   int
	text  string // identifier, operator, or regex source
	num   float64
	str   string // decoded string literal
	flags string // regex flags
}

// exprError is a problem at a byte offset of an expression; Parse turns it
// into a SyntaxError positioned in the rules file.
type exprError struct {
	pos int
	msg string
}

// lexer splits an expression into tokens on demand, because whether '/'
// starts a regular expression depends on where the parser is.
type lexer struct {
	s string
	i int
}

// operators in longest-first order so that "===" is not read as "==" "=".
var operators = []string{
	"===", "!==", "==", "!=", "<=", ">=", "&&", "||",
	"!", "<", ">", "+", "-", "*", "/", "%", "?", ":", "(", ")", "[", "]", ".", ",",
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9')
}

func (l *lexer) skipSpace() {
	for l.i < len(l.s) {
		switch l.s[l.i] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			l.i++
		default:
			return
		}
	}
}

// next returns the next token.
func (l *lexer) next() (token, *exprError) {
	l.skipSpace()
	if l.i >= len(l.s) {
		return token{kind: tEOF, pos: l.i}, nil
	}
	start := l.i
	c := l.s[l.i]
	switch {
	case isIdentStart(c):
		for l.i < len(l.s) && isIdentPart(l.s[l.i]) {
			l.i++
		}
		return token{kind: tIdent, pos: start, text: l.s[start:l.i]}, nil
	case c >= '0' && c <= '9', c == '.' && l.i+1 < len(l.s) && l.s[l.i+1] >= '0' && l.s[l.i+1] <= '9':
		return l.number()
	case c == '\'' || c == '"':
		return l.string()
	}
	for _, op := range operators {
		if strings.HasPrefix(l.s[l.i:], op) {
			l.i += len(op)
			return token{kind: tOp, pos: start, text: op}, nil
		}
	}
	switch c {
	case '=':
		return token{}, &exprError{start, "Unexpected '='; use '==' or '===' to compare."}
	case '&', '|':
		return token{}, &exprError{start, "Unexpected '" + string(c) + "'; bitwise operators are not supported."}
	}
	r, _ := utf8.DecodeRuneInString(l.s[l.i:])
	return token{}, &exprError{start, "Unexpected character " + strconv.QuoteRune(r) + "."}
}

func (l *lexer) number() (token, *exprError) {
	start := l.i
	digits := func() {
		for l.i < len(l.s) && l.s[l.i] >= '0' && l.s[l.i] <= '9' {
			l.i++
		}
	}
	digits()
	if l.i < len(l.s) && l.s[l.i] == '.' {
		l.i++
		digits()
	}
	if l.i < len(l.s) && (l.s[l.i] == 'e' || l.s[l.i] == 'E') {
		l.i++
		if l.i < len(l.s) && (l.s[l.i] == '+' || l.s[l.i] == '-') {
			l.i++
		}
		d := l.i
		digits()
		if l.i == d {
			return token{}, &exprError{start, "Invalid number."}
		}
	}
	if l.i < len(l.s) && isIdentPart(l.s[l.i]) {
		return token{}, &exprError{start, "Invalid number."}
	}
	f, err := strconv.ParseFloat(l.s[start:l.i], 64)
	if err != nil {
		// Only overflow gets here; JavaScript reads it as Infinity, but a
		// literal that large is certainly a mistake.
		return token{}, &exprError{start, "Number out of range."}
	}
	return token{kind: tNum, pos: start, num: f, text: l.s[start:l.i]}, nil
}

// string decodes a JavaScript string literal with its usual escapes.
func (l *lexer) string() (token, *exprError) {
	start := l.i
	quote := l.s[l.i]
	l.i++
	var b strings.Builder
	for {
		if l.i >= len(l.s) || l.s[l.i] == '\n' || l.s[l.i] == '\r' {
			return token{}, &exprError{start, "Unterminated string literal."}
		}
		c := l.s[l.i]
		if c == quote {
			l.i++
			return token{kind: tStr, pos: start, str: b.String()}, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			l.i++
			continue
		}
		if l.i+1 >= len(l.s) {
			return token{}, &exprError{start, "Unterminated string literal."}
		}
		esc := l.s[l.i+1]
		l.i += 2
		switch esc {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0':
			b.WriteByte(0)
		case 'x', 'u':
			n := 2
			if esc == 'u' {
				n = 4
			}
			v, ok := hexN(l.s, l.i, n)
			if !ok {
				return token{}, &exprError{l.i - 2, "Invalid escape sequence."}
			}
			l.i += n
			b.WriteRune(rune(v)) // surrogate halves become U+FFFD
		default:
			// JavaScript keeps the character of an unknown escape (\' \" \\ \/ …).
			r, size := utf8.DecodeRuneInString(l.s[l.i-1:])
			b.WriteRune(r)
			l.i += size - 1
		}
	}
}

func hexN(s string, i, n int) (int, bool) {
	if i+n > len(s) {
		return 0, false
	}
	v := 0
	for j := i; j < i+n; j++ {
		d := hexDigit(s[j])
		if d < 0 {
			return 0, false
		}
		v = v<<4 | d
	}
	return v, true
}

// maxRegexBytes bounds a regular expression's source; RE2 compiles in time
// and space linear in it, and matches in time linear in the input.
const maxRegexBytes = 1024

// regex reads a regular expression literal whose opening '/' is at pos: the
// parser calls it where an operand is expected.
func (l *lexer) regex(pos int) (token, *exprError) {
	l.i = pos + 1
	inClass := false
	for {
		if l.i >= len(l.s) || l.s[l.i] == '\n' || l.s[l.i] == '\r' {
			return token{}, &exprError{pos, "Unterminated regular expression."}
		}
		c := l.s[l.i]
		if c == '\\' {
			l.i += 2
			continue
		}
		if c == '[' {
			inClass = true
		} else if c == ']' {
			inClass = false
		} else if c == '/' && !inClass {
			break
		}
		l.i++
	}
	body := l.s[pos+1 : l.i]
	l.i++ // closing '/'
	fstart := l.i
	for l.i < len(l.s) && isIdentPart(l.s[l.i]) {
		l.i++
	}
	flags := l.s[fstart:l.i]
	if flags != "" && flags != "i" {
		return token{}, &exprError{fstart, "Unsupported regular expression flags '" + flags + "'; only 'i' is allowed."}
	}
	if body == "" {
		return token{}, &exprError{pos, "Empty regular expression."}
	}
	if len(body) > maxRegexBytes {
		return token{}, &exprError{pos, "Regular expression too long (limit 1024 bytes)."}
	}
	return token{kind: tRegex, pos: pos, text: body, flags: flags}, nil
}

package tree

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Messages of the 400s that SPEC §6 leaves to us ("a clear sentence").
const (
	msgBadPriority    = "Invalid data; .priority must be a string, a number, null or a timestamp server value"
	msgValueSiblings  = "Invalid data; an object with .value cannot have other children"
	msgPatchNotObject = "Invalid data; a PATCH body must be a JSON object"
	msgPatchOverlap   = "Invalid data; path %s overlaps path %s in the same update"
)

// ParseBody parses a request body into a node (nil for null, {} and objects
// that prune to nothing), following SPEC §1, §2 and §6: arrays become
// objects keyed "0", "1", …; integers that fit int64 stay integers; the
// pseudo-children .priority, .value and .sv are interpreted; every key is
// validated. A leaf k keys below the body's root has depth k, and any depth
// above maxDepth fails. Every error is a *PublicError carrying the exact
// client message.
//
// The parser is a single pass over data that builds nodes directly, so a
// body is never held twice (no map[string]any detour) and number texts keep
// their integer/double distinction. It fails at the first error in document
// order, and recursion is bounded by maxDepth, whatever the input.
func ParseBody(data []byte, maxDepth int) (*Node, error) {
	p := newParser(data, maxDepth)
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return n, nil
}

// ParseUpdate parses a PATCH body: an object whose member names are paths
// relative to the request path ("a/b"; empty segments are dropped, a final
// ".priority" segment addresses a priority) and whose values are parsed as by
// ParseBody with maxDepth reduced by the field path's length. The fields
// come back in document order; a nil Value deletes. A null body returns
// (nil, nil), meaning "delete the node"; {} returns an empty, non-nil slice.
// Two fields where one path equals or contains the other are refused.
func ParseUpdate(data []byte, maxDepth int) ([]Field, error) {
	p := newParser(data, maxDepth)
	p.skipWS()
	if p.peek() != '{' {
		// Not an object: tell a syntax error from a well-formed non-object.
		if err := p.skipValue(); err != nil {
			return nil, err
		}
		if err := p.end(); err != nil {
			return nil, err
		}
		if string(bytes.TrimSpace(data)) == "null" {
			return nil, nil
		}
		return nil, Public(ErrInvalidData, msgPatchNotObject)
	}
	fields, err := p.updateFields()
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if err := checkOverlaps(fields); err != nil {
		return nil, err
	}
	return fields, nil
}

// parser reads one JSON text from start to end; it only steps back to
// re-read an unrecognised server value for syntax.
type parser struct {
	data     []byte
	pos      int
	maxDepth int // deepest allowed level of keys below the body's root
	// nest counts open JSON containers. It is bounded apart from depth
	// because pseudo-children (.value, .priority, .sv) open containers
	// without adding a level, and must not allow unbounded recursion.
	nest    int
	nestMax int
	scratch []byte // reused for strings with escapes
}

func newParser(data []byte, maxDepth int) *parser {
	d := min(max(maxDepth, 0), 1<<16)
	// Each level may be wrapped in one {".value": …}, and a leaf or a
	// priority may be a server value two containers deep.
	return &parser{data: data, maxDepth: maxDepth, nestMax: 2*d + 8}
}

func errSyntax() error    { return Public(ErrInvalidData, MsgInvalidJSON) }
func errTooDeep() error   { return Public(ErrInvalidPath, MsgPathTooLong) }
func errUnknownSV() error { return Public(ErrInvalidData, MsgUnknownSV) }

// errBadKey reports a bad key whose opening quote is at offset at.
func (p *parser) errBadKey(at int) error {
	line, col := position(p.data, at)
	return Public(ErrInvalidData, fmt.Sprintf(badKeyMsgFormat, line, col))
}

// position converts a byte offset into a 1-based line and column, the
// column counted in characters (the text before at is valid UTF-8: the
// parser checked it on the way).
func position(data []byte, at int) (line, col int) {
	before := data[:at]
	line = 1 + bytes.Count(before, []byte{'\n'})
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[lineStart:]) + 1
}

func (p *parser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

func (p *parser) skipWS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// expect consumes c after optional whitespace.
func (p *parser) expect(c byte) error {
	p.skipWS()
	if p.peek() != c {
		return errSyntax()
	}
	p.pos++
	return nil
}

// end checks that only whitespace follows the value.
func (p *parser) end() error {
	p.skipWS()
	if p.pos != len(p.data) {
		return errSyntax()
	}
	return nil
}

func (p *parser) enter() error {
	p.nest++
	if p.nest > p.nestMax {
		return errTooDeep()
	}
	return nil
}

// literal consumes the keyword lit (true, false or null).
func (p *parser) literal(lit string) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
		return errSyntax()
	}
	p.pos += len(lit)
	return nil
}

// value parses any JSON value located depth keys below the body's root.
func (p *parser) value(depth int) (*Node, error) {
	if depth > p.maxDepth {
		return nil, errTooDeep()
	}
	p.skipWS()
	switch c := p.peek(); c {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		return p.stringValue()
	case 't':
		return literalNode(nodeTrue, p.literal("true"))
	case 'f':
		return literalNode(nodeFalse, p.literal("false"))
	case 'n':
		return nil, p.literal("null")
	default:
		if c == '-' || isDigit(c) {
			return p.number()
		}
	}
	return nil, errSyntax()
}

// Nodes are immutable, so every parsed boolean can share one leaf.
var (
	nodeTrue  = Bool(true)
	nodeFalse = Bool(false)
)

func literalNode(n *Node, err error) (*Node, error) {
	if err != nil {
		return nil, err
	}
	return n, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// ParseJSONString parses s as exactly one JSON string, with optional
// whitespace around it, with the escape and UTF-8 checks of bodies; false
// when s is anything else.
func ParseJSONString(s string) (string, bool) {
	p := newParser([]byte(s), 0)
	p.skipWS()
	if p.peek() != '"' {
		return "", false
	}
	v, err := p.str()
	if err != nil || p.end() != nil {
		return "", false
	}
	return v, true
}

// ParseScalarPrefix parses the JSON string, number, boolean or null at the
// start of s (after whitespace) as ParseBody would, and returns it with the
// rest of s after the whitespace that follows it. Objects and arrays are
// refused. A query's bounds are parsed with it, so a bound's number keeps
// its int/double kind and its strings get the body's checks.
func ParseScalarPrefix(s string) (*Node, string, error) {
	p := newParser([]byte(s), 0)
	p.skipWS()
	if c := p.peek(); c == '{' || c == '[' {
		return nil, "", errSyntax()
	}
	v, err := p.value(0)
	if err != nil {
		return nil, "", err
	}
	p.skipWS()
	return v, s[p.pos:], nil
}

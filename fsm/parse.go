package fsm

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// objectState collects what an object's members say before the object can
// be built: its pseudo-children decide what kind of node it becomes.
type objectState struct {
	b        *objectBuilder
	prio     *Node
	val      *Node
	sv       *Node
	hasPrio  bool
	hasValue bool
	hasSV    bool
	others   int // members other than .sv, null ones included
}

// object parses an object at depth: an ordinary object, a primitive with a
// priority ({".value": v, ".priority": p}) or a server value ({".sv": …}).
func (p *parser) object(depth int) (*Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	var st objectState
	p.skipWS()
	if p.peek() == '}' {
		p.pos++
		p.nest--
		return nil, nil
	}
	for {
		if err := p.member(depth, &st); err != nil {
			return nil, err
		}
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case '}':
			p.pos++
			p.nest--
			return st.build()
		}
		return nil, errSyntax()
	}
}

// member parses one "key": value of an object at depth into st.
func (p *parser) member(depth int, st *objectState) error {
	p.skipWS()
	if p.peek() != '"' {
		return errSyntax()
	}
	at := p.pos
	key, err := p.str()
	if err != nil {
		return err
	}
	if err := p.expect(':'); err != nil {
		return err
	}
	switch key {
	case ".priority":
		st.prio, err = p.priority(depth)
		st.hasPrio = true
		st.others++
	case ".value":
		st.val, err = p.value(depth)
		st.hasValue = true
		st.others++
	case ".sv":
		st.sv, err = p.serverValue()
		st.hasSV = true
	default:
		if err := p.checkKey(key, at); err != nil {
			return err
		}
		var child *Node
		if child, err = p.value(depth + 1); err != nil {
			return err
		}
		switch {
		case child != nil:
			if st.b == nil {
				st.b = newObjectBuilder()
			}
			st.b.set(key, child)
		case st.b != nil:
			// The last of duplicate keys wins, even when it is null.
			st.b.remove(key)
		}
		st.others++
	}
	return err
}

func (st *objectState) build() (*Node, error) {
	switch {
	case st.hasSV:
		if st.others > 0 {
			return nil, errUnknownSV()
		}
		return st.sv, nil
	case st.hasValue:
		if st.b != nil && st.b.children.Len() > 0 {
			return nil, Public(ErrInvalidData, msgValueSiblings)
		}
		if st.hasPrio {
			return st.val.WithPriority(st.prio), nil
		}
		return st.val, nil
	case st.b == nil:
		return nil, nil
	}
	return st.b.build(st.prio), nil
}

// remove deletes key from b, if present. It leaves hasSV as it was: a
// stale true only costs the resolver a walk.
func (b *objectBuilder) remove(key string) {
	if old, ok := b.children.Delete(entry{keyInfo: newKeyInfo(key)}); ok {
		b.sum = subLanes(b.sum, entryDigest(key, old.node))
		b.size -= entrySize(key, old.node)
	}
}

// checkKey validates a member name whose opening quote is at offset at.
func (p *parser) checkKey(key string, at int) error {
	if key == "" || hasBadKeyChar(key) {
		return p.errBadKey(at)
	}
	if len(key) > MaxKeyBytes {
		return errTooDeep()
	}
	return nil
}

// hasBadKeyChar reports whether k holds one of . $ # [ ] / or a control
// character (ValidKey without the length rule, which has its own message).
func hasBadKeyChar(k string) bool {
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '.', '$', '#', '[', ']', '/', 0x7f:
			return true
		default:
			if c < 0x20 {
				return true
			}
		}
	}
	return false
}

// array parses an array at depth into an object keyed by element index;
// null elements are dropped but keep their index.
func (p *parser) array(depth int) (*Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	p.skipWS()
	if p.peek() == ']' {
		p.pos++
		p.nest--
		return nil, nil
	}
	var b *objectBuilder
	for i := 0; ; i++ {
		child, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if child != nil {
			if b == nil {
				b = newObjectBuilder()
			}
			b.set(strconv.Itoa(i), child)
		}
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case ']':
			p.pos++
			p.nest--
			if b == nil {
				return nil, nil
			}
			return b.build(nil), nil
		}
		return nil, errSyntax()
	}
}

// priority parses the value of a .priority member of an object at depth.
func (p *parser) priority(depth int) (*Node, error) {
	p.skipWS()
	switch c := p.peek(); {
	case c == '"':
		return p.stringValue()
	case c == '-' || isDigit(c):
		return p.number()
	case c == 'n':
		return nil, p.literal("null")
	case c == '{':
		n, err := p.object(depth)
		if err != nil {
			return nil, err
		}
		if n.Kind() != KindTimestamp || n.Priority() != nil {
			return nil, Public(ErrInvalidData, msgBadPriority)
		}
		return n, nil
	case c == 't' || c == 'f' || c == '[':
		if err := p.skipValue(); err != nil {
			return nil, err
		}
		return nil, Public(ErrInvalidData, msgBadPriority)
	}
	return nil, errSyntax()
}

// serverValue parses the value of a .sv member: "timestamp" or
// {"increment": number}. Anything else that is valid JSON is an unknown
// server value.
func (p *parser) serverValue() (*Node, error) {
	p.skipWS()
	start, nest := p.pos, p.nest
	n, err := p.knownServerValue()
	if err != nil || n != nil {
		return n, err
	}
	// Not one we know: rewind and read it again for syntax only, so that
	// malformed JSON still gets the JSON message.
	p.pos, p.nest = start, nest
	if err := p.skipValue(); err != nil {
		return nil, err
	}
	return nil, errUnknownSV()
}

// knownServerValue returns the placeholder for a recognised server value,
// (nil, nil) for anything else (leaving pos anywhere), or the error of an
// out-of-range increment.
func (p *parser) knownServerValue() (*Node, error) {
	switch p.peek() {
	case '"':
		s, err := p.str()
		if err != nil || s != "timestamp" {
			return nil, nil
		}
		return timestampPlaceholder(), nil
	case '{':
		if err := p.enter(); err != nil {
			return nil, nil
		}
		p.pos++
		var delta *Node
		for {
			p.skipWS()
			if p.peek() != '"' {
				return nil, nil
			}
			if k, err := p.str(); err != nil || k != "increment" {
				return nil, nil
			}
			if p.expect(':') != nil {
				return nil, nil
			}
			p.skipWS()
			if c := p.peek(); c != '-' && !isDigit(c) {
				return nil, nil
			}
			var err error
			if delta, err = p.number(); err != nil {
				return nil, err
			}
			p.skipWS()
			switch p.peek() {
			case ',':
				p.pos++
				continue
			case '}':
				p.pos++
				p.nest--
				return incrementPlaceholder(delta), nil
			}
			return nil, nil
		}
	}
	return nil, nil
}

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
			return Int(v), nil
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

// updateFields parses the members of a PATCH object at pos.
func (p *parser) updateFields() ([]Field, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	fields := []Field{}
	p.skipWS()
	if p.peek() == '}' {
		p.pos++
		return fields, nil
	}
	for {
		f, err := p.updateField()
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case '}':
			p.pos++
			return fields, nil
		}
		return nil, errSyntax()
	}
}

// updateField parses one "relative/path": value member of a PATCH body.
func (p *parser) updateField() (Field, error) {
	p.skipWS()
	if p.peek() != '"' {
		return Field{}, errSyntax()
	}
	at := p.pos
	name, err := p.str()
	if err != nil {
		return Field{}, err
	}
	path, err := p.fieldPath(name, at)
	if err != nil {
		return Field{}, err
	}
	if err := p.expect(':'); err != nil {
		return Field{}, err
	}
	var v *Node
	if path.IsPriority() {
		if len(path)-1 > p.maxDepth {
			return Field{}, errTooDeep()
		}
		v, err = p.priority(len(path) - 1)
	} else {
		// Starting the value at depth len(path) is parsing it with
		// maxDepth - len(path).
		v, err = p.value(len(path))
	}
	if err != nil {
		return Field{}, err
	}
	return Field{Path: path, Value: v}, nil
}

// fieldPath splits a PATCH member name into keys; at is the offset of the
// name's opening quote, for the bad-key message.
func (p *parser) fieldPath(name string, at int) (Path, error) {
	var path Path
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" {
			continue
		}
		if len(path) > MaxDepth {
			return nil, errTooDeep()
		}
		path = append(path, seg)
	}
	if len(path) == 0 {
		return nil, p.errBadKey(at)
	}
	for i, seg := range path {
		if seg == ".priority" && i == len(path)-1 {
			continue
		}
		if err := p.checkKey(seg, at); err != nil {
			return nil, err
		}
	}
	return path, nil
}

// checkOverlaps refuses two fields where one path equals or is a prefix of
// the other: sorted segment-wise, a path's descendants follow it directly,
// so comparing neighbours finds every overlap in O(n log n).
func checkOverlaps(fields []Field) error {
	if len(fields) < 2 {
		return nil
	}
	paths := make([]Path, len(fields))
	for i, f := range fields {
		paths[i] = f.Path
	}
	slices.SortFunc(paths, func(a, b Path) int { return slices.Compare(a, b) })
	for i := 1; i < len(paths); i++ {
		if paths[i].HasPrefix(paths[i-1]) {
			return Public(ErrInvalidData, fmt.Sprintf(msgPatchOverlap, paths[i-1], paths[i]))
		}
	}
	return nil
}

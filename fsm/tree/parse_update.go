package tree

import (
	"fmt"
	"slices"
	"strings"
)

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
	// A body may hold a million fields: they are gathered in chunks of
	// bounded size and copied once, rather than appended to one slice
	// that is copied into a larger one again and again.
	var full [][]Field
	total := 0
	for {
		f, err := p.updateField()
		if err != nil {
			return nil, err
		}
		if len(fields) == cap(fields) && len(fields) >= fieldsChunk {
			full = append(full, fields)
			fields = make([]Field, 0, fieldsChunk)
		}
		fields = append(fields, f)
		total++
		p.skipWS()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case '}':
			p.pos++
			if full == nil {
				return fields, nil
			}
			all := make([]Field, 0, total)
			for _, chunk := range full {
				all = append(all, chunk...)
			}
			return append(all, fields...), nil
		}
		return nil, errSyntax()
	}
}

// fieldsChunk is the size of updateFields' chunks.
const fieldsChunk = 1 << 14

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

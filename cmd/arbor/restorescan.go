package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A backup is split without loading it: the file is read in place
// (io.ReaderAt) and each value is known by its byte range. Measuring a
// value is a scan of its bytes; splitting one scans its members. Only the
// piece being built is ever held in memory.

// span is one JSON value of the backup: the bytes [start, end) of the
// file, to be written at field, a '/'-separated path from the root ("" is
// the root itself).
type span struct {
	field      string
	start, end int64
}

// size is the length of the value's text.
func (s span) size() int64 { return s.end - s.start }

// child is the span of the member key of s whose value is [start, end).
func (s span) child(key string, start, end int64) span {
	if s.field == "" {
		return span{field: key, start: start, end: end}
	}
	return span{field: s.field + "/" + key, start: start, end: end}
}

// jsonScanner reads a JSON text byte by byte, counting its offset. The
// text was checked to be valid JSON before, so it only has to find where
// values start and end; it still fails on bytes no valid text holds.
type jsonScanner struct {
	br  *bufio.Reader
	pos int64
}

// newScanner reads r's bytes [start, end).
func newScanner(r io.ReaderAt, start, end int64) *jsonScanner {
	return &jsonScanner{br: bufio.NewReaderSize(io.NewSectionReader(r, start, end-start), 64<<10), pos: start}
}

var errBadBackup = errors.New("the backup is not valid JSON")

func (s *jsonScanner) next() (byte, error) {
	b, err := s.br.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%w: it ends at byte %d inside a value", errBadBackup, s.pos)
		}
		return 0, err
	}
	s.pos++
	return b, nil
}

// nonSpace returns the next byte that is not white space.
func (s *jsonScanner) nonSpace() (byte, error) {
	for {
		b, err := s.next()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, nil
	}
}

// str reads the rest of a string whose opening quote was read; with keep,
// its text (quotes included) is returned.
func (s *jsonScanner) str(keep bool) ([]byte, error) {
	var text []byte
	if keep {
		text = []byte{'"'}
	}
	escaped := false
	for {
		b, err := s.next()
		if err != nil {
			return nil, err
		}
		if keep {
			text = append(text, b)
		}
		switch {
		case escaped:
			escaped = false
		case b == '\\':
			escaped = true
		case b == '"':
			return text, nil
		}
	}
}

// skip reads the rest of the value whose first byte, first, was read.
func (s *jsonScanner) skip(first byte) error {
	switch first {
	case '"':
		_, err := s.str(false)
		return err
	case '{', '[':
		depth := 1
		for depth > 0 {
			b, err := s.next()
			if err != nil {
				return err
			}
			switch b {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			case '"':
				if _, err := s.str(false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// A number, true, false or null ends at the first byte that cannot be
	// part of it (or at the end of the text).
	for {
		b, err := s.br.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch b {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return s.br.UnreadByte()
		}
		s.pos++
	}
}

// members calls fn with the key and the span of each member of the object
// that is the value of sp, in the file's order.
func members(r io.ReaderAt, sp span, fn func(key string, child span) error) error {
	s := newScanner(r, sp.start, sp.end)
	b, err := s.nonSpace()
	if err != nil {
		return err
	}
	if b != '{' {
		return fmt.Errorf("%w: an object was expected at byte %d", errBadBackup, s.pos-1)
	}
	for {
		b, err := s.nonSpace()
		if err != nil {
			return err
		}
		switch b {
		case '}':
			return nil
		case ',':
			if b, err = s.nonSpace(); err != nil {
				return err
			}
		}
		if b != '"' {
			return fmt.Errorf("%w: a key was expected at byte %d", errBadBackup, s.pos-1)
		}
		text, err := s.str(true)
		if err != nil {
			return err
		}
		var key string
		if err := json.Unmarshal(text, &key); err != nil {
			return fmt.Errorf("%w: the key at byte %d: %v", errBadBackup, s.pos-int64(len(text)), err)
		}
		if b, err = s.nonSpace(); err != nil {
			return err
		}
		if b != ':' {
			return fmt.Errorf("%w: ':' was expected at byte %d", errBadBackup, s.pos-1)
		}
		if b, err = s.nonSpace(); err != nil {
			return err
		}
		start := s.pos - 1
		if err := s.skip(b); err != nil {
			return err
		}
		if err := fn(key, sp.child(key, start, s.pos)); err != nil {
			return err
		}
	}
}

// firstByte is the first byte of the value of sp that is not white space.
func firstByte(r io.ReaderAt, sp span) (byte, error) {
	return newScanner(r, sp.start, sp.end).nonSpace()
}

// trimmed is the span of the whole file's one value, without the white
// space around it.
func trimmed(r io.ReaderAt, size int64) (span, error) {
	s := newScanner(r, 0, size)
	b, err := s.nonSpace()
	if err != nil {
		return span{}, err
	}
	start := s.pos - 1
	if err := s.skip(b); err != nil {
		return span{}, err
	}
	return span{start: start, end: s.pos}, nil
}

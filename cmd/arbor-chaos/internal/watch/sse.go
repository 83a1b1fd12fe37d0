package watch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The event names of SPEC §5.
const (
	EventPut         = "put"
	EventPatch       = "patch"
	EventKeepAlive   = "keep-alive"
	EventCancel      = "cancel"
	EventAuthRevoked = "auth_revoked"
)

// maxLine bounds one line of a stream: a put at "/" carries the whole
// tree, which in a long run is a few megabytes.
const maxLine = 64 << 20

// Frame is one server-sent event as arbor writes it: an optional
// `id: <log index>` line, `event: <name>`, one `data: <JSON>` line, and
// a blank line.
type Frame struct {
	Event string
	Data  []byte
	ID    uint64
	HasID bool
}

// Reader reads frames strictly: only the three fields arbor sends, each
// at most once, lines ending in "\n", every frame with an event and its
// data. Anything else is an error — a watcher must not guess what a
// malformed stream meant.
type Reader struct {
	r *bufio.Reader
}

// NewReader reads frames from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10)}
}

// ErrFrame is wrapped by every error about a malformed frame (as opposed
// to the connection failing).
var ErrFrame = errors.New("sse: malformed frame")

// Next returns the next frame. At a clean end of the stream, between
// frames, it returns io.EOF; a stream cut inside a frame returns
// io.ErrUnexpectedEOF.
func (r *Reader) Next() (Frame, error) {
	var f Frame
	var hasEvent, hasData bool
	for n := 0; ; n++ {
		line, err := r.line()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if n == 0 {
					return f, io.EOF
				}
				err = io.ErrUnexpectedEOF
			}
			return f, err
		}
		if len(line) == 0 {
			if n == 0 {
				return f, fmt.Errorf("%w: a blank line outside a frame", ErrFrame)
			}
			break
		}
		if n == 3 {
			return f, fmt.Errorf("%w: more than three lines", ErrFrame)
		}
		name, value, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			return f, fmt.Errorf("%w: line %.60q has no \": \"", ErrFrame, line)
		}
		switch string(name) {
		case "id":
			if f.HasID {
				return f, fmt.Errorf("%w: two id lines", ErrFrame)
			}
			id, err := strconv.ParseUint(string(value), 10, 64)
			if err != nil || id == 0 {
				return f, fmt.Errorf("%w: id %.40q is not a log index", ErrFrame, value)
			}
			f.ID, f.HasID = id, true
		case "event":
			if hasEvent {
				return f, fmt.Errorf("%w: two event lines", ErrFrame)
			}
			switch e := string(value); e {
			case EventPut, EventPatch, EventKeepAlive, EventCancel, EventAuthRevoked:
				f.Event, hasEvent = e, true
			default:
				return f, fmt.Errorf("%w: unknown event %.40q", ErrFrame, value)
			}
		case "data":
			if hasData {
				return f, fmt.Errorf("%w: two data lines", ErrFrame)
			}
			f.Data, hasData = bytes.Clone(value), true
		default:
			return f, fmt.Errorf("%w: unknown field %.40q", ErrFrame, name)
		}
	}
	if !hasEvent || !hasData {
		return f, fmt.Errorf("%w: a frame without its event or data line", ErrFrame)
	}
	return f, nil
}

// line returns the next line without its "\n"; a "\r" anywhere is an
// error (arbor ends lines with "\n" alone).
func (r *Reader) line() ([]byte, error) {
	var buf []byte
	for range maxLine/r.r.Size() + 1 {
		part, err := r.r.ReadSlice('\n')
		buf = append(buf, part...)
		switch {
		case err == nil:
			buf = buf[:len(buf)-1]
			if bytes.IndexByte(buf, '\r') >= 0 {
				return nil, fmt.Errorf("%w: a carriage return in a line", ErrFrame)
			}
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrFrame, maxLine)
}

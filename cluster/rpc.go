package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// Reply kinds: the first byte of every RPC answer.
const (
	// replyOK is followed by the op's answer (an Answer, an index, nothing).
	replyOK byte = 0
	// replyError is followed by fsm.Code(err) and the error's message, so
	// the caller rebuilds an error that matches the same sentinel, then
	// by replyOutcomeUnknown when the error is fsm.ErrOutcomeUnknown too.
	replyError byte = 1
	// replyPrecondition is a failed if-match, followed by the current
	// value: the follower's 412 shows it exactly as the leader saw it.
	replyPrecondition byte = 2
	// replyRetry means the request was not acted on (the peer does not
	// lead, or is stopping): ask whoever leads next.
	replyRetry byte = 3
	// replyPreconditionRendered is opPropose's failed if-match,
	// followed by the 412's ETag and body as the leader rendered them.
	replyPreconditionRendered byte = 4
)

// replyOutcomeUnknown is the mark after a replyError's message saying the
// write may have been applied (fsm.ErrOutcomeUnknown).
const replyOutcomeUnknown byte = 1

// markedUnknown is a peer's error marked replyOutcomeUnknown: its message
// as sent (which says so already), matching fsm.ErrOutcomeUnknown too.
type markedUnknown struct{ err error }

func (e markedUnknown) Error() string   { return e.err.Error() }
func (e markedUnknown) Unwrap() []error { return []error{e.err, fsm.ErrOutcomeUnknown} }

// Answer option bits of opPropose's first payload byte.
const (
	answerPretty byte = 1 << iota
	answerDelete
	answerExport
	answerSilent
	answerKnown = answerPretty | answerDelete | answerExport | answerSilent
)

func encodeAnswerOptions(o fsm.AnswerOptions) byte {
	var b byte
	if o.Pretty {
		b |= answerPretty
	}
	if o.Delete {
		b |= answerDelete
	}
	if o.Export {
		b |= answerExport
	}
	if o.Silent {
		b |= answerSilent
	}
	return b
}

// decodeAnswerOptions refuses bits other than answerKnown: a newer member
// asking for an answer this leader cannot render.
func decodeAnswerOptions(b byte) (fsm.AnswerOptions, error) {
	if b&^answerKnown != 0 {
		return fsm.AnswerOptions{}, tree.Public(tree.ErrBadRequest, fmt.Sprintf("unknown cluster RPC answer options %#x (a newer member?)", b))
	}
	return fsm.AnswerOptions{Pretty: b&answerPretty != 0, Delete: b&answerDelete != 0, Export: b&answerExport != 0, Silent: b&answerSilent != 0}, nil
}

// encodeAnswer is the reply of a successful opPropose.
func encodeAnswer(a fsm.Answer) []byte {
	b := make([]byte, 0, 16+len(a.ETag)+len(a.Body))
	b = append(b, replyOK)
	b = appendString(b, a.ETag)
	b = binary.AppendUvarint(b, uint64(len(a.Body)))
	b = append(b, a.Body...)
	return binary.AppendUvarint(b, a.Index)
}

// decodeAnswer reads encodeAnswer's reply; the body is kept as sent.
func decodeAnswer(r *replyReader) (fsm.Answer, error) {
	var a fsm.Answer
	a.ETag = r.string()
	a.Body = r.bytes()
	a.Index = r.uvarint()
	return a, r.done()
}

// msgUnknownOp starts the error a leader answers to an RPC it does not know.
const msgUnknownOp = "unknown cluster RPC"

// nodeDepth bounds the nesting of values decoded from a peer. Stored values
// are at most fsm.MaxDepth deep; priorities add a level each.
const nodeDepth = 4 * tree.MaxDepth

// errMalformed is a reply this build cannot decode.
var errMalformed = errors.New("malformed cluster RPC reply")

// encodeError turns err into a reply, keeping what the caller needs to
// rebuild it: the retry marker, a precondition failure's current value, or
// the sentinel's code and the message.
func encodeError(err error) []byte {
	var pre *fsm.PreconditionError
	switch {
	case errors.Is(err, errRetry):
		return appendString([]byte{replyRetry}, err.Error())
	case errors.As(err, &pre) && pre.Body != nil:
		b := appendString([]byte{replyPreconditionRendered}, pre.ETag)
		return appendString(b, string(pre.Body))
	case errors.As(err, &pre):
		return appendNode([]byte{replyPrecondition}, pre.Current)
	default:
		// A client-facing message must arrive exactly as the FSM wrote it,
		// without the leader's wrapping.
		msg := err.Error()
		var pub *tree.PublicError
		if errors.As(err, &pub) {
			msg = pub.Message
		}
		b := appendString([]byte{replyError, fsm.Code(err)}, msg)
		if errors.Is(err, fsm.ErrOutcomeUnknown) {
			b = append(b, replyOutcomeUnknown)
		}
		return b
	}
}

// encodeIndex is the reply of a successful opReadIndex.
func encodeIndex(idx uint64) []byte { return binary.AppendUvarint([]byte{replyOK}, idx) }

// decodeReply reads the reply kind. For replyOK it returns a reader over
// the answer; otherwise the error the peer sent.
func decodeReply(b []byte) (*replyReader, error) {
	if len(b) == 0 {
		return nil, errMalformed
	}
	r := &replyReader{b: b[1:]}
	switch b[0] {
	case replyOK:
		return r, nil
	case replyError:
		code := r.byte()
		msg := r.string()
		if r.err != nil {
			return nil, r.err
		}
		if len(r.b) > 0 && r.byte() == replyOutcomeUnknown {
			return nil, markedUnknown{fsm.FromCode(code, msg)}
		}
		return nil, fsm.FromCode(code, msg)
	case replyPrecondition:
		cur := r.node()
		if r.err != nil {
			return nil, r.err
		}
		return nil, &fsm.PreconditionError{Current: cur}
	case replyPreconditionRendered:
		etag, body := r.string(), r.bytes()
		if r.err != nil {
			return nil, r.err
		}
		return nil, &fsm.PreconditionError{ETag: etag, Body: body}
	case replyRetry:
		msg := r.string()
		if r.err != nil {
			return nil, r.err
		}
		return nil, fmt.Errorf("%s: %w", msg, errRetry)
	}
	return nil, fmt.Errorf("%w: reply kind %d", errMalformed, b[0])
}

// appendString writes a length-prefixed string.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendNode writes a value in the export form snapshots use (priorities
// kept, no array rule), so fsm.ParseBody rebuilds an identical node with
// the same ETag; a presence byte tells null from everything else.
func appendNode(b []byte, n *tree.Node) []byte {
	if n == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	js := tree.AppendJSON(nil, n, tree.RenderOptions{Export: true})
	b = binary.AppendUvarint(b, uint64(len(js)))
	return append(b, js...)
}

// replyReader decodes a reply; the first problem sticks in err and every
// later read returns zero values.
type replyReader struct {
	b   []byte
	err error
}

func (r *replyReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errMalformed, what)
	}
	r.b = nil
}

func (r *replyReader) byte() byte {
	if len(r.b) < 1 {
		r.fail("short")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *replyReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length that must fit in what is left of the reply (every
// element takes at least a byte), so a corrupt count cannot allocate.
func (r *replyReader) count() int {
	v := r.uvarint()
	if v > uint64(len(r.b)) {
		r.fail("count beyond the reply")
		return 0
	}
	return int(v)
}

func (r *replyReader) bytes() []byte {
	n := r.count()
	if r.err != nil {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *replyReader) string() string { return string(r.bytes()) }

func (r *replyReader) node() *tree.Node {
	if r.byte() == 0 || r.err != nil {
		return nil
	}
	js := r.bytes()
	if r.err != nil {
		return nil
	}
	n, err := tree.ParseBody(js, nodeDepth)
	if err != nil {
		r.fail("value: " + err.Error())
		return nil
	}
	return n
}

// done reports the first decoding problem, or trailing bytes.
func (r *replyReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	return r.err
}

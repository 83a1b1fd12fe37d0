package fsm

import (
	"errors"

	"github.com/arbordb/arbor/fsm/tree"
)

// AnswerOptions say how a write's answer is rendered. They travel with a
// forwarded write, so the leader renders the answer once and the follower
// that took the request relays it byte for byte.
type AnswerOptions struct {
	// Pretty indents the body (print=pretty).
	Pretty bool
	// Export renders a failed if-match's current value in the export
	// form (format=export); a successful write's echo ignores it.
	Export bool
	// Delete answers null with the ETag of null, as DELETE does whatever
	// the path (a Set of null at a priority path otherwise answers the
	// node's ETag).
	Delete bool
	// Silent renders no body (print=silent: the client gets 204): the
	// echo of a large write costs the leader as much CPU as the parse.
	Silent bool
}

// Answer is a successful write's answer as a client receives it.
type Answer struct {
	// Body is the response body: the echo of a PUT or PATCH, a POST's
	// {"name": key}, or null for a DELETE.
	Body []byte
	// ETag is the ETag of the written location after the write (for a
	// POST, of the new child).
	ETag string
	// Index is the log index the write was applied at.
	Index uint64
}

// RenderAnswer renders the result of applying a command of kind (a plain
// kind: CmdSet, CmdUpdate or CmdPush).
func RenderAnswer(kind CommandKind, res Result, o AnswerOptions) Answer {
	ro := tree.RenderOptions{Pretty: o.Pretty}
	a := Answer{ETag: res.ETag, Index: res.Index}
	if o.Delete {
		a.ETag = (*tree.Node)(nil).ETag()
	}
	switch {
	case o.Silent:
	case kind == CmdPush:
		a.Body = pushName(res.Name, ro)
	case o.Delete:
		a.Body = tree.AppendJSON(nil, nil, ro)
	case kind == CmdUpdate && res.Fields != nil:
		a.Body = tree.AppendFields(nil, res.Fields, ro)
	default: // PUT echoes what was written, server values resolved
		a.Body = tree.AppendJSON(nil, res.Value, ro)
	}
	return a
}

// AnswerFor is the client's answer to a write of kind that ended with res
// and err: the rendered answer, or err with a failed if-match's 412
// rendered into it. The leader uses it for its own writes and forwarded
// ones alike, so both answers are the same bytes.
func AnswerFor(kind CommandKind, res Result, err error, o AnswerOptions) (Answer, error) {
	if err != nil {
		var pre *PreconditionError
		if errors.As(err, &pre) && pre.Body == nil {
			RenderPrecondition(pre, tree.RenderOptions{Pretty: o.Pretty, Export: o.Export})
		}
		return Answer{}, err
	}
	return RenderAnswer(kind, res, o), nil
}

// RenderPrecondition fills e's rendered form, the 412's body and ETag,
// from its current value.
func RenderPrecondition(e *PreconditionError, o tree.RenderOptions) {
	e.ETag = e.Current.ETag()
	e.Body = tree.AppendJSON(nil, e.Current, o)
}

// pushName renders a POST's answer, {"name":"<key>"}. Push keys use only
// URL-safe base-64 characters, so the key needs no escaping.
func pushName(key string, o tree.RenderOptions) []byte {
	if !o.Pretty {
		return []byte(`{"name":"` + key + `"}`)
	}
	b := tree.NewObjectBuilder()
	b.Set("name", tree.String(key))
	return tree.AppendJSON(nil, b.Build(nil), o)
}

package cluster

import (
	"errors"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// renderAnswer renders the result of applying a command of kind (a plain
// kind: CmdSet, CmdUpdate or CmdPush).
func renderAnswer(kind fsm.CommandKind, res fsm.Result, o fsm.AnswerOptions) fsm.Answer {
	ro := tree.RenderOptions{Pretty: o.Pretty}
	a := fsm.Answer{ETag: res.ETag, Index: res.Index}
	if o.Delete {
		a.ETag = (*tree.Node)(nil).ETag()
	}
	switch {
	case o.Silent:
	case kind == fsm.CmdPush:
		a.Body = pushAnswer(res.Name, ro)
	case o.Delete:
		a.Body = tree.AppendJSON(nil, nil, ro)
	case kind == fsm.CmdUpdate && res.Fields != nil:
		a.Body = tree.AppendFields(nil, res.Fields, ro)
	default: // PUT echoes what was written, server values resolved
		a.Body = tree.AppendJSON(nil, res.Value, ro)
	}
	return a
}

// answerFor is the client's answer to a write of kind that ended with res
// and err: the rendered answer, or err with a failed if-match's 412
// rendered into it. The leader uses it for its own writes and forwarded
// ones alike, so both answers are the same bytes.
func answerFor(kind fsm.CommandKind, res fsm.Result, err error, o fsm.AnswerOptions) (fsm.Answer, error) {
	if err != nil {
		var pre *fsm.PreconditionError
		if errors.As(err, &pre) && pre.Body == nil {
			pre.ETag = pre.Current.ETag()
			pre.Body = tree.AppendJSON(nil, pre.Current, tree.RenderOptions{Pretty: o.Pretty, Export: o.Export})
		}
		return fsm.Answer{}, err
	}
	return renderAnswer(kind, res, o), nil
}

// pushAnswer renders a POST's answer, {"name":"<key>"}. Push keys use only
// URL-safe base-64 characters, so the key needs no escaping.
func pushAnswer(key string, o tree.RenderOptions) []byte {
	if !o.Pretty {
		return []byte(`{"name":"` + key + `"}`)
	}
	b := tree.NewObjectBuilder()
	b.Set("name", tree.String(key))
	return tree.AppendJSON(nil, b.Build(nil), o)
}

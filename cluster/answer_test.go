package cluster

import (
	"testing"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// TestRenderAnswerSilent: print=silent renders no body, and the same ETag.
func TestRenderAnswerSilent(t *testing.T) {
	v := tree.Float(5)
	fields := []tree.Field{{Path: tree.Path{"a"}, Value: v}}
	for _, c := range []struct {
		name string
		kind fsm.CommandKind
		res  fsm.Result
		o    fsm.AnswerOptions
	}{
		{"PUT", fsm.CmdSet, fsm.Result{Value: v, ETag: v.ETag()}, fsm.AnswerOptions{}},
		{"PATCH", fsm.CmdUpdate, fsm.Result{Fields: fields, ETag: "e"}, fsm.AnswerOptions{Pretty: true}},
		{"POST", fsm.CmdPush, fsm.Result{Name: "-k", ETag: v.ETag()}, fsm.AnswerOptions{}},
		{"DELETE", fsm.CmdSet, fsm.Result{ETag: "x"}, fsm.AnswerOptions{Delete: true}},
	} {
		loud := renderAnswer(c.kind, c.res, c.o)
		c.o.Silent = true
		quiet := renderAnswer(c.kind, c.res, c.o)
		if len(loud.Body) == 0 || quiet.Body != nil || quiet.ETag != loud.ETag {
			t.Errorf("%s: %q %s, silently %q %s", c.name, loud.Body, loud.ETag, quiet.Body, quiet.ETag)
		}
	}
}

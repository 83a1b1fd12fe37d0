package fsm

import (
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestRenderAnswerSilent: print=silent renders no body, and the same ETag.
func TestRenderAnswerSilent(t *testing.T) {
	v := tree.Float(5)
	fields := []tree.Field{{Path: tree.Path{"a"}, Value: v}}
	for _, c := range []struct {
		name string
		kind CommandKind
		res  Result
		o    AnswerOptions
	}{
		{"PUT", CmdSet, Result{Value: v, ETag: v.ETag()}, AnswerOptions{}},
		{"PATCH", CmdUpdate, Result{Fields: fields, ETag: "e"}, AnswerOptions{Pretty: true}},
		{"POST", CmdPush, Result{Name: "-k", ETag: v.ETag()}, AnswerOptions{}},
		{"DELETE", CmdSet, Result{ETag: "x"}, AnswerOptions{Delete: true}},
	} {
		loud := RenderAnswer(c.kind, c.res, c.o)
		c.o.Silent = true
		quiet := RenderAnswer(c.kind, c.res, c.o)
		if len(loud.Body) == 0 || quiet.Body != nil || quiet.ETag != loud.ETag {
			t.Errorf("%s: %q %s, silently %q %s", c.name, loud.Body, loud.ETag, quiet.Body, quiet.ETag)
		}
	}
}

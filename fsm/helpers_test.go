package fsm

import (
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// testFSM wraps an FSM with a log index counter for tests.
type testFSM struct {
	*FSM
	index uint64
}

func newTestFSM() *testFSM { return &testFSM{FSM: New()} }

func (t *testFSM) apply(c Command) (Result, error) {
	t.index++
	r := t.Apply(Entry{Index: t.index, Command: true, Data: c.Encode()})
	return r.Result, r.Err
}

func mustPath(tb testing.TB, s string) tree.Path {
	tb.Helper()
	p, err := tree.SplitPath(s)
	if err != nil {
		tb.Fatalf("SplitPath(%q): %v", s, err)
	}
	return p
}

func cmd(tb testing.TB, kind CommandKind, path, body string) Command {
	c := Command{Kind: kind, Path: mustPath(tb, path), Now: 1700000000000}
	if body != "" {
		c.Body = []byte(body)
	}
	return c
}

func render(n *tree.Node) string { return string(tree.AppendJSON(nil, n, tree.RenderOptions{})) }

func renderExport(n *tree.Node) string {
	return string(tree.AppendJSON(nil, n, tree.RenderOptions{Export: true}))
}

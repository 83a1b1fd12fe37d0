package fsm

import (
	"fmt"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// testFSM wraps an FSM with a log index counter for tests.
type testFSM struct {
	*FSM
	index uint64
}

func newTestFSM() *testFSM { return &testFSM{FSM: New()} }

// apply applies c as its log entry, its JSON body parsed first as the
// proposer parses a request's (a body that does not parse is refused
// with nothing applied, as the proposer refuses it).
func (t *testFSM) apply(c Command) (Result, error) {
	c, err := parseCommand(c)
	if err != nil {
		return Result{}, err
	}
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

// parseCommand is c with its JSON Body parsed into Value or Fields, as
// the proposer parses a request's body (a Set's value may nest as deep as
// its node allows, a Push's one level less); c itself when it is not a
// write or is parsed already.
func parseCommand(c Command) (Command, error) {
	if c.Parsed || (c.Kind != CmdSet && c.Kind != CmdUpdate && c.Kind != CmdPush) {
		return c, nil
	}
	p := c
	p.Parsed = true
	var err error
	switch {
	case c.Kind == CmdUpdate && (len(c.Body) == 0 || string(c.Body) == "null"):
		p.Fields = nil
	case c.Kind == CmdUpdate:
		p.Fields, err = tree.ParseUpdate(c.Body, tree.MaxDepth-len(c.Path))
	case len(c.Body) == 0:
		p.Value = nil
	case c.Kind == CmdPush:
		p.Value, err = tree.ParseBody(c.Body, tree.MaxDepth-len(c.Path)-1)
	default:
		p.Value, err = tree.ParseBody(c.Body, tree.MaxDepth-len(c.Path.NodePath()))
	}
	return p, err
}

// mustEncode is the log entry of c, its JSON body parsed first.
func mustEncode(c Command) []byte {
	p, err := parseCommand(c)
	if err != nil {
		panic(fmt.Sprintf("test command body %q: %v", c.Body, err))
	}
	return p.Encode()
}

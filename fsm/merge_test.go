package fsm

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// The one-pass merge of a PATCH is tree.Update, tested against
// tree.UpdateInOrder in fsm/tree/merge_test.go. Here: the entries that
// carry Updates, whatever their bytes, keep their exact result.

// refUpdate is applyUpdate with the fields set one after the other, each
// from the root (tree.UpdateInOrder, the definition of an Update): the
// reference the one-pass merge must match exactly.
func refUpdate(s *state, c *Command) (Result, []Event, error) {
	return updateWith(s, c, tree.UpdateInOrder)
}

// diffTrees describes the first difference between a and b that the
// tree shows outside its package: kind and content (the ETag), size,
// where the priority counts, priority, and the children in key order.
func diffTrees(a, b *tree.Node, at string) string {
	if a.Kind() != b.Kind() || a.ETag() != b.ETag() || a.Size() != b.Size() || a.ValuePriority() != b.ValuePriority() {
		return fmt.Sprintf("%s: %s (size %d) vs %s (size %d)", at, renderExport(a), a.Size(), renderExport(b), b.Size())
	}
	if a == nil || b == nil {
		return ""
	}
	if a.Priority() != nil || b.Priority() != nil {
		if d := diffTrees(a.Priority(), b.Priority(), at+"/.priority"); d != "" {
			return d
		}
	}
	type child struct {
		key  string
		node *tree.Node
	}
	var ca, cb []child
	a.Each(func(k string, n *tree.Node) bool { ca = append(ca, child{k, n}); return true })
	b.Each(func(k string, n *tree.Node) bool { cb = append(cb, child{k, n}); return true })
	if len(ca) != len(cb) {
		return fmt.Sprintf("%s: %d vs %d children", at, len(ca), len(cb))
	}
	for i := range ca {
		if ca[i].key != cb[i].key {
			return fmt.Sprintf("%s: child %d is %q vs %q", at, i, ca[i].key, cb[i].key)
		}
		if d := diffTrees(ca[i].node, cb[i].node, at+"/"+ca[i].key); d != "" {
			return d
		}
	}
	return ""
}

// diffUpdate applies c to a copy of s with refUpdate and with applyUpdate
// and describes the first difference in tree, result, events or error.
func diffUpdate(s *state, c Command) string {
	beforeWire := appendWire(nil, s.root)
	a, b := *s, *s
	ca, cb := c, c
	ra, eva, erra := refUpdate(&a, &ca)
	rb, evb, errb := applyUpdate(&b, &cb)
	if !bytes.Equal(appendWire(nil, s.root), beforeWire) {
		return "the state before the update changed"
	}
	if fmt.Sprint(erra) != fmt.Sprint(errb) || fmt.Sprintf("%T", erra) != fmt.Sprintf("%T", errb) {
		return fmt.Sprintf("errors: %v vs %v", erra, errb)
	}
	if erra != nil {
		return ""
	}
	if d := diffTrees(a.root, b.root, "tree"); d != "" {
		return d
	}
	if !bytes.Equal(appendWire(nil, a.root), appendWire(nil, b.root)) {
		return "binary forms differ"
	}
	if ra.ETag != rb.ETag || ra.Name != rb.Name {
		return fmt.Sprintf("result ETag %q vs %q", ra.ETag, rb.ETag)
	}
	if d := diffTrees(ra.Value, rb.Value, "echo"); d != "" {
		return d
	}
	if !bytes.Equal(appendWireFields(nil, ra.Fields), appendWireFields(nil, rb.Fields)) {
		return "result fields differ"
	}
	if len(eva) != len(evb) {
		return fmt.Sprintf("%d vs %d events", len(eva), len(evb))
	}
	for i := range eva {
		x, y := eva[i], evb[i]
		if x.Kind != y.Kind || x.Path.String() != y.Path.String() || x.Index != y.Index {
			return fmt.Sprintf("event %d: %+v vs %+v", i, x, y)
		}
		if d := diffTrees(x.Value, y.Value, "event value"); d != "" {
			return d
		}
		if !bytes.Equal(appendWireFields(nil, x.Fields), appendWireFields(nil, y.Fields)) {
			return fmt.Sprintf("event %d: fields differ", i)
		}
	}
	return ""
}

// mergeSeeds are PATCHes where the fields' order matters (see
// TestMergeUpdateOrder in fsm/tree): shared parents, deletes that empty a
// node before it is recreated, priorities before and after, server values.
var mergeSeeds = []struct{ path, body string }{
	{"/", `{"a/b":null,"a/c":2}`},
	{"/", `{"a/c":2,"a/b":null,"a/.priority":7}`},
	{"/a", `{".priority":"qq","b":2}`},
	{"/a", `{"b":2,".priority":"qq"}`},
	{"/", `{"1/x":{".sv":"timestamp"},"10/.priority":{".sv":"timestamp"},"n":{".sv":{"increment":1e308}}}`},
	{"/", `{"a/c/d":null,"a/b":{".sv":{"increment":-3}},"z":[1,2,{"q":true}]}`},
	{"/10", `{"a":null,".priority":1,"b":{".value":5,".priority":2}}`},
	{"/", `{"1":null,"10":null,"a":null,"n":null}`},
}

// FuzzUpdateMatchesInOrder decodes arbitrary entries and applies the
// Updates among them, parsed or as text, with the merge and with the
// reference, onto a tree with priorities, leaves and nested objects.
func FuzzUpdateMatchesInOrder(f *testing.F) {
	for _, sd := range mergeSeeds {
		c := Command{Kind: CmdUpdate, Path: mustPath(f, sd.path), Body: []byte(sd.body), Now: 1}
		f.Add(mustEncode(c))
		if p, ok := parsedTwin(c); ok {
			f.Add(p.Encode())
		}
	}
	base, err := tree.ParseBody([]byte(`{"a":{"b":1,"c":{"d":{".value":2,".priority":"p"}}},"1":"x","10":{"a":1,".priority":3},"n":1e308}`), tree.MaxDepth)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil || c.Kind != CmdUpdate {
			return
		}
		if d := diffUpdate(&state{root: base}, c); d != "" {
			t.Fatal(d)
		}
	})
}

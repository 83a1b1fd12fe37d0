package fsm

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// parsedTwin returns c with its body parsed as the HTTP layer parses it,
// or false when the body is not valid for c's kind and path.
func parsedTwin(c Command) (Command, bool) {
	p, err := parseCommand(c)
	return p, err == nil
}

// applyBoth applies the parsed command itself, in memory, to a and its
// log entry to b, and fails unless both answer, and leave, exactly the
// same (text is the command as written, for the messages).
func applyBoth(t *testing.T, a, b *testFSM, text, parsed Command, o tree.RenderOptions) {
	t.Helper()
	a.index++
	next, ra, _, ea := applyCommand(a.cur.Load(), &parsed)
	a.cur.Store(next)
	b.index++
	data := parsed.Encode()
	resp := b.Apply(Entry{Index: b.index, Command: true, Data: data})
	rb, eb := resp.Result, resp.Err
	if (ea == nil) != (eb == nil) || (ea != nil && ea.Error() != eb.Error()) {
		t.Fatalf("%v %s %s: command err %v, entry err %v", text.Kind, text.Path, text.Body, ea, eb)
	}
	var pa, pb *PreconditionError
	if errors.As(ea, &pa) && errors.As(eb, &pb) && (pa.Current.ETag() != pb.Current.ETag() || renderExport(pa.Current) != renderExport(pb.Current)) {
		t.Fatalf("%s: 412 %s vs %s", text.Body, renderExport(pa.Current), renderExport(pb.Current))
	}
	// What the answer is rendered from: the echo (or a PATCH's fields),
	// the push key and the ETag.
	ansA := tree.AppendJSON(tree.AppendFields(nil, ra.Fields, o), ra.Value, o)
	ansB := tree.AppendJSON(tree.AppendFields(nil, rb.Fields, o), rb.Value, o)
	if !bytes.Equal(ansA, ansB) || ra.Name != rb.Name || ra.ETag != rb.ETag {
		t.Fatalf("%v %s %s: answer %s %q (%s) from text, %s %q (%s) from parsed", text.Kind, text.Path, text.Body, ansA, ra.Name, ra.ETag, ansB, rb.Name, rb.ETag)
	}
	if a.Root().ETag() != b.Root().ETag() || renderExport(a.Root()) != renderExport(b.Root()) || a.Root().Size() != b.Root().Size() {
		t.Fatalf("%s: trees differ:\n text   %s\n parsed %s", text.Body, renderExport(a.Root()), renderExport(b.Root()))
	}
}

// TestEntriesApplyLikeTheirCommands: a write's log entry, its body in
// binary form, answers and changes the tree exactly as the parsed command
// it was encoded from does, write size limits included.
func TestEntriesApplyLikeTheirCommands(t *testing.T) {
	a, b := newTestFSM(), newTestFSM()
	cmds := randomCommands(11, 400)
	for _, name := range goldenOrder {
		cmds = append(cmds, goldenCommands()[name])
	}
	extra := []string{
		`{"a":{".value":{"x":1,"y":"z"},".priority":3}}`,
		`{"a":{".priority":{".sv":"timestamp"},"b":{".sv":{"increment":-2}}}}`,
		`{".value":{".sv":{"increment":1.5}},".priority":"p"}`,
		`[1,null,{"k":[true,false]},"\u00e9\n\"",1e300,-0.0,5.0]`,
	}
	for i, body := range extra {
		cmds = append(cmds, Command{Kind: CmdSet, Path: tree.Path{"x", string(rune('a' + i))}, Body: []byte(body), Now: 1700000000000, WriteLimit: 200})
	}
	applied := 0
	for i, c := range cmds {
		p, ok := parsedTwin(c)
		if !ok {
			continue
		}
		applyBoth(t, a, b, c, p, tree.RenderOptions{Pretty: i%2 == 0, Export: i%3 == 0})
		applied++
	}
	if applied < 200 {
		t.Fatalf("only %d of %d commands had valid bodies", applied, len(cmds))
	}
}

// TestDecodeParsedEntryRefusesDamage: a truncated or corrupt parsed entry
// is an error, never a panic or a half-read value.
func TestDecodeParsedEntryRefusesDamage(t *testing.T) {
	c, _ := parsedTwin(Command{Kind: CmdUpdate, Path: tree.Path{"u"}, Body: []byte(`{"a/b":{"c":[1,2.5,"x",true]},"d":null,"e":{".sv":"timestamp"}}`)})
	data := c.Encode()
	for i := range len(data) - 1 {
		if _, err := DecodeCommand(data[:i]); err == nil {
			t.Fatalf("entry cut at %d of %d decoded", i, len(data))
		}
	}
	deep := []byte{1, byte(CmdSet), 0, 0}
	for range 1000 {
		deep = append(deep, wireObject, 1, 1, 'k')
	}
	if _, err := DecodeCommand(deep); !errors.Is(err, tree.ErrInvalidData) {
		t.Fatalf("1000 nested objects: %v", err)
	}
	if _, err := DecodeCommand([]byte{1, byte(CmdSet), 0, 0, wireNull | wirePriority}); !errors.Is(err, tree.ErrInvalidData) {
		t.Fatalf("null with a priority: %v", err)
	}
}

// FuzzParsedBody: any body the parser accepts crosses in binary form and
// back to a value that renders, hashes and sizes the same, and applies
// the same.
func FuzzParsedBody(f *testing.F) {
	for _, c := range goldenCommands() {
		f.Add(c.Body, c.Kind == CmdUpdate)
	}
	for _, c := range randomCommands(5, 40) {
		f.Add(c.Body, c.Kind == CmdUpdate)
	}
	f.Fuzz(func(t *testing.T, body []byte, patch bool) {
		kind := CmdSet
		if patch {
			kind = CmdUpdate
		}
		c := Command{Kind: kind, Path: tree.Path{"f"}, Body: body, Now: 1700000000000, WriteLimit: 1 << 20}
		p, ok := parsedTwin(c)
		if !ok {
			return
		}
		d, err := DecodeCommand(p.Encode())
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if !patch && (d.Value.Size() != p.Value.Size() || d.Value.ETag() != p.Value.ETag() || renderExport(d.Value) != renderExport(p.Value)) {
			t.Fatalf("%s: decoded %s (size %d), parsed %s (size %d)", body, renderExport(d.Value), d.Value.Size(), renderExport(p.Value), p.Value.Size())
		}
		a, b := newTestFSM(), newTestFSM()
		base := Command{Kind: CmdSet, Body: []byte(`{"f":{"a":{"b":[1,2,3]},"c":"x","n":5}}`)}
		a.apply(base)
		b.apply(base)
		applyBoth(t, a, b, c, p, tree.RenderOptions{})
	})
}

// TestIncrementOverflowIsRefused: an increment whose double result would
// be infinite is a 400, in a PUT or a PATCH; an int overflow becomes a
// double.
func TestIncrementOverflowIsRefused(t *testing.T) {
	f := newTestFSM()
	if _, err := f.apply(cmd(t, CmdSet, "/n", `{"d":1.7e308,"i":9223372036854775807}`)); err != nil {
		t.Fatal(err)
	}
	over, _ := parsedTwin(cmd(t, CmdSet, "/n/d", `{".sv":{"increment":1.7e308}}`))
	f.index++
	r := f.Apply(Entry{Index: f.index, Command: true, Data: over.Encode()})
	var pub *tree.PublicError
	if !errors.As(r.Err, &pub) || pub.Message != tree.CheckIncrements(tree.ServerIncrement(tree.Float(1.7e308)), tree.Float(1.7e308)).Error() || !errors.Is(r.Err, tree.ErrInvalidData) {
		t.Fatalf("overflowing increment: %v", r.Err)
	}
	if got := renderExport(f.Root()); !strings.Contains(got, `"i":9223372036854775807`) || !strings.Contains(got, `"d":1.7`) {
		t.Fatalf("tree changed: %s", got)
	}
	patch, _ := parsedTwin(cmd(t, CmdUpdate, "/n", `{"x":1,"d":{".sv":{"increment":1e308}}}`))
	f.index++
	if r := f.Apply(Entry{Index: f.index, Command: true, Data: patch.Encode()}); !errors.Is(r.Err, tree.ErrInvalidData) {
		t.Fatalf("overflowing increment in a PATCH: %v", r.Err)
	}
	// An int overflow becomes a double, as before: not an error.
	intOver, _ := parsedTwin(cmd(t, CmdSet, "/n/i", `{".sv":{"increment":1}}`))
	f.index++
	if r := f.Apply(Entry{Index: f.index, Command: true, Data: intOver.Encode()}); r.Err != nil {
		t.Fatalf("int overflow: %v", r.Err)
	}
}

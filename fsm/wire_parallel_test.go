package fsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestWireFieldsParallel decodes PATCH entries of many fields, whole,
// cut short and with a byte changed, with the fields shared among
// goroutines and read one after the other: commands and errors must be
// the same.
func TestWireFieldsParallel(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	defer func(n int) { wireParallelFields = n }(wireParallelFields)
	decodeBoth := func(data []byte) string {
		wireParallelFields = 1 << 30
		seq, errSeq := DecodeCommand(data)
		wireParallelFields = 2
		par, errPar := DecodeCommand(data)
		if fmt.Sprint(errSeq) != fmt.Sprint(errPar) {
			return fmt.Sprintf("errors %v vs %v", errSeq, errPar)
		}
		if !bytes.Equal(appendWireFields(nil, seq.Fields), appendWireFields(nil, par.Fields)) {
			return "fields differ"
		}
		if seq.IfMatch != par.IfMatch || seq.Now != par.Now || seq.WriteLimit != par.WriteLimit || seq.Rand != par.Rand {
			return "trailers differ"
		}
		return ""
	}
	for round := range 40 {
		fields, err := tree.ParseUpdate([]byte(randomPatch(r, 5+r.Intn(60))), tree.MaxDepth)
		if err != nil {
			t.Fatal(err)
		}
		c := Command{Kind: CmdUpdate, Path: tree.Path{"x"}, Parsed: true, Fields: fields, IfMatch: "e", HasIfMatch: true, Now: 7, WriteLimit: 9}
		data := c.EncodeParsed()
		// Whole, the fields are shared and read to their end.
		wireParallelFields = 2
		d := decoder{b: appendWireFields(nil, fields)}
		shared := make([]tree.Field, d.uvarint()-1)
		if !d.wireFieldsParallel(shared) || len(d.b) != 0 {
			t.Fatalf("round %d: %d fields not shared, or not to their end (%d bytes left)", round, len(shared), len(d.b))
		}
		d = decoder{b: appendWireFields(nil, fields)}
		read := make([]tree.Field, d.uvarint()-1)
		if !d.readFields(read) {
			t.Fatalf("round %d: %v", round, d.err)
		}
		if !bytes.Equal(appendWireFields(nil, read), appendWireFields(nil, shared)) {
			t.Fatalf("round %d: fields read and shared differ", round)
		}
		if d := decodeBoth(data); d != "" {
			t.Fatalf("round %d: %s", round, d)
		}
		for i := 3; i < len(data); i++ {
			if d := decodeBoth(data[:i]); d != "" {
				t.Fatalf("round %d, cut at %d: %s", round, i, d)
			}
			changed := append([]byte(nil), data...)
			changed[i] ^= byte(1 + r.Intn(255))
			if d := decodeBoth(changed); d != "" {
				t.Fatalf("round %d, byte %d changed: %s", round, i, d)
			}
		}
	}
}

// randomPatch is a PATCH body of n fields with distinct paths, one or two
// keys long, whose values are scalars, objects, priorities and server
// values, so that their binary forms take every tag.
func randomPatch(r *rand.Rand, n int) string {
	values := []string{`null`, `1`, `-2.5`, `"s"`, `true`, `{"a":1,"b":{"c":"d"}}`, `{".value":3,".priority":"p"}`,
		`{"x":1,".priority":2}`, `{".sv":"timestamp"}`, `{".sv":{"increment":4}}`, `{".sv":{"increment":0.5}}`, `[1,2]`}
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		path := fmt.Sprintf("k%d", i)
		switch r.Intn(4) {
		case 0:
			path += "/sub"
		case 1:
			path += "/.priority"
			fmt.Fprintf(&b, "%q:%d", path, r.Intn(9))
			continue
		}
		fmt.Fprintf(&b, "%q:%s", path, values[r.Intn(len(values))])
	}
	b.WriteByte('}')
	return b.String()
}

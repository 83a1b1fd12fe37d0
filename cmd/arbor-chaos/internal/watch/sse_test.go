package watch

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderReadsArborFrames(t *testing.T) {
	in := "event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n" +
		"id: 42\nevent: patch\ndata: {\"path\":\"/a\",\"data\":{\"b\":1}}\n\n" +
		"event: keep-alive\ndata: null\n\n"
	r := NewReader(strings.NewReader(in))
	want := []Frame{
		{Event: EventPut, Data: []byte(`{"path":"/","data":null}`)},
		{Event: EventPatch, Data: []byte(`{"path":"/a","data":{"b":1}}`), ID: 42, HasID: true},
		{Event: EventKeepAlive, Data: []byte("null")},
	}
	for i, w := range want {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Event != w.Event || string(f.Data) != string(w.Data) || f.ID != w.ID || f.HasID != w.HasID {
			t.Errorf("frame %d: %+v, want %+v", i, f, w)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

func TestReaderIsStrict(t *testing.T) {
	for _, c := range []struct {
		name, in string
		eof      bool // io.ErrUnexpectedEOF rather than ErrFrame
	}{
		{"unknown field", "retry: 10\nevent: put\ndata: {}\n\n", false},
		{"comment", ": hi\nevent: put\ndata: {}\n\n", false},
		{"no space", "event:put\ndata: {}\n\n", false},
		{"unknown event", "event: message\ndata: {}\n\n", false},
		{"two data lines", "event: put\ndata: {}\ndata: {}\n\n", false},
		{"two ids", "id: 1\nid: 2\nevent: put\ndata: {}\n\n", false},
		{"bad id", "id: x\nevent: put\ndata: {}\n\n", false},
		{"id zero", "id: 0\nevent: put\ndata: {}\n\n", false},
		{"no data", "event: put\n\n", false},
		{"no event", "data: {}\n\n", false},
		{"blank line first", "\nevent: put\ndata: {}\n\n", false},
		{"carriage return", "event: put\r\ndata: {}\r\n\r\n", false},
		{"cut in a frame", "event: put\ndata: {}\n", true},
		{"cut in a line", "event: put\ndata: {", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewReader(strings.NewReader(c.in)).Next()
			if c.eof && !errors.Is(err, io.ErrUnexpectedEOF) || !c.eof && !errors.Is(err, ErrFrame) {
				t.Errorf("%q: %v", c.in, err)
			}
		})
	}
}

func TestParseChange(t *testing.T) {
	c, err := ParseChange(EventPut, []byte(`{"path":"/ctr/s0/n0","data":4611686018427387904}`))
	if err != nil || strings.Join(c.Path, "/") != "ctr/s0/n0" || jsonText(c.Value) != "4611686018427387904" {
		t.Errorf("put: %+v %v", c, err)
	}
	c, err = ParseChange(EventPatch, []byte(`{"path":"/reg/g1","data":{"k0":"a","k1/x":null}}`))
	if err != nil || len(c.Fields) != 2 || strings.Join(c.Fields[1].Path, "/") != "k1/x" || c.Fields[1].Value != nil {
		t.Errorf("patch: %+v %v", c, err)
	}
	for _, bad := range []string{
		`{"path":"/a"}`,
		`{"data":1}`,
		`{"path":"/a","data":1,"extra":2}`,
		`{"path":"/a.b","data":1}`,
		`{"path":"/a","data":1} 2`,
	} {
		if _, err := ParseChange(EventPut, []byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := ParseChange(EventPatch, []byte(`{"path":"/a","data":3}`)); err == nil {
		t.Error("a patch of a number accepted")
	}
}

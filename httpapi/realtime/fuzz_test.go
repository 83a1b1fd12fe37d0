package realtime

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeMessage feeds the message decoder, and the body readers of
// the requests it accepts, anything: they must answer with an error,
// never panic, and what they accept must keep their promises. The seed
// corpus is in testdata/fuzz/FuzzDecodeMessage.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"t":"d","d":{"r":1,"a":"q","b":{"p":"/a","q":{"sp":1,"sn":"k","l":2,"vf":"r","i":"x/y"},"t":1,"h":""}}}`))
	f.Add([]byte(`{"t":"c","d":{"t":"p","d":{}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err != nil {
			return
		}
		if m.control != "" {
			return
		}
		if m.req.action == "" {
			t.Fatal("a request without an action was accepted")
		}
		if m.req.body != nil && !isObject(m.req.body) {
			t.Fatalf("a body that is not an object was accepted: %q", m.req.body)
		}
		if m.req.id != nil && !json.Valid(m.req.id) {
			t.Fatalf("request number %q is not JSON", m.req.id)
		}
		var lb listenBody
		if decodeBody(m.req, &lb) == nil {
			_, _ = parsePath(lb.P)
			_, _ = parseQueryObject(lb.Q)
		}
		_ = appendResponse(nil, m.req.id, statusOK, nil)
	})
}

// The assembler never panics and never holds more than its limit.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte("3"), []byte("{\"t\":"), []byte("\"c\"}"))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		as := assembler{limit: 64}
		for _, fr := range [][]byte{a, b, c, a} {
			msg, err := as.add(fr)
			if err != nil {
				return
			}
			if int64(len(msg)) > as.limit || int64(len(as.partial)) > as.limit {
				t.Fatalf("over the limit: %d, %d", len(msg), len(as.partial))
			}
		}
	})
}

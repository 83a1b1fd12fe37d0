package httpapi

import (
	"sync"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// What the hub queues for a subscriber, and how a change becomes a
// server-sent event.

// frame is one server-sent event: rendered already (data), or a change
// the first stream that sends it renders, for every stream it concerns.
type frame struct {
	index  uint64 // log index of the entry (0: not from the log)
	data   []byte
	change *change
}

// bytes is the frame rendered.
func (f *frame) bytes() []byte {
	if f.change != nil {
		return f.change.sse()
	}
	return f.data
}

// size is about what the frame takes once rendered, for a queue's budget.
func (f *frame) size() int {
	if f.change != nil {
		return f.change.size
	}
	return len(f.data)
}

// change is what one event means to the subscribers at one place of the
// trie: a put of value, or a patch of fields, at rel below their location.
// The apply goroutine only describes it; rendering it is left to the
// subscribers' own goroutines, once for all of them and for each kind of
// subscriber, so a large write costs the apply loop nothing per stream.
type change struct {
	rel    tree.Path
	patch  bool
	value  *tree.Node   // a put's (nil: deleted)
	fields []tree.Field // a patch's
	size   int          // its rendered size, about

	sseOnce sync.Once
	sseData []byte
}

// newPut describes a put of v at rel.
func newPut(rel tree.Path, v *tree.Node) *change {
	return &change{rel: rel, value: v, size: 64 + len(rel)*8 + int(v.Size())}
}

// newPatch describes a patch of fields at rel.
func newPatch(rel tree.Path, fields []tree.Field) *change {
	c := &change{rel: rel, patch: true, fields: fields, size: 64 + len(rel)*8}
	for _, f := range fields {
		c.size += len(f.Path)*8 + int(f.Value.Size())
	}
	return c
}

// sse is the change as a server-sent event.
func (c *change) sse() []byte {
	c.sseOnce.Do(func() {
		if c.patch {
			c.sseData = patchFrame(c.rel, c.fields)
		} else {
			c.sseData = putFrame(c.rel, c.value)
		}
	})
	return c.sseData
}

// eventChange describes e for a subscriber rel above the change.
func eventChange(e *fsm.Event, rel tree.Path) *change {
	if e.Kind == fsm.EventPatch {
		return newPatch(rel, e.Fields)
	}
	return newPut(rel, e.Value)
}

// putFrame is `event: put` with {"path": rel, "data": v}.
func putFrame(rel tree.Path, v *tree.Node) []byte {
	b := append([]byte("event: put\ndata: {\"path\":"), pathJSON(rel)...)
	b = append(b, `,"data":`...)
	b = tree.AppendJSON(b, v, tree.RenderOptions{})
	return append(b, "}\n\n"...)
}

// patchFrame is `event: patch` with the fields as a multi-path object.
func patchFrame(rel tree.Path, fields []tree.Field) []byte {
	b := append([]byte("event: patch\ndata: {\"path\":"), pathJSON(rel)...)
	b = append(b, `,"data":`...)
	b = tree.AppendFields(b, fields, tree.RenderOptions{})
	return append(b, "}\n\n"...)
}

// pathJSON renders a relative path as a JSON string ("/" for none).
func pathJSON(p tree.Path) []byte { return jsonStringBytes(p.String()) }

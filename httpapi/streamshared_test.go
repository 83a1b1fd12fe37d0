package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestFirstPutRenderedOnceForAll: streams that open on one location at
// one index share one rendering of their first put, in pieces when it is
// large, and it is forgotten once the last of them is done.
func TestFirstPutRenderedOnceForAll(t *testing.T) {
	h := newHarness(t, nil, nil)
	var sb strings.Builder
	sb.WriteByte('{')
	for i := range 20_000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"k%05d":"%s"`, i, strings.Repeat("v", 100))
	}
	sb.WriteByte('}')
	v, err := tree.ParseBody([]byte(sb.String()), 32)
	if err != nil {
		t.Fatal(err)
	}
	fp := &h.s.firstPuts
	key := firstPutKey{path: "/big", index: 7}
	a := fp.join(h.s, key, v)
	b := fp.join(h.s, key, v)
	if a != b {
		t.Fatal("two streams at the same location and index render twice")
	}
	var got bytes.Buffer
	pieces := 0
	for i := 0; ; i++ {
		p, err := a.piece(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			break
		}
		got.Write(p)
		pieces++
	}
	if want := putFrame(nil, v); !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("the shared frame (%d bytes) differs from the put (%d bytes)", got.Len(), len(want))
	}
	if pieces < 2 {
		t.Fatalf("a %d-byte put rendered in %d piece", got.Len(), pieces)
	}
	if c := fp.join(h.s, firstPutKey{path: "/big", index: 8}, v); c == a {
		t.Fatal("another index shares the rendering")
	} else {
		fp.leave(firstPutKey{path: "/big", index: 8}, c)
	}
	fp.leave(key, a)
	fp.leave(key, b)
	fp.mu.Lock()
	left := len(fp.m)
	fp.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d renderings kept after every stream left", left)
	}
}

package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
	"github.com/gin-gonic/gin"
)

// bigPutValue is a value whose put frame is rendered in many pieces.
func bigPutValue(t *testing.T, children int) *tree.Node {
	t.Helper()
	var sb strings.Builder
	sb.WriteByte('{')
	for i := range children {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"k%06d":"%s"`, i, strings.Repeat("v", 100))
	}
	sb.WriteByte('}')
	v, err := tree.ParseBody([]byte(sb.String()), 32)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// readAll takes r's pieces of p until the frame is whole.
func readAll(t *testing.T, p *sharedPut, r *putReader) ([]byte, int, error) {
	t.Helper()
	var got bytes.Buffer
	pieces := 0
	for {
		b, err := p.piece(context.Background(), r)
		if err != nil {
			return got.Bytes(), pieces, err
		}
		if b == nil {
			return got.Bytes(), pieces, nil
		}
		got.Write(b)
		pieces++
	}
}

// TestFirstPutRenderedOnceForAll: streams that open on one location at
// one index share one rendering of their first put, in pieces when it is
// large, and it is forgotten once the last of them is done.
func TestFirstPutRenderedOnceForAll(t *testing.T) {
	h := newHarness(t, nil, nil)
	v := bigPutValue(t, 20_000)
	fp := &h.s.firstPuts
	key := firstPutKey{path: "/big", index: 7}
	a, ra := fp.join(h.s, key, v)
	b, rb := fp.join(h.s, key, v)
	if a != b {
		t.Fatal("two streams at the same location and index render twice")
	}
	want := putFrame(nil, v)
	for _, r := range []*putReader{ra, rb} {
		got, pieces, err := readAll(t, a, r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the shared frame (%d bytes) differs from the put (%d bytes)", len(got), len(want))
		}
		if pieces < 2 {
			t.Fatalf("a %d-byte put rendered in %d piece", len(got), pieces)
		}
	}
	other := firstPutKey{path: "/big", index: 8}
	if c, rc := fp.join(h.s, other, v); c == a {
		t.Fatal("another index shares the rendering")
	} else {
		fp.leave(other, c, rc)
	}
	fp.leave(key, a, ra)
	fp.leave(key, b, rb)
	fp.mu.Lock()
	left := len(fp.m)
	fp.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d renderings kept after every stream left", left)
	}
}

// TestSharedPutLetsGoOfSlowReaders: a stream that stops reading holds
// the shared rendering back by at most sharedPutWindow bytes; past that
// it is let go (to render the rest itself), and a stream that opens once
// the first piece is gone gets a rendering of its own.
func TestSharedPutLetsGoOfSlowReaders(t *testing.T) {
	h := newHarness(t, nil, nil)
	v := bigPutValue(t, 100_000) // about 11 MB, over the window
	want := putFrame(nil, v)
	if len(want) < 2*sharedPutWindow {
		t.Fatalf("a %d-byte put does not outgrow the window", len(want))
	}
	fp := &h.s.firstPuts
	key := firstPutKey{path: "/big", index: 1}
	p, fast := fp.join(h.s, key, v)
	_, slow := fp.join(h.s, key, v)
	first, err := p.piece(context.Background(), slow)
	if err != nil || len(first) == 0 {
		t.Fatalf("the slow reader's first piece: %d bytes, %v", len(first), err)
	}
	got, _, err := readAll(t, p, fast)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the fast reader: %d of %d bytes, %v", len(got), len(want), err)
	}
	p.mu.Lock()
	kept := p.kept
	p.mu.Unlock()
	if kept > sharedPutWindow {
		t.Fatalf("%d bytes kept for a reader that stopped; the window is %d", kept, sharedPutWindow)
	}
	if _, err := p.piece(context.Background(), slow); !errors.Is(err, errFellBehind) {
		t.Fatalf("the slow reader's next piece: %v, want %v", err, errFellBehind)
	}
	late, rl := fp.join(h.s, key, v)
	if late == p {
		t.Fatal("a stream joined a rendering that no longer holds its start")
	}
	if got, _, err := readAll(t, late, rl); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the late reader: %d of %d bytes, %v", len(got), len(want), err)
	}
	for _, x := range []struct {
		p *sharedPut
		r *putReader
	}{{p, fast}, {p, slow}, {late, rl}} {
		fp.leave(key, x.p, x.r)
	}
}

// TestRenderPutSkipsWhatWasSent: a stream let go of a shared rendering
// renders the frame again and sends only what it had not sent.
func TestRenderPutSkipsWhatWasSent(t *testing.T) {
	h := newHarness(t, nil, nil)
	v := bigPutValue(t, 20_000)
	want := putFrame(nil, v)
	for _, skip := range []int{0, 1, answerChunk, answerChunk + 7, len(want) - 1, len(want)} {
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		l := &streamLoop{s: h.s, ctx: context.Background(), w: c.Writer}
		l.rc = http.NewResponseController(c.Writer)
		if err := l.renderPut(v, skip); err != nil {
			t.Fatalf("skip %d: %v", skip, err)
		}
		if !bytes.Equal(rec.Body.Bytes(), want[skip:]) {
			t.Fatalf("skip %d: sent %d bytes, want the last %d of the frame", skip, rec.Body.Len(), len(want)-skip)
		}
	}
}
